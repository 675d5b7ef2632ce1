//! The bound on one cycle (or the wait after a failure): the role calls it saw, and how long it
//! has run. Each wait for a breakpoint has its own `--timeout`, so a firmware that keeps calling
//! roles but never comes back to the cycle's first one (a start role it calls once, or not on
//! every cycle) would be observed until the audit's deadline. A cycle still incomplete at a
//! role call made more than `--timeout` after it began, with more role calls than a cycle
//! makes ([`CALLS_ALLOWED`], or four times the most a completed cycle made), is therefore an
//! error that names the roles seen and how often each was called: what to change in
//! `[phases]` or `[lifecycle]`.
//!
//! Both conditions, because time alone cannot tell: a cycle traced over a slow link (or on a
//! loaded machine) may take longer than `--timeout` and still complete, with the few calls a
//! cycle has; a cycle that never completes goes on calling roles, lap after lap. The call that
//! completes a cycle is never refused.

use std::time::{Duration, Instant};

use crate::error::AuditError;

/// Role calls a cycle may make past its time before it is taken for one that never completes,
/// when no completed cycle made more (four times that, when one did).
pub(super) const CALLS_ALLOWED: u64 = 64;

/// The role calls of one cycle and when it began.
#[derive(Debug, Clone)]
pub(super) struct CycleWatch {
    began: Instant,
    limit: Duration,
    /// Role calls it may make past `limit`.
    allowed: u64,
    /// Role calls seen.
    calls: u64,
    /// (role, its function, calls) in the order first seen.
    seen: Vec<(String, String, u64)>,
}

impl CycleWatch {
    /// A cycle that begins now and may run for `limit`, or make more role calls than
    /// [`CALLS_ALLOWED`] and four times `most` (the most a completed cycle made).
    pub(super) fn new(limit: Duration, most: u64) -> Self {
        CycleWatch {
            began: Instant::now(),
            limit,
            allowed: CALLS_ALLOWED.max(most.saturating_mul(4)),
            calls: 0,
            seen: Vec::new(),
        }
    }

    /// A call of `role` (its function `function`) was reached.
    pub(super) fn saw(&mut self, role: &str, function: &str) {
        self.calls = self.calls.saturating_add(1);
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
        if self.calls <= self.allowed || self.began.elapsed() <= self.limit {
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
    fn an_incomplete_cycle_past_its_time_and_calls_names_the_roles_and_their_counts() {
        let mut w = CycleWatch::new(Duration::ZERO, 0);
        w.saw("load", "mem_init");
        for _ in 0..CALLS_ALLOWED {
            w.saw("run", "inference_run");
        }
        std::thread::sleep(Duration::from_millis(2));
        let e = w.check("load", "mem_init").unwrap_err().to_string();
        assert!(
            e.contains("no cycle completed within 0.0 s")
                && e.contains("load (mem_init)")
                && e.contains("load (mem_init) 1 time, run (inference_run) 64 times"),
            "{e}"
        );
        let mut never = CycleWatch::new(Duration::ZERO, 0);
        for _ in 0..=CALLS_ALLOWED {
            never.saw("run", "inference_run");
        }
        std::thread::sleep(Duration::from_millis(2));
        let e = never.check("load", "mem_init").unwrap_err().to_string();
        assert!(
            e.contains("no cycle began within") && e.contains("run (inference_run) 65 times"),
            "{e}"
        );
    }

    #[test]
    fn a_slow_cycle_with_the_calls_a_cycle_makes_is_not_refused() {
        // Past its time, but no more calls than a completed cycle's four times.
        let mut slow = CycleWatch::new(Duration::ZERO, 30);
        for _ in 0..120 {
            slow.saw("run", "inference_run");
        }
        std::thread::sleep(Duration::from_millis(2));
        assert!(slow.check("load", "model_load").is_ok());
        slow.saw("run", "inference_run");
        assert!(slow.check("load", "model_load").is_err());
        // Many calls, within its time.
        let mut busy = CycleWatch::new(Duration::from_secs(60), 0);
        for _ in 0..1000 {
            busy.saw("run", "inference_run");
        }
        assert!(busy.check("load", "model_load").is_ok());
    }
}
