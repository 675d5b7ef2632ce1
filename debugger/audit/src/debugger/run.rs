//! The run loop: resume, wait for a stop, read the registers once, dispatch on the pc, until the
//! goal is reached or a script hook fires.

use memlife_core::limits::Deadline;

use memlife_core::{Register, StopReason, TargetError, Wait, interrupt};

use super::Debugger;
use super::breakpoints::{BreakRole, ReturnRole, ReturnWatch};
use super::park;
use crate::error::AuditError;

/// Registers read at every stop.
#[derive(Debug, Clone, Copy)]
pub(super) struct Regs {
    pub pc: u64,
    pub sp: u64,
    pub lr: u64,
    pub args: [u64; 4],
}

/// What a run ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The goal was reached.
    Reached,
    /// A script hook's breakpoint was hit (the goal is still pending: call `run` again).
    Hook(String),
}

/// What a run waits for.
#[derive(Debug, Clone)]
pub enum Goal {
    /// The `remaining`-th next entry of the function at `addr`.
    Entry {
        /// Function name.
        function: String,
        /// Entry address.
        addr: u64,
        /// Entries still to see.
        remaining: u32,
    },
    /// The return of the open phase.
    PhaseReturn,
    /// The next entry of any lifecycle role's function outside a phase (their breakpoints are
    /// the cycle run's): `hit` is the function entered.
    Role {
        /// The functions, for messages.
        functions: Vec<String>,
        /// The function whose entry was reached.
        hit: Option<String>,
    },
}

/// Progress, for the progress bar.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// Stops handled.
    pub stops: u64,
    /// Trace events.
    pub events: u64,
    /// Phases completed.
    pub phases: u64,
    /// The phase running.
    pub current: Option<String>,
}

/// Called after every stop with the progress so far.
pub type Observer = Box<dyn FnMut(&Progress)>;

