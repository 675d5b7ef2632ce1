//! Cycles: the lifecycle as the firmware runs it, observed rather than dictated.
//!
//! Every role of `memlife.toml` (`[phases]`: load, build, run, switch, release or any other
//! name) whose function the ELF has gets a breakpoint on its entry. Each call is recorded as a
//! phase, in the order the firmware makes them, with its role; a role may be absent or called
//! many times (four `Invoke()` per cycle). A cycle begins at a call of the start role
//! (`[lifecycle] cycle_starts`, else the first role in lifecycle order) and ends at the next
//! one, where the target is left halted: that call begins the next cycle, or is the next call
//! `t.phase` records. Calls before the first start are not part of any cycle; a role's
//! function called inside another phase is part of that phase (its entry is only counted).
//!
//! The program's exit (semihosting `SYS_EXIT`, how a test build ends) between phases also ends
//! the cycle, complete: the target is gone, so its closing heap is the one at its last call's
//! return. A cycle asked for after that, or an exit before the cycle's first call or inside a
//! phase, is [`AuditError::ExitedAfterCycles`].

use std::rc::Rc;

use memlife_heap::HeapState;

use super::Debugger;
use super::breakpoints::BreakRole;
use super::run::{Goal, Outcome};
use crate::error::AuditError;
use crate::model::PhaseRecord;
use memlife_core::TargetError;

/// One call of a role's function inside a cycle.
#[derive(Debug, Clone)]
pub struct PhaseCall {
    /// The role (`run`).
    pub role: String,
    /// The phase's record.
    pub record: PhaseRecord,
    /// The heap at its entry.
    pub before: Rc<HeapState>,
    /// The heap at its return.
    pub after: Rc<HeapState>,
    /// The firmware's tensor table at its return, when `[tensors]` describes one.
    pub tensors: Option<Rc<Vec<crate::buffers::Tensor>>>,
}

/// One cycle: every role call from one call of the start role to the next.
#[derive(Debug, Clone)]
pub struct Cycle {
    /// 1-based, over the audit.
    pub index: u64,
    /// The role that begins cycles.
    pub start_role: String,
    /// The calls in the order the firmware made them.
    pub calls: Vec<PhaseCall>,
    /// The heap at the entry of the start role's call that began it.
    pub before: Rc<HeapState>,
    /// The heap at the entry of the call that begins the next cycle; when the program exited
    /// after this cycle, at the return of its last call.
    pub after: Rc<HeapState>,
    /// The program's exit status when its exit ended this cycle.
    pub exit: Option<i32>,
}

/// Where the last cycle left the target: halted at the entry of `function`, which no phase
/// recorded yet, as of the `stops`-th stop.
#[derive(Debug, Clone)]
pub(super) struct CycleStart {
    function: String,
    stops: u64,
}

impl CycleStart {
    /// Halted at the entry of `function` at the `stops`-th stop.
    pub(super) fn new(function: String, stops: u64) -> Self {
        CycleStart { function, stops }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for the start role's call; other roles' calls are let pass.
    WaitStart,
    /// Inside the cycle, between phases.
    Between,
    /// A phase is open.
    InPhase,
}

/// The lifecycle roles present in the firmware: (role, function, entry address) each, in
/// lifecycle order. What an observed cycle and a wait after a failure both stop at.
#[derive(Debug, Clone)]
pub(super) struct PresentRoles(pub(super) Vec<(String, String, u64)>);

impl PresentRoles {
    /// Stop at the entry of any of them.
    pub(super) fn goal(&self) -> Goal {
        Goal::Role {
            functions: self.0.iter().map(|(_, f, _)| f.clone()).collect(),
            hit: None,
        }
    }

