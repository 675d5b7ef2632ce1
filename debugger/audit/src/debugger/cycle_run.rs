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
//!
//! A cycle still incomplete at a role call made more than `--timeout` after it began, with more
//! role calls than a cycle makes, is [`AuditError::CycleIncomplete`], naming the role calls
//! seen (`super::cycle_watch`): each wait has its own timeout, and a start role the firmware
//! calls once would otherwise keep the audit going until its deadline.

use std::rc::Rc;

use memlife_core::TargetError;
use memlife_heap::HeapState;

use super::cycle_watch::CycleWatch;
use super::facade::Debugger;
use super::goal::{Goal, Outcome};
use crate::error::AuditError;
use crate::events::Role;
use crate::model::PhaseRecord;

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
    /// The model it ran, where cycles are keyed by model (see `crate::observers::models`).
    pub model: Option<String>,
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
    /// How it ended: the heap then and the exit status when an exit ended it.
    end: Option<(Rc<HeapState>, Option<i32>)>,
    /// The role calls seen and how long it has run (see `super::cycle_watch`).
    watch: CycleWatch,
    /// The role whose first call gives the cycle its model key, when cycles are keyed.
    model_role: Option<String>,
    /// The cycle's model (key and name), once read.
    model: Option<(u64, String)>,
}

impl Debugger {
    /// The roles of the configuration whose function this firmware has, in lifecycle order,
    /// with those functions; a function two roles name belongs to the first.
    pub fn present_roles(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for (role, function) in self.settings.config.roles() {
            if self.session.symbols().function(function).is_some()
                && !out.iter().any(|(_, f)| f == function)
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
            let addr = self.function(&function)?.entry;
            roles.push((role, function, addr));
        }
        let plan: Vec<(u64, Option<String>)> = roles
            .iter()
            .map(|(_, f, a)| (*a, self.settings.config.span_of(f).map(str::to_string)))
            .collect();
        self.check_budget(&plan)?;
        let start = roles
            .iter()
            .find(|(r, _, _)| *r == start_role)
            .map(|(_, f, _)| f.clone())
            .unwrap_or_default();
        for (_, function, addr) in &roles {
            let function = function.clone();
            self.session.add_entry(*addr, Role::Lifecycle { function });
        }
        Ok((PresentRoles(roles), start))
    }

    /// What a cycle (or the wait after a failure) runs to first: the next call of a role; or,
    /// when the target is halted where the last cycle ended, at the entry of the start role's
    /// function `start`, that call, already reached.
    pub(super) fn first_goal(&mut self, roles: &PresentRoles, start: &str) -> Goal {
        if self.take_cycle_start(start) {
            return Goal::Role {
                functions: Vec::new(),
                hit: Some(start.to_string()),
            };
        }
        roles.goal()
    }

    /// Removes the roles' entries [`Debugger::arm_roles`] added.
    pub(super) fn disarm_roles(&mut self, roles: &PresentRoles) {
        for (_, function, addr) in &roles.0 {
            let function = function.clone();
            self.session
                .remove_entry(*addr, &Role::Lifecycle { function });
        }
    }

