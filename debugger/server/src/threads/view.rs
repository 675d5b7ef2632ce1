//! [`ThreadView`]: the threads of one stop, from one read of every task (memlife-rtos) and the
//! core's registers. The thread that runs comes first; the tasks follow in creation order.

use gdbstub::common::Tid;
use memlife_core::cortex_m::exception::Stack;
use memlife_core::cortex_m::{CoreRegisters, ExcReturn};
use memlife_core::{Target, TargetError};
use memlife_dwarf::Symbols;
use memlife_rtos::{FreeRtos, RtosError, Task, TaskSnapshot, TaskState};

use super::ids::{CORE_TID, HANDLER_TID, IPSR_MASK, task_tid};

/// Where a thread's registers come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ThreadRegisters {
    /// The core's own: the thread runs.
    Core,
    /// The context the task's port saved on its stack.
    Saved(CoreRegisters),
    /// The exception frame of the task an exception interrupted (`None`: not known).
    Interrupted {
        /// r0..r15.
        regs: [Option<u32>; 16],
        /// xPSR.
        xpsr: u32,
    },
    /// Not known (see the module doc of `threads`).
    Unknown,
}

/// One thread as gdb sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Thread {
    pub tid: Tid,
    /// The task's name (from the target: shown through `text::printable`).
    pub name: String,
    /// `Running`, `Ready`, `Blocked`, `Suspended`, `Deleted`.
    pub state: &'static str,
    /// Why it is in that state, when the state alone would mislead.
    pub note: Option<String>,
    pub priority: Option<u64>,
    /// The task's TCB (`None`: the core's or the handler's thread).
    pub tcb: Option<u64>,
    pub regs: ThreadRegisters,
    /// Where the task's stack starts being used (its top), when known.
    pub stack_top: Option<u64>,
}

impl Thread {
    /// The text of `qThreadExtraInfo`: `Name: Infer, State: Blocked, Priority: 2`.
    pub fn extra_info(&self) -> String {
        let name = memlife_core::text::printable(&self.name);
        let mut s = format!("Name: {name}, State: {}", self.state);
        if let Some(note) = &self.note {
            s.push_str(&format!(" ({note})"));
        }
        if let Some(p) = self.priority {
            s.push_str(&format!(", Priority: {p}"));
        }
        s
    }
}

/// A stop's threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ThreadView {
    /// The thread that runs first.
    pub threads: Vec<Thread>,
}

impl ThreadView {
    /// The thread that runs.
    pub fn current(&self) -> Tid {
        self.threads.first().map_or(CORE_TID, |t| t.tid)
    }

    /// The thread with this id.
    pub fn thread(&self, tid: Tid) -> Option<&Thread> {
        self.threads.iter().find(|t| t.tid == tid)
    }

    /// Reads every task and names the thread that runs. A kernel whose tasks cannot be read
    /// (a layout error, damage the reader refuses) leaves the core's thread alone; a failing
    /// link is an error.
    pub fn read(
        kernel: &FreeRtos,
        symbols: &Symbols,
        target: &mut dyn Target,
    ) -> Result<ThreadView, TargetError> {
        let core = CoreRegisters::read(target)?;
        let mut snap = match kernel.read_tasks(target.as_memory(), Some(&core)) {
            Ok(snap) => snap,
            Err(RtosError::Target(e)) => return Err(e),
            Err(e) => {
                tracing::warn!("the FreeRTOS tasks cannot be read: {e}");
                return Ok(ThreadView {
                    threads: vec![core_thread("no task read")],
                });
            }
        };
        snap.annotate(symbols);
        let ipsr = (core.xpsr & IPSR_MASK) as u16;
        let interrupted = if ipsr != 0 {
            interrupted_registers(symbols, target, &core)
        } else {
            None
        };
        Ok(Self::from_snapshot(&snap, ipsr, interrupted))
    }