    /// The role `function` plays (itself when none).
    pub(super) fn role_of(&self, function: &str) -> String {
        self.0
            .iter()
            .find(|(_, f, _)| f == function)
            .map_or_else(|| function.to_string(), |(r, _, _)| r.clone())
    }
}

/// A cycle being observed (kept by the caller across hooks).
#[derive(Debug, Clone)]
pub struct CycleRun {
    /// (role, function, entry address) of every role the firmware has.
    roles: PresentRoles,
    start_role: String,
    start: String,
    goal: Goal,
    state: State,
    role_open: String,
    index: u64,
    calls: Vec<PhaseCall>,
    after: Option<Rc<HeapState>>,
    exit: Option<i32>,
}

impl Debugger {
    /// The roles of the configuration whose function this firmware has, in lifecycle order,
    /// with those functions; a function two roles name belongs to the first.
    pub fn present_roles(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for (role, function) in self.config.roles() {
            if self.symbols.function(function).is_some() && !out.iter().any(|(_, f)| f == function)
            {
                out.push((role.to_string(), function.to_string()));
            }
        }
        out
    }

    /// Resolves the present roles to (role, function, entry address), checks the plan against
    /// the target's breakpoints and adds the roles' entries; returns them with the function of
    /// `start_role` (the one whose calls begin a cycle).
    pub(super) fn arm_roles(
        &mut self,
        start_role: &str,
    ) -> Result<(PresentRoles, String), AuditError> {
        let mut roles = Vec::new();
        for (role, function) in self.present_roles() {
            let (addr, _) = self.function(&function)?;
            roles.push((role, function, addr));
        }
        let plan: Vec<(u64, Option<String>)> = roles
            .iter()
            .map(|(_, f, a)| (*a, self.config.span_of(f).map(str::to_string)))
            .collect();
        self.check_budget(&plan)?;
        let start = roles
            .iter()
            .find(|(r, _, _)| *r == start_role)
            .map(|(_, f, _)| f.clone())
            .unwrap_or_default();
        for (_, function, addr) in &roles {
            self.bps.add_entry(
                *addr,
                BreakRole::Role {
                    function: function.clone(),
                },
            );
        }
        Ok((PresentRoles(roles), start))
    }

    /// The role whose calls begin cycles: `[lifecycle] cycle_starts`, else the first present.
    pub fn cycle_start_role(&self) -> Result<String, AuditError> {
        let present = self.present_roles();
        match &self.config.lifecycle.cycle_starts {
            Some(r) if present.iter().any(|(p, _)| p == r) => Ok(r.clone()),
            Some(r) => Err(AuditError::Config(format!(
                "[lifecycle] cycle_starts = \"{r}\": that role maps to no function of this firmware (add [phases] {r} = \"your_function\" to memlife.toml)"
            ))),
            None => present.first().map(|(r, _)| r.clone()).ok_or_else(|| {
                AuditError::Config(
                    "no lifecycle role maps to a function of this firmware: add [phases] (load, build, run, switch, release...) to memlife.toml".into(),
                )
            }),
        }
    }

    /// Whether the target is halted at the entry of `function` where the last cycle ended,
    /// that call still unrecorded; consumes it.
    pub(super) fn take_cycle_start(&mut self, function: &str) -> bool {
        self.cycle_start
            .take()
            .is_some_and(|s| s.function == function && s.stops == self.progress.stops)
    }

    /// Starts observing one cycle. Drive it with [`Debugger::cycle_step`], close it with
    /// [`Debugger::cycle_finish`] (which also removes its breakpoints after an error).
    pub fn cycle_begin(&mut self) -> Result<CycleRun, AuditError> {
        if self.phases.open_function().is_some() {
            return Err(AuditError::Config("a phase is already running".into()));
        }
        if let Some(status) = self.exited {
            return Err(self.exited_error(status));
        }
        let start_role = self.cycle_start_role()?;
        let (roles, start) = self.arm_roles(&start_role)?;
        let mut run = CycleRun {
            roles,
            start_role,
            start,
            goal: Goal::PhaseReturn,
            state: State::WaitStart,
            role_open: String::new(),
            index: self.cycles_done + 1,
            calls: Vec::new(),
            after: None,
            exit: None,
        };
        run.goal = run.roles.goal();
        if self.take_cycle_start(&run.start.clone()) {
            // Halted where the last cycle ended: this call begins the new one.
            run.goal = Goal::Role {
                functions: Vec::new(),
                hit: Some(run.start.clone()),
            };
        }
        Ok(run)
    }

