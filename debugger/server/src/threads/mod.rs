//! FreeRTOS tasks as gdb threads. When the ELF has a FreeRTOS kernel memlife reads
//! ([`memlife_rtos`]), `memlife serve` answers as a multi-threaded stub, as OpenOCD and pyOCD
//! do (docs/rtos.md, "Threads in gdb and LLDB"):
//!
//! - every task is a thread whose id is its TCB's address (stable while the task lives), and
//!   whose extra info reads `Name: Infer, State: Blocked, Priority: 2`;
//! - the thread that runs is listed first, and it is the one `qC` and every stop name: the
//!   task in `pxCurrentTCB`, in thread mode; thread 1, the core (`main`), before the scheduler
//!   starts (the tasks created so far are listed with it). In handler mode, when the registers
//!   of the code the exception interrupted are known (its exception frame: on the process stack
//!   when the backend gives PSP, a probe; on the main stack before the scheduler starts), thread
//!   2, `Handler mode`, is the current one and the interrupted task has the frame's registers,
//!   as pyOCD shows it; otherwise the interrupted task is the current thread with the core's
//!   registers, the handler's frames on top of its own, as OpenOCD shows it (QEMU's gdbstub
//!   gives no PSP, and a thread whose registers are all unknown stops gdb from resuming while
//!   it is selected);
//! - the thread that runs has the core's registers; a task that is not running has the ones
//!   its port saved on its stack (the three Cortex-M frames of `memlife_rtos::frame`). The
//!   target description has the core registers only, so no thread shows FPU registers;
//! - a register write to a task that is not running is refused (its registers are a copy on
//!   its stack, which `set` on memory changes if meant); continue and step act on the core
//!   whichever thread gdb names, and the kernel decides what runs (scheduler locking is
//!   accepted and cannot be honoured);
//! - FreeRTOS's task-exit return address reads as 0 (`task_exit`), so that a task's
//!   backtrace ends at its entry function.
//!
//! A stop's threads are read once, when a client first asks (a thread list, another thread's
//! registers), and forgotten when the target runs or a client writes to it. Naming the stop's
//! thread is cheaper in thread mode: the core's xPSR and `pxCurrentTCB` (memlife-rtos's "who
//! runs now").
//!
//! # Layout
//! - `ids`: the thread ids: the core's, the handler's, a task's (its TCB's address).
//! - `view`: `ThreadView`, a stop's threads read from the kernel.
//! - `task_exit`: the task-exit return address shown as 0.

mod ids;
pub(crate) mod task_exit;
mod view;

use std::cell::Cell;
use std::rc::Rc;

use gdbstub::common::Tid;
use memlife_core::cortex_m::GDB_XPSR;
use memlife_core::{Register, Target, TargetError};
use memlife_dwarf::Symbols;
use memlife_rtos::{FreeRtos, Running};

pub use ids::{CORE_TID, HANDLER_TID};
use ids::{IPSR_MASK, task_tid};
pub(crate) use task_exit::ExitSlots;
pub(crate) use view::{ThreadRegisters, ThreadView};

/// The thread that runs at the stop a client looks at, shared with the client's connection,
/// which answers `qC` with it (gdbstub does not).
#[derive(Debug, Clone, Default)]
pub struct CurrentThread(Rc<Cell<Option<Tid>>>);

impl CurrentThread {
    /// The thread, when known.
    pub fn get(&self) -> Option<Tid> {
        self.0.get()
    }

    pub(crate) fn set(&self, tid: Option<Tid>) {
        self.0.set(tid);
    }
}

/// What the server keeps to serve a FreeRTOS firmware's tasks as threads.
pub(crate) struct Threads {
    pub(crate) kernel: FreeRtos,
    /// FreeRTOS's task-exit return address (`prvTaskExitError`), when the ELF has it.
    pub(crate) task_exit: Option<u32>,
    /// The stop's thread that runs, once known.
    pub(crate) current: CurrentThread,
    /// The stop's threads, once read.
    pub(crate) view: Option<ThreadView>,
    /// Where tasks keep the task-exit return address (kept across stops).
    pub(crate) exit_slots: ExitSlots,
    /// gdb asked the next resume to step.
    pub(crate) step: bool,
}

impl Threads {
    /// Threads for the kernel in `symbols`; `Err` says why there are none (no kernel, or one
    /// memlife cannot read).
    pub(crate) fn detect(symbols: &Symbols) -> Result<Threads, memlife_rtos::RtosError> {
        let kernel = FreeRtos::from_symbols(symbols)?;
        let task_exit = symbols
            .task_exit_traps()
            .first()
            .and_then(|&a| u32::try_from(a).ok());
        Ok(Threads::new(kernel, task_exit))
    }

    /// Threads for a kernel resolved elsewhere (a test's synthetic kernel).
    pub(crate) fn new(kernel: FreeRtos, task_exit: Option<u32>) -> Threads {
        Threads {
            kernel,
            task_exit,
            current: CurrentThread::default(),
            view: None,
            exit_slots: ExitSlots::default(),
            step: false,
        }
    }

    /// Forgets the stop (the target runs, or was changed).
    pub(crate) fn forget_stop(&mut self) {
        self.view = None;
        self.current.set(None);
    }

    /// The thread that runs at this stop. In thread mode it is read cheaply (`pxCurrentTCB` and
    /// `xSchedulerRunning`: the task, else the core's thread); in handler mode from the view
    /// (whether the handler is a thread of its own depends on what the backend gives), once
    /// per stop.
    pub(crate) fn current(
        &mut self,
        target: &mut dyn Target,
        symbols: &Symbols,
    ) -> Result<Tid, TargetError> {
        if let Some(tid) = self.current.get() {
            return Ok(tid);
        }
        let xpsr = target.read_register(Register::Numbered(GDB_XPSR))?;
        let xpsr = u32::try_from(xpsr).unwrap_or(0);
        let tid = if xpsr & IPSR_MASK != 0 {
            self.view(target, symbols)?.current()
        } else {
            self.running_task(target, xpsr)?
        };
        self.current.set(Some(tid));
        Ok(tid)
    }

    /// The task in `pxCurrentTCB` once the scheduler runs, else the core's thread.
    fn running_task(&self, target: &mut dyn Target, xpsr: u32) -> Result<Tid, TargetError> {
        match self.kernel.running(target.as_memory(), xpsr) {
            Ok(Running::Task { tcb, .. }) => Ok(task_tid(tcb).unwrap_or(CORE_TID)),
            Ok(_) => Ok(CORE_TID),
            Err(memlife_rtos::RtosError::Target(e)) => Err(e),
            Err(e) => {
                tracing::debug!("who runs: {e}");
                Ok(CORE_TID)
            }
        }
    }

    /// The stop's threads, read on first use.
    pub(crate) fn view(
        &mut self,
        target: &mut dyn Target,
        symbols: &Symbols,
    ) -> Result<&ThreadView, TargetError> {
        let view = match self.view.take() {
            Some(view) => view,
            None => {
                let view = ThreadView::read(&self.kernel, symbols, target)?;
                self.exit_slots.replace(&view, self.task_exit);
                self.current.set(Some(view.current()));
                view
            }
        };
        Ok(self.view.insert(view))
    }
}