    /// The role whose calls begin cycles: `[lifecycle] cycle_starts`, else the first present.
    pub fn cycle_start_role(&self) -> Result<String, AuditError> {
        let present = self.present_roles();
        match &self.settings.config.lifecycle.cycle_starts {
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

    /// Starts observing one cycle. Drive it with [`Debugger::cycle_step`], close it with
    /// [`Debugger::cycle_finish`] (which also removes its breakpoints after an error).
    pub fn cycle_begin(&mut self) -> Result<CycleRun, AuditError> {
        if self.lifecycle.in_phase() {
            return Err(AuditError::Config("a phase is already running".into()));
        }
        if let Some(status) = self.lifecycle.cycles.exited() {
            return Err(self.lifecycle.cycles.exited_error(status, None));
        }
        let start_role = self.cycle_start_role()?;
        let (roles, start) = self.arm_roles(&start_role)?;
        let goal = self.first_goal(&roles, &start);
        let model_role = self.model_role(&roles, &start_role);
        Ok(CycleRun {
            roles,
            start_role,
            start,
            goal,
            state: State::WaitStart,
            role_open: String::new(),
            index: self.lifecycle.cycles.done() + 1,
            calls: Vec::new(),
            end: None,
            watch: CycleWatch::new(self.session.timeout(), self.lifecycle.cycles.most_calls()),
            model_role,
            model: None,
        })
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
                self.cycle_call_returned(run)?;
                continue;
            }
            let function = run.goal.take_hit();
            run.goal = run.roles.goal();
            if function == run.start && run.state == State::Between {
                run.end = Some((Rc::new(self.session.walk()?), None));
                let stops = self.session.stops();
                self.lifecycle.cycles.ended_at(function, stops);
                return Ok(None);
            }
            let role = run.roles.role_of(&function);
            run.watch.saw(&role, &function);
            run.watch.check(&run.start_role, &run.start)?;
            if function != run.start && run.state == State::WaitStart {
                continue;
            }
            let regs = self.phase_entered(&function, Some(role.clone()), Some(run.index))?;
            if run.model.is_none() && run.model_role.as_deref() == Some(role.as_str()) {
                run.model = self.model_at(&regs);
            }
            run.role_open = role;
            run.state = State::InPhase;
            run.goal = Goal::PhaseReturn;
        }
    }

    /// The role call open in `run` returned: its record, with the tensor table then.
    fn cycle_call_returned(&mut self, run: &mut CycleRun) -> Result<(), AuditError> {
        let (record, before, after) = self.phase_finish()?;
        let tensors = self
            .read_tensors()
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
        Ok(())
    }

    /// The firmware's tensor table now, when `[tensors]` describes one (see `crate::buffers`).
    pub fn read_tensors(&mut self) -> Result<Option<Vec<crate::buffers::Tensor>>, String> {
        let symbols = self.session.symbols_rc();
        crate::buffers::read_tensors(&self.settings.config, &symbols, self.session.memory())
    }

    /// The program exited while `run` waited: between phases of a begun cycle that completes
    /// it; before its first call or inside a phase it is an error.
    fn cycle_exited(&mut self, run: &mut CycleRun, status: i32) -> Result<(), AuditError> {
        match (run.state, run.calls.last()) {
            (State::Between, Some(last)) => {
                run.end = Some((Rc::clone(&last.after), Some(status)));
                Ok(())
            }
            _ => {
                let during = self.lifecycle.phases.open_function().map(str::to_string);
                Err(self.lifecycle.cycles.exited_error(status, during))
            }
        }
    }

    /// Cycle `index` (an observed cycle, or a failure run: `super::failure_run`) is over. A
    /// long run keeps its first and last ones; the one leaving the tail is folded, so memory
    /// and the report stay bounded however many a script runs.
    pub(super) fn completed(&mut self, index: u64) {
        let (cycles, phases) = (&mut self.lifecycle.cycles, &mut self.lifecycle.phases);
        self.trace
            .fold(|events| cycles.completed(index, events, phases.records_mut()));
    }

    /// Removes the cycle's breakpoints; the cycle when it completed.
    pub fn cycle_finish(&mut self, run: CycleRun) -> Option<Cycle> {
        self.disarm_roles(&run.roles);
        let (after, exit) = run.end?;
        let before = run
            .calls
            .first()
            .map_or_else(|| Rc::clone(&after), |c| Rc::clone(&c.before));
        self.completed(run.index);
        self.lifecycle.cycles.made_calls(run.calls.len() as u64);
        self.model_cycle_done(run.index, run.model.clone(), &run.calls, after.total_free);
        Some(Cycle {
            index: run.index,
            start_role: run.start_role,
            calls: run.calls,
            before,
            after,
            exit,
            model: run.model.map(|(_, name)| name),
        })
    }
}
