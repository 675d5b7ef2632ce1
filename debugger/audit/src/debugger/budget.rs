//! The breakpoint budget: what to arm when the target has fewer hardware breakpoints than the
//! audit's plan (six FPB code comparators on an STM32F4), and the plan's count checked before a
//! run.
//!
//! A simulator's gdbstub has no limit and gets every breakpoint the plan has, all the time
//! (allocator return instructions and the return sites of allocator calls stay armed: fewer
//! packets, and QEMU flushes its translation cache on each). A board gets them all as long as
//! they fit; when they do not, the audit goes *lean* for the rest of the run and arms only what
//! the current state needs:
//!
//! - between phases: the lifecycle roles' entries (and the goals and hooks a script waits for);
//! - inside a phase: the allocator's entries, the phase's span entry, and the awaited returns.
//!   The roles' entries are disarmed there, so a role's function called inside another phase is
//!   not counted (it would be only counted, never recorded, anyway); allocations made between
//!   phases are not traced (the running total is taken from a walk at every phase entry);
//! - an allocation's block is read at its caller's return address, armed only while that call
//!   is in flight, instead of at every return instruction of the allocator;
//! - of the awaited returns, only the innermost of each kind (phase, span, allocation): an
//!   outer one cannot fire before the inner one has returned, and it is armed again then.
//!
//! So a lifecycle audit arms at most the roles between phases, and inside a phase the
//! allocator's two entries, one span entry and three returns: six.
//!
//! Fault handlers cost nothing on targets that halt on faults by vector catch
//! ([`memlife_core::Control::catch_faults`]): their roles stay known, for the stop's dispatch,
//! but are not armed.

use std::collections::{BTreeMap, BTreeSet};

// The breakpoints an audit used (`run.breakpoints`): a report record, kept in memlife-report.
pub use memlife_report::BreakpointUse;

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
    /// The plan did not fit once: armed by state for the rest of the audit (set once, so an
    /// allocation in flight is never read one way at its entry and another at its return).
    pub lean: bool,
    /// The most breakpoints the target had at once.
    pub max_armed: usize,
    /// The largest count checked before observing cycles, as this target arms it.
    pub planned: Option<usize>,
}

/// Whether an entry role is armed in the given state when the audit is lean.
fn needed(role: &BreakRole, in_phase: bool) -> bool {
    match role {
        BreakRole::Goal { .. } | BreakRole::Hook { .. } | BreakRole::Fault { .. } => true,
        BreakRole::Role { .. } => !in_phase,
        BreakRole::Malloc { .. }
        | BreakRole::MallocRequest { .. }
        | BreakRole::Free { .. }
        | BreakRole::Span { .. } => in_phase,
        // The block is read at the caller's return instead.
        BreakRole::MallocExit => false,
    }
}

/// The innermost awaited return of each kind (allocation, span, phase): the last one awaited.
/// The others are outer calls' returns, which cannot come before it.
fn innermost(returns: &[ReturnWatch]) -> BTreeSet<u64> {
    let mut seen = [false; 3];
    let mut out = BTreeSet::new();
    for w in returns.iter().rev() {
        let kind = match w.role {
            ReturnRole::Malloc(_) => 0,
            ReturnRole::Span => 1,
            ReturnRole::Phase => 2,
        };
        if !std::mem::replace(&mut seen[kind], true) {
            out.insert(w.addr);
        }
    }
    out
}

impl Budget {
    /// The addresses to arm now, from every entry, awaited return and kept malloc return.
    /// Turns lean for good the first time everything does not fit.
    pub fn select(
        &mut self,
        entries: &BTreeMap<u64, Vec<BreakRole>>,
        returns: &[ReturnWatch],
        sticky: &BTreeSet<u64>,
    ) -> BTreeSet<u64> {
        let caught = self.faults_caught;
        let armable = |r: &BreakRole| !(caught && matches!(r, BreakRole::Fault { .. }));
        if !self.lean {
            let mut all: BTreeSet<u64> = entries
                .iter()
                .filter(|(_, roles)| roles.iter().any(armable))
                .map(|(a, _)| *a)
                .collect();
            all.extend(returns.iter().map(|r| r.addr));
            all.extend(sticky);
            match self.capacity {
                Some(cap) if all.len() > cap => self.lean = true,
                _ => return all,
            }
        }
        let in_phase = self.in_phase;
        let mut want: BTreeSet<u64> = entries
            .iter()
            .filter(|(_, roles)| roles.iter().any(|r| armable(r) && needed(r, in_phase)))
            .map(|(a, _)| *a)
            .collect();
        want.extend(innermost(returns));
        want
    }