    /// The threads of a task read; `ipsr` is the core's exception number (0: thread mode) and
    /// `interrupted` the registers of the thread-mode code the exception interrupted, when
    /// known, with the stack it ran on (a task's: the process stack; `main`'s: the main one).
    ///
    /// In handler mode the handler is a thread of its own (`Handler mode`, the current one)
    /// when the interrupted code's registers are known, as pyOCD shows it; otherwise the
    /// interrupted task (or `main`) is the current thread with the core's registers, the
    /// handler's frames on top of its own, as OpenOCD shows it: a thread whose registers are
    /// all unknown would stop gdb from resuming while it is selected.
    pub fn from_snapshot(
        snap: &TaskSnapshot,
        ipsr: u16,
        interrupted: Option<(ThreadRegisters, Stack)>,
    ) -> ThreadView {
        let running_task = snap
            .tasks
            .iter()
            .find(|t| t.state == TaskState::Running && task_tid(t.tcb).is_some());
        let handler = (ipsr != 0).then(|| exception_name(ipsr));
        let interrupted_stack = if running_task.is_some() {
            Stack::Process
        } else {
            Stack::Main
        };
        // The interrupted code's registers, when the handler is a thread of its own.
        let split = match (&handler, interrupted) {
            (Some(_), Some((regs, stack))) if stack == interrupted_stack => Some(regs),
            _ => None,
        };
        let in_handler = handler.as_ref().map(|h| match split {
            Some(_) => format!("interrupted by {h}"),
            None => format!("in {h}"),
        });
        let regs_of_running = || split.clone().unwrap_or(ThreadRegisters::Core);
        let mut threads = Vec::new();
        if let (Some(h), Some(_)) = (&handler, &split) {
            threads.push(Thread {
                tid: HANDLER_TID,
                name: "Handler mode".into(),
                state: "Running",
                note: Some(h.clone()),
                priority: None,
                tcb: None,
                regs: ThreadRegisters::Core,
                stack_top: None,
            });
        }
        if running_task.is_none() {
            let no_task = match snap.scheduler_running {
                Some(false) => "scheduler not started",
                _ => "no current task",
            };
            let note = in_handler
                .as_ref()
                .map_or(no_task.to_string(), |h| format!("{h}; {no_task}"));
            let mut main = core_thread(&note);
            main.regs = regs_of_running();
            threads.push(main);
        }
        for t in &snap.tasks {
            let Some(mut thread) = task_thread(t) else {
                continue;
            };
            if t.state == TaskState::Running {
                thread.regs = regs_of_running();
                thread.note = in_handler.clone();
                // The thread that runs comes first (after the handler's).
                threads.insert(threads.len().min(usize::from(split.is_some())), thread);
            } else {
                threads.push(thread);
            }
        }
        ThreadView { threads }
    }
}

/// The core's thread: before the scheduler starts, or when no task runs.
fn core_thread(note: &str) -> Thread {
    Thread {
        tid: CORE_TID,
        name: "main".into(),
        state: "Running",
        note: Some(note.into()),
        priority: None,
        tcb: None,
        regs: ThreadRegisters::Core,
        stack_top: None,
    }
}

/// A task's thread, its registers the saved ones (the caller sets the running task's).
fn task_thread(t: &Task) -> Option<Thread> {
    let tid = task_tid(t.tcb)?;
    let regs = t
        .registers
        .as_ref()
        .map_or(ThreadRegisters::Unknown, |r| ThreadRegisters::Saved(r.regs));
    Some(Thread {
        tid,
        name: t.name.clone(),
        state: state_name(t.state),
        note: t
            .pending_ready
            .then(|| "readied while the scheduler was suspended".into()),
        priority: Some(t.priority),
        tcb: Some(t.tcb),
        regs,
        stack_top: t.stack.high,
    })
}

fn state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::Running => "Running",
        TaskState::Ready => "Ready",
        TaskState::Blocked => "Blocked",
        TaskState::Suspended => "Suspended",
        TaskState::Deleted => "Deleted",
    }
}

/// `exception 15: SysTick`, `IRQ 3`: what the core runs in handler mode.
pub(crate) fn exception_name(ipsr: u16) -> String {
    let name = match ipsr {
        2 => "NMI",
        3 => "HardFault",
        4 => "MemManage",
        5 => "BusFault",
        6 => "UsageFault",
        7 => "SecureFault",
        11 => "SVCall",
        12 => "DebugMonitor",
        14 => "PendSV",
        15 => "SysTick",
        n if n >= 16 => return format!("exception {n}: IRQ {}", n - 16),
        _ => return format!("exception {ipsr}"),
    };
    format!("exception {ipsr}: {name}")
}

/// The registers of the thread-mode code an exception interrupted, from its exception frame
/// (memlife's unwinder crosses it), and the stack it is on. A frame on the process stack (a
/// task's) is reached only when the backend gives PSP (a probe; QEMU's gdbstub does not); one
/// on the main stack (`main` before the scheduler starts) always. `None` when no frame is
/// crossed, or the one crossed interrupted another handler.
fn interrupted_registers(
    symbols: &Symbols,
    target: &mut dyn Target,
    core: &CoreRegisters,
) -> Option<(ThreadRegisters, Stack)> {
    let psp = target.read_all_registers().ok().and_then(|all| {
        all.iter()
            .find(|(name, _)| name == "psp")
            .and_then(|(_, v)| u32::try_from(*v).ok())
    });
    let walk = memlife_dwarf::unwind::unwind_with_psp(symbols, target.as_memory(), core, psp, 64);
    let i = walk.interrupted?;
    let exc = ExcReturn::from_lr(i.exc_return).filter(|e| e.from_thread_mode())?;
    Some((
        ThreadRegisters::Interrupted {
            regs: i.regs,
            xpsr: i.xpsr,
        },
        exc.stack(),
    ))
}