    /// Advances a cycle. `Some(Outcome::Hook)` when a script hook fired (call again after
    /// running it), `None` once the next cycle's first call is reached.
    pub fn cycle_step(&mut self, run: &mut CycleRun) -> Result<Option<Outcome>, AuditError> {
        loop {
            match self.run(&mut run.goal) {
                Ok(Outcome::Hook(h)) => return Ok(Some(Outcome::Hook(h))),
                Ok(Outcome::Reached) => {}
                Err(AuditError::Target(TargetError::Exited(status))) => {
                    return self.cycle_exited(run, status).map(|()| None);
                }
                Err(e) => return Err(e),
            }
            if run.state == State::InPhase {
                let (record, before, after) = self.phase_finish()?;
                let tensors = crate::buffers::read_tensors(self)
                    .map_err(AuditError::Config)?
                    .map(Rc::new);
                run.calls.push(PhaseCall {
                    role: std::mem::take(&mut run.role_open),
                    record,
                    before,
                    after,
                    tensors,
                });
                run.state = State::Between;
                run.goal = run.roles.goal();
                continue;
            }
            let function = match &mut run.goal {
                Goal::Role { hit, .. } => hit.take().unwrap_or_default(),
                _ => String::new(),
            };
            run.goal = run.roles.goal();
            if function == run.start {
                if run.state == State::Between {
                    run.after = Some(Rc::new(self.walk()?));
                    self.cycle_start = Some(CycleStart {
                        function,
                        stops: self.progress.stops,
                    });
                    return Ok(None);
                }
            } else if run.state == State::WaitStart {
                continue;
            }
            let role = run.roles.role_of(&function);
            self.phase_entered(&function, Some(role.clone()), Some(run.index))?;
            run.role_open = role;
            run.state = State::InPhase;
            run.goal = Goal::PhaseReturn;
        }
    }

    /// The program exited while `run` waited: between phases of a begun cycle that completes
    /// it; before its first call or inside a phase it is an error.
    fn cycle_exited(&mut self, run: &mut CycleRun, status: i32) -> Result<(), AuditError> {
        self.exited = Some(status);
        match (run.state, run.calls.last()) {
            (State::Between, Some(last)) => {
                run.after = Some(Rc::clone(&last.after));
                run.exit = Some(status);
                Ok(())
            }
            _ => Err(self.exited_error(status)),
        }
    }

    fn exited_error(&self, status: i32) -> AuditError {
        AuditError::ExitedAfterCycles {
            cycles: self.cycles_done,
            status,
            during: self.phases.open_function().map(str::to_string),
        }
    }

    /// Removes the cycle's breakpoints; the cycle when it completed.
    pub fn cycle_finish(&mut self, run: CycleRun) -> Option<Cycle> {
        for (_, function, addr) in &run.roles.0 {
            self.bps.remove_entry(
                *addr,
                &BreakRole::Role {
                    function: function.clone(),
                },
            );
        }
        let after = run.after?;
        let before = run
            .calls
            .first()
            .map_or_else(|| Rc::clone(&after), |c| Rc::clone(&c.before));
        self.cycles_done = run.index;
        // A long run keeps its first and last cycles; the one leaving the tail is folded.
        self.history
            .cycle_done(run.index, &mut self.trace.events, self.phases.records_mut());
        Some(Cycle {
            index: run.index,
            start_role: run.start_role,
            calls: run.calls,
            before,
            after,
            exit: run.exit,
        })
    }
}
