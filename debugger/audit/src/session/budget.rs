//! The breakpoint budget: what to arm when the target has fewer hardware breakpoints than the
//! audit's plan (six FPB code comparators on an STM32F4). (The plan's count, checked before a
//! run, is the engine's: `crate::debugger::plan`.)
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
//!
//! The budget does not know the roles: each says when it is armed ([`Arm`]) and which group of
//! nested returns it belongs to ([`ReturnRole::group`]).

use std::collections::{BTreeMap, BTreeSet};

use super::roles::{Arm, EntryRole, ReturnRole, ReturnWatch};

/// What the target allows and where the audit is.
#[derive(Debug, Default, Clone)]
pub struct Budget {
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

// The breakpoints an audit used (`run.breakpoints`): a report record, kept in memlife-report.
pub use memlife_report::BreakpointUse;

/// The innermost awaited return of each group: the last one awaited. The others are outer
/// calls' returns, which cannot come before it.
fn innermost<R: ReturnRole>(returns: &[ReturnWatch<R>]) -> BTreeSet<u64> {
    let mut seen = BTreeSet::new();
    let mut out = BTreeSet::new();
    for w in returns.iter().rev() {
        if seen.insert(w.role.group()) {
            out.insert(w.addr);
        }
    }
    out
}

impl Budget {
    /// Whether a role armed this way can have a breakpoint at all on this target, in this
    /// state (lean or not).
    fn armable(&self, arm: Arm) -> bool {
        match arm {
            Arm::Fault => !self.faults_caught,
            Arm::Lean => self.lean,
            _ => true,
        }
    }

    /// The addresses to arm now, from every entry, awaited return and kept sticky return.
    /// Turns lean for good the first time everything does not fit.
    pub fn select<E: EntryRole, R: ReturnRole>(
        &mut self,
        entries: &BTreeMap<u64, Vec<E>>,
        returns: &[ReturnWatch<R>],
        sticky: &BTreeSet<u64>,
    ) -> BTreeSet<u64> {
        if !self.lean {
            // A role armed only when lean is left out here; if everything does not fit, the
            // lean selection below arms it.
            let mut all: BTreeSet<u64> = entries
                .iter()
                .filter(|(_, roles)| roles.iter().any(|r| self.armable(r.arm())))
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
            .filter(|(_, roles)| {
                roles.iter().any(|r| {
                    let arm = r.arm();
                    self.armable(arm) && arm.needed(in_phase)
                })
            })
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
