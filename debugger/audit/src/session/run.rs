//! Run control: arm what is wanted, resume (leaving a breakpoint on the host when it can), wait
//! for the next stop until a deadline (with the park watch when it is on), and read the
//! registers once per stop. What a stop means is the engine's business.

use memlife_core::limits::Deadline;
use memlife_core::{Register, StopReason, TargetError, Wait, interrupt};

use super::live::Session;
use super::park;
use super::roles::{EntryRole, ReturnRole};
use crate::error::AuditError;

/// Registers read at every stop: what a stop tells the engine and its observers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regs {
    /// Program counter.
    pub pc: u64,
    /// Stack pointer.
    pub sp: u64,
    /// Link register (the return address at a function's entry).
    pub lr: u64,
    /// The first four arguments (r0-r3); r0 is also the return value.
    pub args: [u64; 4],
}

impl Regs {
    /// Argument `i`, 0 when there is no such register.
    pub fn arg(&self, i: usize) -> u64 {
        self.args.get(i).copied().unwrap_or(0)
    }

    /// The return address at a function's entry, Thumb bit cleared.
    pub fn return_address(&self) -> u64 {
        self.lr & !1
    }
}

impl<E: EntryRole, R: ReturnRole> Session<E, R> {
    /// Reads the registers of the halted core.
    pub fn read_regs(&mut self) -> Result<Regs, AuditError> {
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

    /// Arms the breakpoints wanted now, resumes, and waits until the target stops at a
    /// breakpoint or `deadline` passes; the registers at the stop. `what` names what the run
    /// waits for, for the errors (a timeout, a park, an exit, an unexpected stop).
    pub fn resume_until_stop(
        &mut self,
        deadline: Deadline,
        what: &dyn Fn() -> String,
    ) -> Result<Regs, AuditError> {
        self.clock.before_first_resume(self.target.as_memory());
        let bps = self
            .target
            .breakpoints()
            .ok_or_else(|| AuditError::NeedsLiveTarget("breakpoints".into()))?;
        self.bps.sync(bps)?;
        let inserted = |addr: u64| self.bps.is_inserted(addr);
        self.resume.before_resume(
            self.target.as_mut(),
            &self.symbols,
            &inserted,
            &mut self.cache,
        )?;
        let control = self
            .target
            .control()
            .ok_or_else(|| AuditError::NeedsLiveTarget("run control".into()))?;
        control.resume()?;
        self.clock.resumed();
        self.cache.clear();
        let stop = self.wait_stop(deadline, what);
        self.clock.stopped();
        match stop? {
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
                return Err(AuditError::UnexpectedStop(format!("{other:?}"), what()));
            }
        }
        let regs = self.read_regs()?;
        self.stops += 1;
        Ok(regs)
    }

    /// Waits for the running core to stop, until `deadline`. With the park watch on, the core
    /// is sampled every [`park::POLL`] and a parked firmware ends the wait early (see `park`).
    fn wait_stop(
        &mut self,
        deadline: Deadline,
        what: &dyn Fn() -> String,
    ) -> Result<StopReason, AuditError> {
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
                        what: what(),
                        seconds: self.timeout.as_secs_f64(),
                        at,
                    });
                }
                Wait::TimedOut => {
                    if let Some(stop) = self.sample_parked(&mut watch, what)? {
                        return Ok(stop);
                    }
                }
            }
        }
    }

    /// One sample of the park watch: halts the core, looks where it is, and resumes it unless
    /// it is parked (an error), it stopped by itself just then, or it halted on one of our
    /// breakpoints before it fired (both a stop to handle).
    fn sample_parked(
        &mut self,
        watch: &mut park::ParkWatch,
        what: &dyn Fn() -> String,
    ) -> Result<Option<StopReason>, AuditError> {
        let control = self
            .target
            .control()
            .ok_or_else(|| AuditError::NeedsLiveTarget("run control".into()))?;
        let halted = control.halt()?;
        // The sample is a halt of the firmware's time too.
        self.clock.stopped();
        match halted {
            StopReason::Halted | StopReason::Signal(2) => {}
            // It stopped by itself just then: a real stop.
            other => return Ok(Some(other)),
        }
        let pc = self.target.read_register(Register::ProgramCounter)?;
        let sp = self.target.read_register(Register::StackPointer)?;
        if self.bps.has_entry(pc & !1) {
            // Halted on one of memlife's breakpoints before it fired: handle it as its stop,
            // or resuming would step over it.
            return Ok(Some(StopReason::Signal(5)));
        }
        if watch.sample(pc, sp) {
            let at = self.parked_at(pc);
            return Err(AuditError::Parked {
                what: what(),
                at,
                polls: park::POLLS,
                interval_ms: u64::try_from(park::POLL.as_millis()).unwrap_or(0),
            });
        }
        self.target
            .control()
            .ok_or_else(|| AuditError::NeedsLiveTarget("run control".into()))?
            .resume()?;
        self.clock.resumed();
        Ok(None)
    }
}
