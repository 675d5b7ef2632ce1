//! The bound on one cycle (or the wait after a failure): the role calls it saw, and how long it
//! has run. Each wait for a breakpoint has its own `--timeout`, so a firmware that keeps calling
//! roles but never comes back to the cycle's first one (a start role it calls once, or not on
//! every cycle) would be observed until the audit's deadline. A cycle still incomplete at a
//! role call made more than `--timeout` after it began is therefore an error that names the
//! roles seen and how often each was called: what to change in `[phases]` or `[lifecycle]`.
//!
//! The call that completes the cycle is never refused: a slow but complete cycle passes.

use std::time::{Duration, Instant};

use crate::error::AuditError;

/// The role calls of one cycle and when it began.
#[derive(Debug, Clone)]
pub(super) struct CycleWatch {
    began: Instant,
    limit: Duration,
    /// (role, its function, calls) in the order first seen.
    seen: Vec<(String, String, u64)>,
}

impl CycleWatch {
    /// A cycle that begins now and may run for `limit`.
    pub(super) fn new(limit: Duration) -> Self {
        CycleWatch {
            began: Instant::now(),
            limit,
            seen: Vec::new(),
        }
    }

    /// A call of `role` (its function `function`) was reached.
    pub(super) fn saw(&mut self, role: &str, function: &str) {
        match self.seen.iter_mut().find(|(r, _, _)| r == role) {
            Some((_, _, n)) => *n = n.saturating_add(1),
            None => self.seen.push((role.into(), function.into(), 1)),
        }
    }

    /// Calls of `role` seen.
    fn calls(&self, role: &str) -> u64 {
        self.seen
            .iter()
            .find(|(r, _, _)| r == role)
            .map_or(0, |(_, _, n)| *n)
    }

    /// The error for a cycle still incomplete past its limit; `Ok` within it. `start` is the
    /// role whose calls begin cycles, `function` its function.
    pub(super) fn check(&self, start: &str, function: &str) -> Result<(), AuditError> {
        if self.began.elapsed() <= self.limit {
            return Ok(());
        }
        Err(AuditError::CycleIncomplete {
            seconds: self.limit.as_secs_f64(),
            start: format!("{start} ({function})"),
            began: self.calls(start) > 0,
            seen: self.describe(),
        })
    }

    /// `load (model_load) 1 time, run (inference_run) 5237 times`.
    fn describe(&self) -> String {
        let parts: Vec<String> = self
            .seen
            .iter()
            .map(|(role, function, n)| {
                let times = if *n == 1 { "time" } else { "times" };
                if role == function {
                    format!("{role} {n} {times}")
                } else {
                    format!("{role} ({function}) {n} {times}")
                }
            })
            .collect();
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_incomplete_cycle_past_its_limit_names_the_roles_and_their_counts() {
        let mut w = CycleWatch::new(Duration::ZERO);
        w.saw("load", "mem_init");
        for _ in 0..3 {
            w.saw("run", "inference_run");
        }
        std::thread::sleep(Duration::from_millis(2));
        let e = w.check("load", "mem_init").unwrap_err().to_string();
        assert!(
            e.contains("no cycle completed within 0.0 s")
                && e.contains("load (mem_init)")
                && e.contains("load (mem_init) 1 time, run (inference_run) 3 times"),
            "{e}"
        );
        let mut never = CycleWatch::new(Duration::ZERO);
        never.saw("run", "inference_run");
        std::thread::sleep(Duration::from_millis(2));
        let e = never.check("load", "mem_init").unwrap_err().to_string();
        assert!(
            e.contains("no cycle began within") && e.contains("run (inference_run) 1 time"),
            "{e}"
        );
        assert!(
            CycleWatch::new(Duration::from_secs(60))
                .check("load", "mem_init")
                .is_ok()
        );
    }
}
