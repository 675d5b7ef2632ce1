//! `after_failure`: run the firmware through the allocation failure `fail_alloc` asked for and
//! on until its own error handling is over, observing every lifecycle role's call on the way
//! (as a cycle does), then say how it ended.
//!
//! The error handling is over at the first of:
//! - the next call of the cycle's first role (`[lifecycle] cycle_starts`, else the first role
//!   present): the firmware gave up on this cycle and starts the next; the target is left
//!   halted at that entry, so a `t.cycle()` that follows begins there;
//! - the return of a `release` call: the model was given back;
//! - the program's exit (semihosting `SYS_EXIT`): normal between phases (a test build's end);
//!   inside a phase it is reported with the phase.
//!
//! A hang (the firmware parked in a loop, no lifecycle call before `--timeout`, or role calls
//! that go on for `--timeout` without any of these ends: `super::cycle_watch`) and a fault
//! after the failure end the wait too, as [`FailureEnd::Stopped`] ([`Stopped::Hang`],
//! [`Stopped::Fault`]): they
//! are what the firmware did with the failure, for the script to report with the site.
//!
//! A whole cycle that passes without the chosen allocation is an error: the choice selects
//! nothing this firmware does.
//!
//! A failure run is numbered as a cycle (its calls carry the number, `cycles` counts it), so
//! that a script failing allocations in a loop keeps its first and last runs in full and the
//! others folded ([`crate::history`]), as a long run of cycles does.

use std::rc::Rc;

use memlife_core::TargetError;
use memlife_heap::HeapState;

use super::cycle_run::{PhaseCall, PresentRoles};
use super::cycle_watch::CycleWatch;
use super::facade::Debugger;
use super::goal::{Goal, Outcome};
use crate::error::AuditError;
use crate::observers::{Injected, LiveAlloc, Stopped};

/// How the firmware's handling of a failed allocation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureEnd {
    /// The next call of the cycle's first role began (its function).
    NextCycle(String),
    /// A release call returned (its function).
    Release(String),
    /// The firmware stopped: it exited (normal between phases: a test build's end), or after
    /// the failure it hung or faulted.
    Stopped(Stopped),
}

impl FailureEnd {
    /// A short name for scripts and JSON: `next-cycle`, `release`, `exit`, `hang`, `fault`.
    pub fn kind(&self) -> &'static str {
        match self {
            FailureEnd::NextCycle(_) => "next-cycle",
            FailureEnd::Release(_) => "release",
            FailureEnd::Stopped(s) => s.kind(),
        }
    }

    /// One line for messages.
    pub fn describe(&self) -> String {
        match self {
            FailureEnd::NextCycle(f) => format!("the firmware went on to the next cycle ({f})"),
            FailureEnd::Release(f) => format!("{f} returned"),
            FailureEnd::Stopped(s) => s.describe(),
        }
    }
}

/// What `after_failure` saw.
#[derive(Debug, Clone)]
pub struct FailureRun {
    /// The failure made, when it was.
    pub injected: Option<Injected>,
    /// How the error handling ended.
    pub end: FailureEnd,
    /// Every role call completed on the way.
    pub calls: Vec<PhaseCall>,
    /// The heap at the entry of the phase call the allocation failed in.
    pub before: Option<Rc<HeapState>>,
    /// The heap when the handling ended (at an exit: at the last call's return).
    pub after: Option<Rc<HeapState>>,
    /// Blocks the trace saw allocated since the failed call began and not freed when the
    /// handling ended, by address: what that error path lost (also right at an exit, when the
    /// heap can no longer be walked).
    pub leaks: Vec<(u64, LiveAlloc)>,
}

/// A wait in progress (kept by the caller across hooks).
#[derive(Debug)]
pub struct FailureWait {
    roles: PresentRoles,
    /// The role whose calls begin cycles, and its function.
    start_role: String,
    start: String,
    goal: Goal,
    /// The role of the phase open, when one is.
    open: Option<String>,
    /// Failures made before this wait began (the one awaited is the next).
    made_before: usize,
    /// Calls of the start role seen while the failure was still to come.
    starts: u32,
    /// Its number among the cycles: its calls are recorded, and folded in a long run, as a
    /// cycle's.
    index: u64,
    calls: Vec<PhaseCall>,
    end: Option<FailureEnd>,
    after: Option<Rc<HeapState>>,
    /// The role calls seen and how long the wait has run (see `super::cycle_watch`).
    watch: CycleWatch,
}

impl Debugger {
    /// Starts waiting for the end of the error handling (see the module doc). A failure must
    /// be armed (`fail_alloc`) or made since the last wait.
    pub fn failure_begin(&mut self) -> Result<FailureWait, AuditError> {
        if self.lifecycle.in_phase() {
            return Err(AuditError::Config("a phase is already running".into()));
        }
        if let Some(status) = self.lifecycle.cycles.exited() {
            return Err(AuditError::Target(TargetError::Exited(status)));
        }
        let made = self.injection.made_count();
        let awaited = self.fail_pending() || made > self.injection.waited();
        if !awaited {
            return Err(AuditError::Config(
                "after_failure: no allocation failure is armed (call t.fail_alloc(...) first)"
                    .into(),
            ));
        }
        let made_before = if self.fail_pending() {
            made
        } else {
            made.saturating_sub(1)
        };
        let start_role = self.cycle_start_role()?;
        let (roles, start) = self.arm_roles(&start_role)?;
        let goal = self.first_goal(&roles, &start);
        Ok(FailureWait {
            roles,
            start_role,
            start,
            goal,
            open: None,
            made_before,
            starts: 0,
            index: self.lifecycle.cycles.done() + 1,
            calls: Vec::new(),
            end: None,
            after: None,
            watch: CycleWatch::new(self.session.timeout(), self.lifecycle.cycles.most_calls()),
        })
    }