/// What one stop meant for the run.
#[derive(Debug, Default)]
struct Dispatched {
    reached: bool,
    hook: Option<String>,
}

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
            self.bps.add_entry(addr, BreakRole::Goal { function });
        }
        self.arm_fault_breakpoints();
        let result = self.run_loop(goal);
        if let Goal::Entry {
            addr,
            function,
            remaining,
        } = goal
            && (*remaining == 0 || result.is_err())
        {
            let role = BreakRole::Goal {
                function: function.clone(),
            };
            self.bps.remove_entry(*addr, &role);
        }
        result
    }

    fn run_loop(&mut self, goal: &mut Goal) -> Result<Outcome, AuditError> {
        // One deadline for the whole goal: allocator stops on the way must not keep a goal that
        // is never reached alive forever.
        let deadline = Deadline::after(self.timeout);
        loop {
            let bps = self
                .target
                .breakpoints()
                .ok_or_else(|| AuditError::NeedsLiveTarget("breakpoints".into()))?;
            self.bps.budget.in_phase = self.phases.open_function().is_some();
            self.bps.sync(bps)?;
            self.resume.before_resume(
                self.target.as_mut(),
                &self.symbols,
                &self.bps,
                &mut self.stop_cache,
            )?;
            let control = self
                .target
                .control()
                .ok_or_else(|| AuditError::NeedsLiveTarget("run control".into()))?;
            control.resume()?;
            self.stop_cache.clear();
            let stop = self.wait_stop(deadline, goal)?;
            match stop {
                StopReason::Breakpoint(_) | StopReason::Signal(5) => {}
                StopReason::Exited(code) => {
                    return Err(AuditError::Target(TargetError::Exited(code)));
                }
                StopReason::Terminated(sig) => {
                    return Err(AuditError::Target(TargetError::Gone(format!(
                        "terminated by signal {sig}"
                    ))));
                }
                other => {
                    return Err(AuditError::UnexpectedStop(
                        format!("{other:?}"),
                        self.goal_name(goal),
                    ));
                }
            }
            let regs = self.read_regs()?;
            self.progress.stops += 1;
            let d = self.dispatch(&regs, goal)?;
            if let Some(obs) = self.observer.as_mut() {
                obs(&self.progress);
            }
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

    /// Waits for the running core to stop, until `deadline`. With the park watch on, the core
    /// is sampled every [`park::POLL`] and a parked firmware ends the wait early (see `park`).
    fn wait_stop(&mut self, deadline: Deadline, goal: &Goal) -> Result<StopReason, AuditError> {
        let mut watch = park::ParkWatch::default();
        loop {
            let left = deadline.left_or_max();
            let slice = if self.park_watch {
                left.min(park::POLL)
            } else {
                left
            };
            let control = self
                .target
                .control()
                .ok_or_else(|| AuditError::NeedsLiveTarget("run control".into()))?;
            match interrupt::wait_for_stop_or_interrupt(control, slice)? {
                Wait::Stopped(stop) => return Ok(stop),
                Wait::Interrupted => {
                    // Halted, so the cleanup that follows (breakpoints out, then resume or
                    // leave as asked) works on a quiet core.
                    let _ = control.halt();
                    return Err(AuditError::Target(TargetError::Interrupted));
                }
                Wait::TimedOut if !self.park_watch || deadline.passed() => {
                    let _ = control.halt();
                    // Where the firmware was instead: a halt loop after an error (the heap a
                    // long leak exhausted), a wait for an event, a lifecycle it left.
                    let at = self
                        .target
                        .read_register(Register::ProgramCounter)
                        .map_or_else(
                            |_| String::new(),
                            |pc| format!(" at {}", self.parked_at(pc)),
                        );
                    return Err(AuditError::NotReached {
                        what: self.goal_name(goal),
                        seconds: self.timeout.as_secs_f64(),
                        at,
                    });
                }
                Wait::TimedOut => {
                    match control.halt()? {
                        StopReason::Halted | StopReason::Signal(2) => {}
                        // It stopped by itself just then: a real stop.
                        other => return Ok(other),
                    }
                    let pc = self.target.read_register(Register::ProgramCounter)?;
                    let sp = self.target.read_register(Register::StackPointer)?;
                    if !self.bps.roles_at(pc & !1).is_empty() {
                        // Halted on one of memlife's breakpoints before it fired: handle it as
                        // its stop, or resuming would step over it.
                        return Ok(StopReason::Signal(5));
                    }
                    if watch.sample(pc, sp) {
                        let at = self.parked_at(pc);
                        return Err(AuditError::Parked {
                            what: self.goal_name(goal),
                            at,
                            polls: park::POLLS,
                            interval_ms: u64::try_from(park::POLL.as_millis()).unwrap_or(0),
                        });
                    }
                    self.target
                        .control()
                        .ok_or_else(|| AuditError::NeedsLiveTarget("run control".into()))?
                        .resume()?;
                }
            }
        }
    }

    pub(super) fn read_regs(&mut self) -> Result<Regs, AuditError> {
        let t = &mut self.target;
        let pc = t.read_register(Register::ProgramCounter)?;
        let sp = t.read_register(Register::StackPointer)?;
        let lr = t.read_register(Register::ReturnAddress)?;
        let mut args = [0u64; 4];
        for (i, a) in (0u8..).zip(args.iter_mut()) {
            *a = t.read_register(Register::Argument(i))?;
        }
        Ok(Regs { pc, sp, lr, args })
    }

    /// Handles one stop: the returns it completes first (a return address can also be some
    /// function's entry), then the roles of the entry breakpoint at the pc.
    fn dispatch(&mut self, regs: &Regs, goal: &mut Goal) -> Result<Dispatched, AuditError> {
        let mut d = Dispatched::default();
        // A function entered is counted once per stop, whatever roles its entry has.
        let mut counted: Vec<String> = Vec::new();
        let mut count = |phases: &mut super::phases::PhaseTracker, function: &str| {
            if !counted.iter().any(|f| f == function) {
                phases.count_call(function);
                counted.push(function.to_string());
            }
        };
        for role in self.bps.returns_hit(regs.pc, regs.sp) {
            match role {
                ReturnRole::Malloc(pending) => self.malloc_returned(regs.args[0], pending)?,
                ReturnRole::Span => self.close_span()?,
                ReturnRole::Phase => {
                    self.phase_returned(regs);
                    d.reached |= matches!(goal, Goal::PhaseReturn);
                }
            }
        }
        for role in self.bps.roles_at(regs.pc) {
            match role {
                BreakRole::Malloc { size_arg } | BreakRole::MallocRequest { size_arg }
                    if self.fail_here(regs, size_arg)? =>
                {
                    // Returned NULL to the caller: the allocator does not run.
                    break;
                }
                BreakRole::Malloc { size_arg } => self.malloc_entered(regs, size_arg),
                // Lean on breakpoints: the block is read at the caller's return, armed only
                // while this call is in flight (see `budget`).
                BreakRole::MallocRequest { size_arg } if self.bps.budget.lean => {
                    self.malloc_entered(regs, size_arg);
                }
                BreakRole::MallocRequest { size_arg } => {
                    let size = regs.args.get(size_arg).copied().unwrap_or(0);
                    self.bps.push_request(regs.sp, size);
                }
                // Not armed when lean; a stop there anyway (another role's address) is not
                // this allocation's: its caller's return reads it.
                BreakRole::MallocExit if self.bps.budget.lean => {}
                BreakRole::MallocExit => {
                    let ptr = regs.args[0];
                    if ptr != 0 {
                        self.malloc_exited(ptr, regs)?;
                    } else {
                        // A failed allocation: its request is spent.
                        self.bps.pop_request(regs.sp);
                    }
                }
                BreakRole::Free { ptr_arg } => {
                    let ptr = regs.args.get(ptr_arg).copied().unwrap_or(0);
                    if ptr != 0 {
                        self.freed(ptr, regs)?;
                    }
                }
                BreakRole::Span { function } => self.open_span(&function, regs)?,
                BreakRole::Role { function } => {
                    count(&mut self.phases, &function);
                    // A role's function called inside an open phase is part of that phase.
                    if let Goal::Role { hit, .. } = goal
                        && hit.is_none()
                        && self.phases.open_function().is_none()
                    {
                        *hit = Some(function);
                        d.reached = true;
                    }
                }
                BreakRole::Goal { function } => {
                    count(&mut self.phases, &function);
                    if let Goal::Entry {
                        addr, remaining, ..
                    } = goal
                        && *addr == regs.pc
                        && *remaining > 0
                    {
                        *remaining -= 1;
                        d.reached |= *remaining == 0;
                    }
                }
                BreakRole::Hook { symbol } => d.hook = Some(symbol),
                BreakRole::Fault { fault } => {
                    let during = match self.phases.open_function() {
                        Some(f) => format!("phase {f}"),
                        None => format!("the wait for the {}", self.goal_name(goal)),
                    };
                    return Err(self.faulted(fault, &during));
                }
            }
        }
        Ok(d)
    }

    /// A span function was entered: open a span in the phase and await its return.
    fn open_span(&mut self, function: &str, regs: &Regs) -> Result<(), AuditError> {
        let call = self.phases.count_call(function);
        let used = self.current_used()?;
        if self.phases.open_function().is_none() {
            return Ok(());
        }
        let (arg, label) = self.span_label(function, &regs.args);
        if self
            .phases
            .open_span(function, call, regs.args, arg, label, used, self.trace.seq)
        {
            self.bps.watch_return(ReturnWatch {
                addr: regs.lr & !1,
                sp: regs.sp,
                role: ReturnRole::Span,
            });
        }
        Ok(())
    }

    /// The innermost span returned.
    fn close_span(&mut self) -> Result<(), AuditError> {
        let used = self.current_used()?;
        let traced = self.method == crate::config::PeakMethod::Trace && self.trace.on;
        let damage = if self.walker.checks_integrity() {
            let state = self.walk()?;
            self.damage(&state)
        } else {
            Vec::new()
        };
        self.phases.close_span(used, self.trace.seq, traced, damage);
        Ok(())
    }

    /// The blocks whose contents `state` found damaged, with the allocation site the trace
    /// recorded for each.
    pub fn damage(&self, state: &memlife_heap::HeapState) -> Vec<crate::model::Damage> {
        state
            .anomalies
            .iter()
            .filter(|a| a.kind.is_integrity())
            .filter_map(|a| {
                let block = a.addr?;
                Some(crate::model::Damage {
                    kind: a.kind.name(),
                    block,
                    alloc_size: state
                        .blocks
                        .iter()
                        .find(|b| b.addr == block)
                        .and_then(|b| b.alloc_size),
                    site: self.live().get(&block).map(|l| l.site.to_string()),
                    message: a.message.clone(),
                })
            })
            .collect()
    }

    fn goal_name(&self, goal: &Goal) -> String {
        match goal {
            Goal::Entry { function, .. } => format!("breakpoint at {function}"),
            Goal::PhaseReturn => format!(
                "return of {}",
                self.phases.open_function().unwrap_or("the phase")
            ),
            Goal::Role { functions, .. } => {
                format!(
                    "next call of a lifecycle function ({})",
                    functions.join(", ")
                )
            }
        }
    }
}
