//! gdbstub's multi-thread traits over the [`Bridge`], for a FreeRTOS firmware (what each thread
//! is: `threads`): the thread list and its extra info, each thread's registers (`g`, `p`),
//! memory with the task-exit return address hidden, and resume and step, which act on the core
//! whichever thread gdb names.

use gdbstub::common::{Signal, Tid};
use gdbstub::target::ext::base::multithread::{
    MultiThreadBase, MultiThreadResume, MultiThreadResumeOps, MultiThreadSchedulerLocking,
    MultiThreadSchedulerLockingOps, MultiThreadSingleStep, MultiThreadSingleStepOps,
};
use gdbstub::target::ext::base::single_register_access::{
    SingleRegisterAccess, SingleRegisterAccessOps,
};
use gdbstub::target::ext::thread_extra_info::{ThreadExtraInfo, ThreadExtraInfoOps};
use gdbstub::target::{TargetError as GdbTargetError, TargetResult};
use memlife_core::cortex_m::CoreRegisters;

use crate::arch::{CortexMRegId, CortexMRegs, Unknown};
use crate::bridge::Bridge;
use crate::error::ServeError;
use crate::event::ServeEvent;
use crate::gdb_target::fatal_or_not;
use crate::threads::task_exit::hide_in_lr;
use crate::threads::{CORE_TID, HANDLER_TID, ThreadRegisters, ThreadView};

/// The errno a refused register write answers with (EACCES).
const REFUSED: u8 = 13;

impl Bridge {
    /// The stop's threads, read on first use.
    fn thread_view(&mut self) -> TargetResult<&ThreadView, Self> {
        let Some(threads) = self.threads.as_mut() else {
            return Err(GdbTargetError::NonFatal);
        };
        if self.ended.is_some() {
            return Err(GdbTargetError::NonFatal);
        }
        threads
            .view(self.target.as_mut(), &self.symbols)
            .map_err(fatal_or_not)
    }

    /// Whether `tid` is the thread that runs (the core's registers are its own); the core is
    /// halted first (the thread that runs is read from it).
    fn runs(&mut self, tid: Tid) -> TargetResult<bool, Self> {
        if self.ended.is_some() {
            return Ok(true);
        }
        self.ensure_halted().map_err(fatal_or_not)?;
        Ok(self.stop_thread() == tid)
    }

    /// The FreeRTOS task-exit return address, when shown as 0.
    fn task_exit(&self) -> Option<u32> {
        self.threads.as_ref().and_then(|t| t.task_exit)
    }

    /// A thread's registers, and those not known.
    fn thread_registers(&mut self, tid: Tid) -> TargetResult<(CoreRegisters, Unknown), Self> {
        let exit = self.task_exit();
        if self.runs(tid)? {
            let mut regs = self.core_registers()?;
            if tid != CORE_TID && tid != HANDLER_TID {
                hide_in_lr(&mut regs, exit);
            }
            return Ok((regs, Unknown::default()));
        }
        let Some(thread) = self.thread_view()?.thread(tid) else {
            return Err(GdbTargetError::NonFatal);
        };
        let (mut regs, unknown) = match &thread.regs {
            ThreadRegisters::Saved(r) => (*r, Unknown::default()),
            ThreadRegisters::Interrupted { regs, xpsr } => {
                let mut r = CoreRegisters::default();
                let mut unknown = 0;
                for (i, v) in regs.iter().enumerate() {
                    match v {
                        Some(v) => r.r[i] = *v,
                        None => unknown |= 1 << i,
                    }
                }
                r.xpsr = *xpsr;
                (r, Unknown(unknown))
            }
            ThreadRegisters::Unknown => (CoreRegisters::default(), Unknown::ALL),
            // The view's running thread is the stop's: answered above.
            ThreadRegisters::Core => return Err(GdbTargetError::NonFatal),
        };
        hide_in_lr(&mut regs, exit);
        Ok((regs, unknown))
    }