    /// What the report says about the breakpoints used.
    pub fn usage(&self) -> BreakpointUse {
        BreakpointUse {
            max_armed: self.max_armed,
            capacity: self.capacity,
            planned: self.planned,
        }
    }
}

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
    /// Asks the target for its breakpoint count and, with `vector_catch`, whether it catches
    /// faults by itself.
    pub(super) fn init_budget(&mut self, vector_catch: bool) -> Result<(), AuditError> {
        let capacity = self.target.breakpoints().and_then(|b| b.capacity());
        self.bps.budget.capacity = capacity;
        if vector_catch && let Some(c) = self.target.control() {
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

    /// The breakpoints this audit used so far.
    pub fn breakpoint_use(&self) -> BreakpointUse {
        self.bps.budget.usage()
    }

    /// How many breakpoints observing cycles of these roles needs: `roles` are their entry
    /// addresses with the span function each phase records. Counted the way
    /// [`Budget::select`] arms them, inside the phase that needs the most: everything (one
    /// level of spans), or lean between phases (the roles and what the script waits for) and
    /// inside a phase (the allocator's entries, its span entry, the phase's return, the
    /// innermost span return and the return of the allocation in flight).
    pub(super) fn plan_count(&self, roles: &[(u64, Option<String>)]) -> PlanCount {
        let caught = self.bps.budget.faults_caught;
        let mut all: BTreeSet<u64> = roles.iter().map(|(a, _)| *a).collect();
        let mut between = all.clone();
        let mut inside: BTreeSet<u64> = BTreeSet::new();
        let (mut tracing, mut sticky) = (0, 0);
        for (addr, kinds) in self.bps.entries() {
            for r in kinds {
                if caught && matches!(r, BreakRole::Fault { .. }) {
                    continue;
                }
                all.insert(*addr);
                match r {
                    BreakRole::Malloc { .. } => (tracing, sticky) = (1, 1),
                    BreakRole::MallocRequest { .. } => tracing = 1,
                    _ => {}
                }
                if needed(r, false) {
                    between.insert(*addr);
                }
                if needed(r, true) {
                    inside.insert(*addr);
                }
            }
        }
        let span_of = |span: &Option<String>| {
            span.as_deref()
                .and_then(|f| self.symbols.function(f))
                .map(|(a, _)| a)
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
        self.arm_fault_breakpoints();
        let cap = self.bps.budget.capacity;
        let n = self.plan_count(roles);
        let armed = n.armed(cap);
        let b = &mut self.bps.budget;
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
    use crate::debugger::breakpoints::PendingAlloc;

    fn plan() -> BTreeMap<u64, Vec<BreakRole>> {
        let role = |f: &str| BreakRole::Role { function: f.into() };
        BTreeMap::from([
            (0x10, vec![role("load")]),
            (0x20, vec![role("run")]),
            (0x30, vec![role("release")]),
            (0x38, vec![BreakRole::MallocRequest { size_arg: 0 }]),
            (0x40, vec![BreakRole::MallocExit]),
            (0x48, vec![BreakRole::MallocExit]),
            (0x50, vec![BreakRole::Free { ptr_arg: 0 }]),
            (0x60, vec![BreakRole::Fault { fault: "HardFault" }]),
        ])
    }

    fn ret(addr: u64, sp: u64, role: ReturnRole) -> ReturnWatch {
        ReturnWatch { addr, sp, role }
    }

    fn malloc() -> ReturnRole {
        ReturnRole::Malloc(PendingAlloc {
            request: 8,
            backtrace: vec![],
        })
    }

    #[test]
    fn everything_is_armed_while_it_fits() {
        let entries = plan();
        let phase = vec![ret(0x70, 0, ReturnRole::Phase)];
        let sticky = BTreeSet::from([0x80]);
        let mut b = Budget::default();
        assert_eq!(b.select(&entries, &phase, &sticky).len(), 10, "no limit");
        b.capacity = Some(10);
        assert_eq!(b.select(&entries, &phase, &sticky).len(), 10, "it fits");
        assert!(!b.lean);
    }

    #[test]
    fn lean_arms_by_state_without_the_allocators_return_instructions() {
        let entries = plan();
        let mut b = Budget {
            capacity: Some(6),
            faults_caught: true,
            ..Budget::default()
        };
        let none = BTreeSet::new();
        assert_eq!(
            b.select(&entries, &[], &none),
            BTreeSet::from([0x10, 0x20, 0x30]),
            "between phases: the roles, faults caught by vector catch"
        );
        assert!(b.lean, "everything (9) does not fit 6");
        b.in_phase = true;
        let phase = ret(0x70, 0x1000, ReturnRole::Phase);
        assert_eq!(
            b.select(
                &entries,
                std::slice::from_ref(&phase),
                &BTreeSet::from([0x80])
            ),
            BTreeSet::from([0x38, 0x50, 0x70]),
            "inside: the allocator's entries and the phase's return; no return instruction, \
             no kept return site"
        );
        // A malloc in flight: its caller's return only while it is awaited.
        let in_flight = [phase.clone(), ret(0x80, 0xf00, malloc())];
        assert_eq!(
            b.select(&entries, &in_flight, &BTreeSet::from([0x80])),
            BTreeSet::from([0x38, 0x50, 0x70, 0x80])
        );
        // It fits again (tracing off): still lean, the choice is made once.
        let few = BTreeMap::from([(
            0x10,
            vec![BreakRole::Role {
                function: "x".into(),
            }],
        )]);
        b.in_phase = false;
        assert!(b.select(&few, &[], &none).contains(&0x10) && b.lean);
    }

    #[test]
    fn lean_arms_only_the_innermost_return_of_each_kind() {
        let mut b = Budget {
            capacity: Some(1),
            in_phase: true,
            ..Budget::default()
        };
        // A phase, two nested spans (the inner one awaited last), and an allocation in flight
        // with a stale outer one below it.
        let returns = [
            ret(0x100, 0x1000, ReturnRole::Phase),
            ret(0x200, 0xf00, ReturnRole::Span),
            ret(0x300, 0xe00, malloc()),
            ret(0x210, 0xd00, ReturnRole::Span),
            ret(0x310, 0xc00, malloc()),
        ];
        assert_eq!(
            b.select(&BTreeMap::new(), &returns, &BTreeSet::new()),
            BTreeSet::from([0x100, 0x210, 0x310])
        );
        // The inner span returned: the outer one is armed in its place.
        let returns = &returns[..3];
        assert_eq!(
            b.select(&BTreeMap::new(), returns, &BTreeSet::new()),
            BTreeSet::from([0x100, 0x200, 0x300])
        );
    }

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
