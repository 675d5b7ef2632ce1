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
//! A hang (the firmware parked in a loop, or no lifecycle call before `--timeout`) and a fault
//! after the failure end the wait too, as [`FailureEnd::Hang`] and [`FailureEnd::Fault`]: they
//! are what the firmware did with the failure, for the script to report with the site.
//!
//! A whole cycle that passes without the chosen allocation is an error: the choice selects
//! nothing this firmware does.

use std::rc::Rc;

use memlife_core::TargetError;
use memlife_heap::HeapState;

use super::cycle_run::{PhaseCall, PresentRoles};
use super::facade::Debugger;
use super::goal::{Goal, Outcome};
use crate::error::AuditError;
use crate::observers::{Injected, LiveAlloc};

/// How the firmware's handling of a failed allocation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureEnd {
    /// The next call of the cycle's first role began (its function).
    NextCycle(String),
    /// A release call returned (its function).
    Release(String),
    /// The program exited, with its status, inside this phase when one was open.
    Exit {
        /// Exit status.
        status: i32,
        /// The phase open then (its function).
        during: Option<String>,
    },
    /// The firmware never came back to a lifecycle call: parked in a loop, or nothing before
    /// the timeout (what memlife saw).
    Hang(String),
    /// The firmware faulted (what, where, why).
    Fault(String),
}

impl FailureEnd {
    /// A short name for scripts and JSON: `next-cycle`, `release`, `exit`, `hang`, `fault`.
    pub fn kind(&self) -> &'static str {
        match self {
            FailureEnd::NextCycle(_) => "next-cycle",
            FailureEnd::Release(_) => "release",
            FailureEnd::Exit { .. } => "exit",
            FailureEnd::Hang(_) => "hang",
            FailureEnd::Fault(_) => "fault",
        }
    }

    /// One line for messages.
    pub fn describe(&self) -> String {
        match self {
            FailureEnd::NextCycle(f) => format!("the firmware went on to the next cycle ({f})"),
            FailureEnd::Release(f) => format!("{f} returned"),
            FailureEnd::Exit {
                status,
                during: None,
            } => format!("the firmware exited with status {status}"),
            FailureEnd::Exit {
                status,
                during: Some(f),
            } => format!("the firmware exited with status {status} during {f}"),
            FailureEnd::Hang(what) => format!("the firmware hung: {what}"),
            FailureEnd::Fault(what) => format!("the firmware faulted: {what}"),
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
    start: String,
    goal: Goal,
    /// The role of the phase open, when one is.
    open: Option<String>,
    /// Failures made before this wait began (the one awaited is the next).
    made_before: usize,
    /// Calls of the start role seen while the failure was still to come.
    starts: u32,
    calls: Vec<PhaseCall>,
    end: Option<FailureEnd>,
    after: Option<Rc<HeapState>>,
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
        let made = self.injected().len();
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
            start,
            goal,
            open: None,
            made_before,
            starts: 0,
            calls: Vec::new(),
            end: None,
            after: None,
        })
    }

    fn failure_made(&self, wait: &FailureWait) -> bool {
        self.injected().len() > wait.made_before
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
                Err(AuditError::Target(TargetError::Exited(status))) => {
                    self.lifecycle.cycles.set_exited(status);
                    Some(FailureEnd::Exit {
                        status,
                        during: self.lifecycle.phases.open_function().map(str::to_string),
                    })
                }
                Err(AuditError::Faulted(what)) if self.failure_made(wait) => {
                    Some(FailureEnd::Fault(what))
                }
                Err(e @ (AuditError::NotReached { .. } | AuditError::Parked { .. }))
                    if self.failure_made(wait) =>
                {
                    Some(FailureEnd::Hang(e.to_string()))
                }
                Err(e) => return Err(e),
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
            self.phase_entered(&function, Some(role.clone()), None)?;
            wait.open = Some(role);
            wait.goal = Goal::PhaseReturn;
        }
    }

    /// Removes the wait's breakpoints; what it saw when it ended.
    pub fn failure_finish(&mut self, wait: FailureWait) -> Option<FailureRun> {
        self.session.set_park_watch(false);
        self.disarm_roles(&wait.roles);
        let end = wait.end?;
        let injected = self.injected().get(wait.made_before).cloned();
        if injected.is_some() {
            self.injection.set_waited(wait.made_before + 1);
        }
        let before = injected.as_ref().and_then(|i| i.before.clone());
        let leaks = match (&injected, &end) {
            // Still inside the failed handling: nothing can be called lost yet.
            (None, _) | (_, FailureEnd::Hang(_) | FailureEnd::Fault(_)) => Vec::new(),
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