    /// Refuses a register write to a thread that is not running, and says so.
    fn refuse_write(&mut self, tid: Tid) -> GdbTargetError<ServeError> {
        let name = match self.thread_view() {
            Ok(view) => view.thread(tid).map(|t| t.name.clone()),
            Err(_) => None,
        };
        let thread = match name {
            Some(name) => format!("task {name} (thread {tid})"),
            None => format!("thread {tid}"),
        };
        self.notify(ServeEvent::RegisterWriteRefused { thread });
        GdbTargetError::Errno(REFUSED)
    }

    /// Memory as gdb reads it, the task-exit return address hidden where tasks keep it.
    fn read_thread_memory(&mut self, start: u32, data: &mut [u8]) -> TargetResult<usize, Self> {
        let n = self.read_memory(start, data)?;
        let Some(exit) = self.task_exit() else {
            return Ok(n);
        };
        self.learn_current_exit_slot();
        if let (Some(threads), Some(read)) = (&self.threads, data.get_mut(..n)) {
            threads.exit_slots.hide(exit, start, read);
        }
        Ok(n)
    }

    /// Makes sure the task that runs has its task-exit word known, from its `pxEndOfStack`
    /// (one small read), when no read of every task has given it yet: gdb unwinds the thread
    /// that stopped before it lists the others.
    fn learn_current_exit_slot(&mut self) {
        let tid = self.stop_thread();
        let Some(threads) = self.threads.as_mut() else {
            return;
        };
        let tcb = tid.get() as u64;
        if tid == CORE_TID || tid == HANDLER_TID || threads.exit_slots.knows(tcb) {
            return;
        }
        let Some(field) = threads.kernel.layout().tcb.end_of_stack else {
            return;
        };
        let Some(at) = tcb.checked_add(field.offset) else {
            return;
        };
        let mut bytes = [0u8; 8];
        let Some(buf) = bytes.get_mut(..field.size.min(8) as usize) else {
            return;
        };
        if self.target.as_memory().read(at, buf).is_ok() {
            threads.exit_slots.add(tcb, u64::from_le_bytes(bytes));
        }
    }
}

impl MultiThreadBase for Bridge {
    fn read_registers(&mut self, regs: &mut CortexMRegs, tid: Tid) -> TargetResult<(), Self> {
        let (r, unknown) = self.thread_registers(tid)?;
        *regs = CortexMRegs(r, unknown);
        Ok(())
    }

    fn write_registers(&mut self, regs: &CortexMRegs, tid: Tid) -> TargetResult<(), Self> {
        if !self.runs(tid)? {
            return Err(self.refuse_write(tid));
        }
        // Compared with what the client was shown, so a hidden lr is not written back as 0.
        let (now, _) = self.thread_registers(tid)?;
        self.write_core_registers(&regs.0, &now)
    }

    fn support_single_register_access(&mut self) -> Option<SingleRegisterAccessOps<'_, Tid, Self>> {
        Some(self)
    }

    fn read_addrs(
        &mut self,
        start_addr: u32,
        data: &mut [u8],
        _tid: Tid,
    ) -> TargetResult<usize, Self> {
        self.read_thread_memory(start_addr, data)
    }

    fn write_addrs(&mut self, start_addr: u32, data: &[u8], _tid: Tid) -> TargetResult<(), Self> {
        self.write_memory(start_addr, data)
    }

    /// The thread that runs first, then the tasks. A view that cannot be read (the firmware
    /// ended, a read the backend refuses) lists the core's thread alone; a failing link ends
    /// the session.
    fn list_active_threads(
        &mut self,
        thread_is_active: &mut dyn FnMut(Tid),
    ) -> Result<(), ServeError> {
        match self.thread_view() {
            Ok(view) => view.threads.iter().for_each(|t| thread_is_active(t.tid)),
            Err(GdbTargetError::Fatal(e)) => return Err(e),
            Err(_) => thread_is_active(CORE_TID),
        }
        Ok(())
    }

    fn support_resume(&mut self) -> Option<MultiThreadResumeOps<'_, Self>> {
        Some(self)
    }

    fn support_thread_extra_info(&mut self) -> Option<ThreadExtraInfoOps<'_, Self>> {
        Some(self)
    }
}

