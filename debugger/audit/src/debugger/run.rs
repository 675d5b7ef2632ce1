//! The run loop and the dispatch of a stop. A run resumes the target until its goal is reached
//! or a script hook fires; each stop is handled in one order: first the awaited returns it
//! completes (a return address can also be some function's entry), then the roles of the entry
//! breakpoint at the pc, each routed to the component that owns it.

use memlife_core::limits::Deadline;

use super::facade::Debugger;
use super::goal::{Goal, Outcome};
use crate::error::AuditError;
use crate::events::{Admission, Awaited, Role};
use crate::observers::Stopped;
use crate::session::Regs;

/// What one stop meant for the run.
#[derive(Debug, Default)]
struct Dispatched {
    reached: bool,
    hook: Option<String>,
}

/// The functions counted at one stop: a function entered is counted once per stop, whatever
/// roles its entry has.
#[derive(Debug, Default)]
struct Counted(Vec<String>);

impl Debugger {
    /// Runs until the goal is reached or a hook fires.
    pub fn run(&mut self, goal: &mut Goal) -> Result<Outcome, AuditError> {
        if let Goal::Entry { remaining: 0, .. } = goal {
            // Met at the stop a hook interrupted.
            return Ok(Outcome::Reached);
        }
        if let Goal::Role { hit: Some(_), .. } = goal {
            return Ok(Outcome::Reached);
        }
        if let Goal::Entry { addr, function, .. } = goal {
            let (addr, function) = (*addr, function.clone());
            self.session.add_entry(addr, Role::Goal { function });
        }
        self.faults.arm(&mut self.session);
        let result = self.run_loop(goal);
        // An exit, a hang or a fault: the firmware stopped running its lifecycle.
        if let Err(e) = &result {
            let during = self.lifecycle.phases.open_function();
            if let Some(stop) = Stopped::from_error(e, during) {
                self.lifecycle.cycles.set_stopped(stop);
            }
        }
        if let Goal::Entry {
            addr,
            function,
            remaining,
        } = goal
            && (*remaining == 0 || result.is_err())
        {
            let role = Role::Goal {
                function: function.clone(),
            };
            self.session.remove_entry(*addr, &role);
        }
        result
    }

    fn run_loop(&mut self, goal: &mut Goal) -> Result<Outcome, AuditError> {
        // One deadline for the whole goal: allocator stops on the way must not keep a goal that
        // is never reached alive forever.
        let deadline = Deadline::after(self.session.timeout());
        loop {
            self.session.budget_mut().in_phase = self.lifecycle.in_phase();
            let phases = &self.lifecycle.phases;
            let what = || goal.describe(phases.open_function());
            let regs = self.session.resume_until_stop(deadline, &what)?;
            let d = self.dispatch(&regs, goal)?;
            self.reporter.stopped(self.session.stops());
            if let Some(h) = d.hook {
                // Report the hook first; when the goal is met too, the next run returns at once
                // (an entry goal's count is at 0, a role goal keeps its hit).
                if d.reached
                    && let Goal::Entry { remaining, .. } = goal
                {
                    *remaining = 0;
                }
                return Ok(Outcome::Hook(h));
            }
            if d.reached {
                return Ok(Outcome::Reached);
            }
        }
    }

    /// Handles one stop: the returns it completes first, then the roles of the entry
    /// breakpoint at the pc.
    fn dispatch(&mut self, regs: &Regs, goal: &mut Goal) -> Result<Dispatched, AuditError> {
        let mut d = Dispatched::default();
        let mut counted = Counted::default();
        for awaited in self.session.returns_hit(regs.pc, regs.sp) {
            match awaited {
                Awaited::Alloc(pending) => self.alloc_returned(regs, pending)?,
                Awaited::Span => self.span_returned()?,
                Awaited::Phase => {
                    self.phase_returned(regs);
                    d.reached |= matches!(goal, Goal::PhaseReturn);
                }
                Awaited::Extension { observer, code } => {
                    let open = self.open_view();
                    self.extensions
                        .on_break(&mut self.session, observer, code, *regs, &open)?;
                }
            }
        }
        for role in self.session.roles_at(regs.pc) {
            match role {
                Role::Trace(role) => {
                    if self.trace_stop(regs, role)? {
                        // Returned NULL to the caller: the allocator does not run.
                        break;
                    }
                }
                Role::Span { function } => self.span_entered(&function, regs)?,
                Role::Lifecycle { function } => {
                    // A role's function called inside an open phase is part of that phase.
                    if self.entry_counts(regs, &function, &mut counted)?
                        && let Goal::Role { hit, .. } = goal
                        && hit.is_none()
                        && !self.lifecycle.in_phase()
                    {
                        *hit = Some(function);
                        d.reached = true;
                    }
                }
                Role::Goal { function } => {
                    if self.entry_counts(regs, &function, &mut counted)?
                        && let Goal::Entry {
                            addr, remaining, ..
                        } = goal
                        && *addr == regs.pc
                        && *remaining > 0
                    {
                        *remaining -= 1;
                        d.reached |= *remaining == 0;
                    }
                }
                Role::Hook { symbol } => d.hook = Some(symbol),
                Role::Fault { fault } => {
                    let during = match self.lifecycle.phases.open_function() {
                        Some(f) => format!("phase {f}"),
                        None => format!("the wait for the {}", goal.describe(None)),
                    };
                    return Err(self.faults.on_fault(&mut self.session, fault, &during));
                }
                Role::Extension { observer, code, .. } => {
                    let open = self.open_view();
                    self.extensions
                        .on_break(&mut self.session, observer, code, *regs, &open)?;
                }
            }
        }
        Ok(d)
    }

    /// Whether the entry of `function` at this stop counts (every added observer admits it),
    /// counting it once per stop when it does.
    fn entry_counts(
        &mut self,
        regs: &Regs,
        function: &str,
        counted: &mut Counted,
    ) -> Result<bool, AuditError> {
        if !self.admits(regs, Admission::Entry { function })? {
            return Ok(false);
        }
        if !counted.0.iter().any(|f| f == function) {
            self.lifecycle.phases.count_call(function);
            counted.0.push(function.to_string());
        }
        Ok(true)
    }

    /// Whether every added observer admits this stop (no observer: yes).
    pub(super) fn admits(&mut self, regs: &Regs, what: Admission<'_>) -> Result<bool, AuditError> {
        if self.extensions.is_empty() {
            return Ok(true);
        }
        let open = self.open_view();
        self.extensions
            .admits(&mut self.session, *regs, what, &open)
    }
}
