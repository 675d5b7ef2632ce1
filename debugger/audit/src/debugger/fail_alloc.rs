//! Allocation-failure injection: make one chosen allocation return NULL without running the
//! allocator, so a script can watch the firmware's error path (what it frees, what it forgets).
//!
//! At the allocator's traced malloc entry, before its first instruction runs, memlife sets r0
//! (the return value) to 0 and the pc to the caller's return address (lr): to the caller it is
//! `malloc` returning NULL, and the allocator's own state is untouched. An allocation is chosen
//! by its site, the first frame outside the allocator and the configured wrappers (the same
//! site the trace records): the `nth` allocation from that site after `t.fail_alloc` is the one
//! that fails, once. Allocation tracing must be on (its breakpoints are the entry).

use memlife_core::Register;

use super::Debugger;
use super::alloc_trace::site_of;
use super::run::Regs;
use crate::error::AuditError;
use crate::model::Site;

/// The allocation to fail: the `nth` (1-based) from now whose site is `site`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FailRequest {
    /// A function name (`planner_plan`) or `file:line` (`planner.c:110`).
    site: String,
    /// How many matching allocations are still to pass before the one that fails.
    skip: u64,
}

/// An allocation memlife made fail.
#[derive(Debug, Clone, PartialEq)]
pub struct Injected {
    /// Its site.
    pub site: Site,
    /// The size asked for.
    pub request: u64,
    /// The phase running, if any (its function).
    pub phase: Option<String>,
    /// The trace event number the next event will have: the events from here on came after
    /// the failure.
    pub seq: u64,
}

/// Armed requests and what they did.
#[derive(Debug, Default)]
pub(super) struct FailState {
    armed: Option<FailRequest>,
    done: Vec<Injected>,
}

/// Whether `site` is the one `wanted` names: its function, or its `file:line`.
fn matches(site: &Site, wanted: &str) -> bool {
    if site.function.as_deref() == Some(wanted) {
        return true;
    }
    match (&site.file, site.line) {
        (Some(f), Some(l)) => format!("{f}:{l}") == wanted,
        _ => false,
    }
}

impl Debugger {
    /// Makes the `nth` (1-based) allocation from `site` after now return NULL (see the module
    /// doc). Needs allocation tracing (the trace method); replaces a request not yet served.
    pub fn fail_alloc(&mut self, site: &str, nth: u64) -> Result<(), AuditError> {
        if site.trim().is_empty() || nth == 0 {
            return Err(AuditError::Config(format!(
                "fail_alloc needs a site (a function or file:line) and n >= 1, not {site:?}, {nth}"
            )));
        }
        if !self.tracing() {
            // Its breakpoints on the allocator's entry are where the failure is made.
            self.set_tracing(true)?;
        }
        self.fail.armed = Some(FailRequest {
            site: site.trim().to_string(),
            skip: nth - 1,
        });
        Ok(())
    }

    /// The allocations made to fail so far, oldest first.
    pub fn injected(&self) -> &[Injected] {
        &self.fail.done
    }

    /// Whether a request waits for its allocation.
    pub fn fail_pending(&self) -> bool {
        self.fail.armed.is_some()
    }

    /// At the allocator's malloc entry: when this call is the one to fail, returns NULL to its
    /// caller (r0 = 0, pc = lr) and says so; the caller then skips the entry's other work.
    pub(super) fn fail_here(&mut self, regs: &Regs, size_arg: usize) -> Result<bool, AuditError> {
        let Some(wanted) = self.fail.armed.as_ref().map(|r| r.site.clone()) else {
            return Ok(false);
        };
        let backtrace = self.backtrace_with(regs, &[]);
        let site = site_of(&self.symbols, self.trace.skip(), &backtrace);
        if !matches(&site, &wanted) {
            return Ok(false);
        }
        if let Some(r) = self.fail.armed.as_mut()
            && r.skip > 0
        {
            r.skip -= 1;
            return Ok(false);
        }
        self.fail.armed = None;
        let t = self.target.as_mut();
        t.write_register(Register::Argument(0), 0)?;
        t.write_register(Register::ProgramCounter, regs.lr & !1)?;
        let injected = Injected {
            site,
            request: regs.args.get(size_arg).copied().unwrap_or(0),
            phase: self.phases.open_function().map(str::to_string),
            seq: self.trace.seq,
        };
        ::tracing::info!(
            "made the allocation of {} B at {} return NULL",
            injected.request,
            injected.site
        );
        self.fail.done.push(injected);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_is_named_by_function_or_file_and_line() {
        let site = Site {
            function: Some("planner_plan".into()),
            file: Some("planner.c".into()),
            line: Some(110),
            chain: Vec::new(),
        };
        assert!(matches(&site, "planner_plan"));
        assert!(matches(&site, "planner.c:110"));
        assert!(!matches(&site, "planner.c:111"));
        assert!(!matches(&site, "build_graph"));
    }
}
