//! The breakpoint budget: what to arm when the target has fewer hardware breakpoints than the
//! audit's plan (six FPB comparators on an STM32F4), and the plan's count checked before a run.
//!
//! A simulator's gdbstub has no limit and gets every breakpoint the plan has, all the time. A
//! board gets them all as long as they fit; when they do not, only what the current state
//! needs is armed:
//!
//! - between phases: the lifecycle roles' entries (and the goals and hooks a script waits for);
//! - inside a phase: the phase's return, the allocation tracing breakpoints and the spans. The
//!   roles' entries are disarmed there, so a role's function called inside another phase is
//!   not counted (it would be only counted, never recorded, anyway); allocations made between
//!   phases are not traced (the running total is taken from a walk at every phase entry).
//!
//! Fault handlers cost nothing on targets that halt on faults by vector catch
//! ([`memlife_core::Control::catch_faults`]): their roles stay known, for the stop's dispatch,
//! but are not armed.

use std::collections::{BTreeMap, BTreeSet};

use super::Debugger;
use super::breakpoints::{BreakRole, ReturnRole, ReturnWatch};
use crate::error::AuditError;

/// What the target allows and where the audit is.
#[derive(Debug, Default, Clone)]
pub(super) struct Budget {
    /// Hardware breakpoints the target has; `None`: no limit.
    pub capacity: Option<usize>,
    /// A phase is open.
    pub in_phase: bool,
    /// The target halts on faults by vector catch: fault handlers need no breakpoint.
    pub faults_caught: bool,
}

/// Whether an entry role is armed in the given state when the plan does not fit.
fn needed(role: &BreakRole, in_phase: bool) -> bool {
    match role {
        BreakRole::Goal { .. } | BreakRole::Hook { .. } | BreakRole::Fault { .. } => true,
        BreakRole::Role { .. } => !in_phase,
        BreakRole::Malloc { .. }
        | BreakRole::MallocRequest { .. }
        | BreakRole::MallocExit
        | BreakRole::Free { .. }
        | BreakRole::Span { .. } => in_phase,
    }
}

impl Budget {
    /// The addresses to arm now, from every entry, awaited return and kept malloc return.
    pub fn select(
        &self,
        entries: &BTreeMap<u64, Vec<BreakRole>>,
        returns: &[ReturnWatch],
        sticky: &BTreeSet<u64>,
    ) -> BTreeSet<u64> {
        let armed = |roles: &Vec<BreakRole>| {
            roles
                .iter()
                .any(|r| !(self.faults_caught && matches!(r, BreakRole::Fault { .. })))
        };
        let mut all: BTreeSet<u64> = entries
            .iter()
            .filter(|(_, roles)| armed(roles))
            .map(|(a, _)| *a)
            .collect();
        all.extend(returns.iter().map(|r| r.addr));
        all.extend(sticky);
        match self.capacity {
            Some(cap) if all.len() > cap => {}
            _ => return all,
        }
        let in_phase = self.in_phase;
        let mut want: BTreeSet<u64> = entries
            .iter()
            .filter(|(_, roles)| {
                roles.iter().any(|r| {
                    needed(r, in_phase)
                        && !(self.faults_caught && matches!(r, BreakRole::Fault { .. }))
                })
            })
            .map(|(a, _)| *a)
            .collect();
        // Returns awaited are always armed (none of the tracing's is pending between phases);
        // the malloc return sites kept for later calls only inside a phase.
        want.extend(
            returns
                .iter()
                .filter(|r| in_phase || !matches!(r.role, ReturnRole::Malloc(_)))
                .map(|r| r.addr),
        );
        if in_phase {
            want.extend(sticky);
        }
        want
    }
}

/// A plan's breakpoint counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PlanCount {
    /// Everything at once.
    pub all: usize,
    /// Between phases when the budget applies.
    pub between: usize,
    /// Inside a phase when the budget applies.
    pub inside: usize,
}

impl Debugger {
    /// Asks the target for its breakpoint count and whether it catches faults by itself.
    pub(super) fn init_budget(&mut self) -> Result<(), AuditError> {
        let capacity = self.target.breakpoints().and_then(|b| b.capacity());
        self.bps.budget.capacity = capacity;
        if std::env::var_os("MEMLIFE_NO_VECTOR_CATCH").is_none()
            && let Some(c) = self.target.control()
        {
            self.bps.budget.faults_caught = c.catch_faults(true)?;
        }
        Ok(())
    }