    fn failure_made(&self, wait: &FailureWait) -> bool {
        self.injection.made_count() > wait.made_before
    }

    /// Advances the wait. `Some(Outcome::Hook)` when a script hook fired (call again after
    /// running it), `None` once it ended.
    pub fn failure_step(&mut self, wait: &mut FailureWait) -> Result<Option<Outcome>, AuditError> {
        loop {
            // Watch for a parked firmware from the failure on, also inside the phase it
            // failed in (a halt loop reached from the allocation's caller).
            let made = self.failure_made(wait);
            self.faults.begin_failure_wait(&mut self.session, made);
            let ran = self.run(&mut wait.goal);
            self.faults.end_failure_wait(&mut self.session);
            let end = match ran {
                Ok(Outcome::Hook(h)) => return Ok(Some(Outcome::Hook(h))),
                Ok(Outcome::Reached) => None,
                // An exit ends the handling whenever it comes; a hang or a fault is what the
                // firmware did with the failure only once it was made.
                Err(e) => match Stopped::from_error(&e, self.lifecycle.phases.open_function()) {
                    Some(s @ Stopped::Exit { .. }) => Some(FailureEnd::Stopped(s)),
                    Some(s) if self.failure_made(wait) => Some(FailureEnd::Stopped(s)),
                    _ => return Err(e),
                },
            };
            if let Some(end) = end {
                wait.after = wait.calls.last().map(|c| Rc::clone(&c.after));
                wait.end = Some(end);
                return Ok(None);
            }
            if let Some(role) = wait.open.take() {
                let (record, before, after) = self.phase_finish()?;
                let released = role == "release" && self.failure_made(wait);
                let function = record.function.clone();
                wait.calls.push(PhaseCall {
                    role,
                    record,
                    before,
                    after: Rc::clone(&after),
                    tensors: None,
                });
                if released {
                    wait.after = Some(after);
                    wait.end = Some(FailureEnd::Release(function));
                    return Ok(None);
                }
                wait.goal = wait.roles.goal();
                continue;
            }
            let function = wait.goal.take_hit();
            wait.goal = wait.roles.goal();
            if function == wait.start {
                if self.failure_made(wait) {
                    wait.after = Some(Rc::new(self.session.walk()?));
                    let stops = self.session.stops();
                    self.lifecycle.cycles.ended_at(function.clone(), stops);
                    wait.end = Some(FailureEnd::NextCycle(function));
                    return Ok(None);
                }
                wait.starts += 1;
                if wait.starts > 1 {
                    return Err(AuditError::Config(format!(
                        "after_failure: a whole cycle passed without the allocation fail_alloc chose ({}): this firmware makes no such allocation",
                        self.injection.request_text()
                    )));
                }
            }
            let role = wait.roles.role_of(&function);
            wait.watch.saw(&role, &function);
            if let Err(e) = wait.watch.check(&wait.start_role, &wait.start) {
                // Role calls went on past --timeout without the handling coming to an end.
                if !self.failure_made(wait) {
                    return Err(e);
                }
                wait.after = wait.calls.last().map(|c| Rc::clone(&c.after));
                wait.end = Some(FailureEnd::Stopped(Stopped::Hang(e.to_string())));
                return Ok(None);
            }
            self.phase_entered(&function, Some(role.clone()), Some(wait.index))?;
            wait.open = Some(role);
            wait.goal = Goal::PhaseReturn;
        }
    }

    /// Removes the wait's breakpoints; what it saw when it ended.
    pub fn failure_finish(&mut self, wait: FailureWait) -> Option<FailureRun> {
        self.session.set_park_watch(false);
        self.disarm_roles(&wait.roles);
        // What the failure run lost is no cycle's loss.
        self.models.break_sequence();
        if !wait.calls.is_empty() {
            // Numbered as a cycle: a script that fails allocations in a loop keeps its first
            // and last runs in full, the others folded.
            self.completed(wait.index);
        }
        let end = wait.end?;
        let injected = self.injection.nth(wait.made_before).cloned();
        if injected.is_some() {
            self.injection.set_waited(wait.made_before + 1);
        }
        let before = injected.as_ref().and_then(|i| i.before.clone());
        let leaks = match (&injected, &end) {
            // Still inside the failed handling: nothing can be called lost yet.
            (None, _) | (_, FailureEnd::Stopped(Stopped::Hang(_) | Stopped::Fault(_))) => {
                Vec::new()
            }
            (Some(i), _) => self
                .live()
                .iter()
                .filter(|(_, l)| l.seq >= i.call_seq)
                .map(|(a, l)| (*a, l.clone()))
                .collect(),
        };
        Some(FailureRun {
            injected,
            end,
            calls: wait.calls,
            before,
            after: wait.after,
            leaks,
        })
    }
}