impl SingleRegisterAccess<Tid> for Bridge {
    fn read_register(
        &mut self,
        tid: Tid,
        reg_id: CortexMRegId,
        buf: &mut [u8],
    ) -> TargetResult<usize, Self> {
        let (regs, unknown) = self.thread_registers(tid)?;
        let index = match reg_id {
            CortexMRegId::Core(n) => usize::from(n),
            CortexMRegId::Xpsr => 16,
        };
        if unknown.has(index) {
            // gdbstub answers `xx` for each byte: gdb shows the register `<unavailable>`.
            return Ok(0);
        }
        let value = regs.r.get(index).copied().unwrap_or(regs.xpsr);
        let bytes = value.to_le_bytes();
        let n = buf.len().min(bytes.len());
        buf[..n].copy_from_slice(&bytes[..n]);
        Ok(n)
    }

    fn write_register(
        &mut self,
        tid: Tid,
        reg_id: CortexMRegId,
        val: &[u8],
    ) -> TargetResult<(), Self> {
        if !self.runs(tid)? {
            return Err(self.refuse_write(tid));
        }
        let (now, _) = self.thread_registers(tid)?;
        let mut regs = now;
        let value = val
            .get(..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or(GdbTargetError::NonFatal)?;
        match reg_id {
            CortexMRegId::Core(n) => {
                *regs
                    .r
                    .get_mut(usize::from(n))
                    .ok_or(GdbTargetError::NonFatal)? = value
            }
            CortexMRegId::Xpsr => regs.xpsr = value,
        }
        self.write_core_registers(&regs, &now)
    }
}

impl ThreadExtraInfo for Bridge {
    fn thread_extra_info(&self, tid: Tid, buf: &mut [u8]) -> Result<usize, ServeError> {
        let text = self
            .threads
            .as_ref()
            .and_then(|t| t.view.as_ref())
            .and_then(|v| v.thread(tid))
            .map(|t| t.extra_info())
            .unwrap_or_default();
        let n = buf.len().min(text.len());
        buf[..n].copy_from_slice(&text.as_bytes()[..n]);
        Ok(n)
    }
}

impl MultiThreadResume for Bridge {
    fn resume(&mut self) -> Result<(), ServeError> {
        let step = self
            .threads
            .as_mut()
            .is_some_and(|t| std::mem::take(&mut t.step));
        if step {
            self.step_core()
        } else {
            self.resume_core()
        }
    }

    fn clear_resume_actions(&mut self) -> Result<(), ServeError> {
        if let Some(t) = &mut self.threads {
            t.step = false;
        }
        Ok(())
    }

    fn set_resume_action_continue(
        &mut self,
        _tid: Tid,
        _signal: Option<Signal>,
    ) -> Result<(), ServeError> {
        Ok(())
    }

    fn support_single_step(&mut self) -> Option<MultiThreadSingleStepOps<'_, Self>> {
        Some(self)
    }

    fn support_scheduler_locking(&mut self) -> Option<MultiThreadSchedulerLockingOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadSingleStep for Bridge {
    /// A step of any thread steps the core: a task that is not running cannot be stepped, and
    /// the stop names the thread that ran.
    fn set_resume_action_step(
        &mut self,
        _tid: Tid,
        _signal: Option<Signal>,
    ) -> Result<(), ServeError> {
        if let Some(t) = &mut self.threads {
            t.step = true;
        }
        Ok(())
    }
}

impl MultiThreadSchedulerLocking for Bridge {
    /// Accepted (LLDB steps one thread with no action for the others) and not honoured: the
    /// kernel and the interrupts run as they do.
    fn set_resume_action_scheduler_lock(&mut self) -> Result<(), ServeError> {
        Ok(())
    }
}
