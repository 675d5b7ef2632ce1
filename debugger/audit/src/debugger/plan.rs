//! The breakpoint plan of observing cycles: how many breakpoints it needs at once, counted the
//! way the session's budget arms them ([`crate::session::Budget::select`]), checked against the
//! target's before the run so that an audit that cannot fit is refused with its counts instead
//! of failing halfway.

use std::collections::BTreeSet;

use super::facade::Debugger;
use crate::error::AuditError;
use crate::events::{Role, TraceRole};
use crate::session::{Arm, EntryRole};

/// A plan's breakpoint counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PlanCount {
    /// Everything at once (a target with no limit, or one where it fits).
    pub all: usize,
    /// Lean, between phases.
    pub between: usize,
    /// Lean, inside the phase that needs the most.
    pub inside: usize,
}

impl PlanCount {
    /// The most a target with `capacity` has armed at once under this plan.
    pub fn armed(&self, capacity: Option<usize>) -> usize {
        match capacity {
            Some(cap) if self.all > cap => self.between.max(self.inside),
            _ => self.all,
        }
    }
}

impl Debugger {
    /// How many breakpoints observing cycles of these roles needs: `roles` are their entry
    /// addresses with the span function each phase records. Counted the way the budget arms
    /// them, inside the phase that needs the most: everything (one level of spans), or lean
    /// between phases (the roles and what the script waits for) and inside a phase (the
    /// allocator's entries, its span entry, the phase's return, the innermost span return and
    /// the return of the allocation in flight).
    fn plan_count(&self, roles: &[(u64, Option<String>)]) -> PlanCount {
        let caught = self.session.budget().faults_caught;
        let mut all: BTreeSet<u64> = roles.iter().map(|(a, _)| *a).collect();
        let mut between = all.clone();
        let mut inside: BTreeSet<u64> = BTreeSet::new();
        let (mut tracing, mut sticky) = (0, 0);
        // The trace's breakpoints count also while its scope keeps them out (armed in phases).
        let pending: Vec<(u64, Role)> = self
            .trace
            .arming()
            .pending_roles(&self.session)
            .unwrap_or_default()
            .into_iter()
            .map(|(a, r)| (a, Role::Trace(r)))
            .collect();
        let entries = self.session.breakpoints().entries();
        let roles_at = entries
            .iter()
            .flat_map(|(a, kinds)| kinds.iter().map(move |r| (*a, r)))
            .chain(pending.iter().map(|(a, r)| (*a, r)));
        for (addr, r) in roles_at {
            let arm = r.arm();
            if caught && arm == Arm::Fault {
                continue;
            }
            // Armed only when lean: not part of everything at once.
            if arm != Arm::Lean {
                all.insert(addr);
            }
            match r {
                Role::Trace(TraceRole::Malloc { .. }) => (tracing, sticky) = (1, 1),
                Role::Trace(TraceRole::MallocRequest { .. } | TraceRole::MallocLean { .. }) => {
                    tracing = 1;
                }
                _ => {}
            }
            if arm.needed(false) {
                between.insert(addr);
            }
            if arm.needed(true) {
                inside.insert(addr);
            }
        }
        let span_of = |span: &Option<String>| {
            span.as_deref()
                .and_then(|f| self.session.symbols().function(f))
                .map(|f| f.entry)
        };
        // One phase at a time, each with its own span entry and one span return awaited; and
        // the phase's return.
        let phase_max = |common: &BTreeSet<u64>| {
            roles
                .iter()
                .map(|(_, s)| match span_of(s) {
                    Some(a) => common.len() + usize::from(!common.contains(&a)) + 1,
                    None => common.len(),
                })
                .max()
                .unwrap_or(common.len())
                + 1
        };
        // Everything armed also keeps the return sites of an allocator without return
        // instructions (one counted); lean arms the return of the allocation in flight.
        let all = phase_max(&all) + sticky;
        let inside = phase_max(&inside) + tracing;
        PlanCount {
            all,
            between: between.len(),
            inside,
        }
    }

    /// Refuses, before the run, a plan that cannot fit the target's breakpoints even armed by
    /// state; records the estimate, and goes lean at once when everything does not fit.
    pub(super) fn check_budget(
        &mut self,
        roles: &[(u64, Option<String>)],
    ) -> Result<(), AuditError> {
        // The fault handlers' entries are part of the plan (a run arms them when it starts).
        self.faults.arm(&mut self.session);
        let cap = self.session.budget().capacity;
        let n = self.plan_count(roles);
        let armed = n.armed(cap);
        let b = self.session.budget_mut();
        b.planned = Some(b.planned.map_or(armed, |p| p.max(armed)));
        let Some(cap) = cap else {
            return Ok(());
        };
        if n.all > cap {
            b.lean = true;
        }
        if armed <= cap {
            return Ok(());
        }
        Err(AuditError::Config(format!(
            "this audit needs {armed} hardware breakpoints at once ({} between phases, {} inside a phase, armed by state), and the target has {cap}: trace fewer functions (fewer [phases] roles or [spans]), or use a peak method without tracing (sample)",
            n.between, n.inside
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_arms_everything_or_the_larger_lean_state() {
        let n = PlanCount {
            all: 12,
            between: 5,
            inside: 6,
        };
        assert_eq!(n.armed(None), 12);
        assert_eq!(n.armed(Some(16)), 12);
        assert_eq!(n.armed(Some(6)), 6);
        assert_eq!(
            n.armed(Some(4)),
            6,
            "refused by the caller, with this count"
        );
    }
}