    /// Turns the vector catch off again (every exit path).
    pub(super) fn release_budget(&mut self) {
        if self.bps.budget.faults_caught
            && let Some(c) = self.target.control()
        {
            let _ = c.catch_faults(false);
            self.bps.budget.faults_caught = false;
        }
    }

    /// How many breakpoints observing cycles of these role entries needs: every entry the
    /// audit has now, the roles' and their spans' entries, one return per span function and
    /// the phase's return, and one kept return site when the allocator's block is read at
    /// its caller's return.
    pub(super) fn plan_count(&self, role_addrs: &[u64], span_fns: &[String]) -> PlanCount {
        let caught = self.bps.budget.faults_caught;
        let mut between: BTreeSet<u64> = role_addrs.iter().copied().collect();
        let mut inside: BTreeSet<u64> = BTreeSet::new();
        let mut caller_returns = 0;
        for (addr, roles) in self.bps.entries() {
            for r in roles {
                if caught && matches!(r, BreakRole::Fault { .. }) {
                    continue;
                }
                if matches!(r, BreakRole::Malloc { .. }) {
                    caller_returns = 1;
                }
                if needed(r, false) {
                    between.insert(*addr);
                }
                if needed(r, true) {
                    inside.insert(*addr);
                }
            }
        }
        let mut span_returns = 0;
        for f in span_fns {
            if let Some((addr, _)) = self.symbols.function(f) {
                inside.insert(addr);
                span_returns += 1;
            }
        }
        let all: BTreeSet<u64> = between.union(&inside).copied().collect();
        let extra = span_returns + 1 + caller_returns;
        PlanCount {
            all: all.len() + extra,
            between: between.len(),
            inside: inside.len() + extra,
        }
    }

    /// Refuses, before the run, a plan that cannot fit the target's breakpoints even armed by
    /// state.
    pub(super) fn check_budget(
        &self,
        role_addrs: &[u64],
        span_fns: &[String],
    ) -> Result<(), AuditError> {
        let Some(cap) = self.bps.budget.capacity else {
            return Ok(());
        };
        let n = self.plan_count(role_addrs, span_fns);
        if n.all <= cap || n.between.max(n.inside) <= cap {
            return Ok(());
        }
        Err(AuditError::Config(format!(
            "this audit needs {} hardware breakpoints at once ({} between phases, {} inside a phase, armed by state), and the target has {cap}: trace fewer functions (fewer [phases] roles or [spans]), or use a peak method without tracing (sample)",
            n.between.max(n.inside),
            n.between,
            n.inside
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> BTreeMap<u64, Vec<BreakRole>> {
        let role = |f: &str| BreakRole::Role { function: f.into() };
        BTreeMap::from([
            (0x10, vec![role("load")]),
            (0x20, vec![role("run")]),
            (0x30, vec![role("release")]),
            (0x40, vec![BreakRole::MallocExit]),
            (0x50, vec![BreakRole::Free { ptr_arg: 0 }]),
            (0x60, vec![BreakRole::Fault { fault: "HardFault" }]),
        ])
    }

    #[test]
    fn everything_when_it_fits_and_by_state_when_not() {
        let entries = plan();
        let phase = vec![ReturnWatch {
            addr: 0x70,
            sp: 0,
            role: ReturnRole::Phase,
        }];
        let none = BTreeSet::new();
        let mut b = Budget::default();
        assert_eq!(b.select(&entries, &phase, &none).len(), 7, "no limit");
        b.capacity = Some(4);
        b.faults_caught = true;
        assert_eq!(
            b.select(&entries, &[], &none),
            BTreeSet::from([0x10, 0x20, 0x30]),
            "between phases: the roles, faults caught by vector catch"
        );
        b.in_phase = true;
        assert_eq!(
            b.select(&entries, &phase, &none),
            BTreeSet::from([0x40, 0x50, 0x70]),
            "inside: tracing and the phase's return"
        );
        b.faults_caught = false;
        b.capacity = Some(7);
        assert_eq!(b.select(&entries, &phase, &none).len(), 7, "it fits");
    }
}
