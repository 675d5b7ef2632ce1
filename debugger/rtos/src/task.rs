//! What a task read gives: every task ([`Task`]) and the kernel around them
//! ([`TaskSnapshot`]).

use memlife_core::cortex_m::CoreRegisters;
use memlife_dwarf::SourceLocation;

use crate::frame::{FpRegisters, FrameKind};
use crate::{Anomaly, Port};

/// A task's state, as FreeRTOS's `eTaskGetState` would say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TaskState {
    /// `pxCurrentTCB`, with the scheduler running.
    Running,
    /// On a ready list, or readied while the scheduler was suspended (on `xPendingReadyList`).
    Ready,
    /// On a delayed list, or on the suspended list while waiting for an event or a
    /// notification with no timeout.
    Blocked,
    /// On the suspended list (`vTaskSuspend`).
    Suspended,
    /// Deleted, its TCB and stack not yet freed by the idle task (`xTasksWaitingTermination`).
    Deleted,
}

impl TaskState {
    /// The name the JSON and the table use.
    pub fn name(self) -> &'static str {
        match self {
            TaskState::Running => "running",
            TaskState::Ready => "ready",
            TaskState::Blocked => "blocked",
            TaskState::Suspended => "suspended",
            TaskState::Deleted => "deleted",
        }
    }
}

/// How a task's TCB and stack were allocated (`ucStaticallyAllocated`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocation {
    /// Both from the heap (`xTaskCreate`).
    Dynamic,
    /// The stack was given, the TCB came from the heap.
    StaticStack,
    /// Both given (`xTaskCreateStatic`).
    Static,
}

impl Allocation {
    pub(crate) fn from_raw(v: u64) -> Option<Allocation> {
        match v {
            0 => Some(Allocation::Dynamic),
            1 => Some(Allocation::StaticStack),
            2 => Some(Allocation::Static),
            _ => None,
        }
    }

    /// The name the JSON and the table use.
    pub fn name(self) -> &'static str {
        match self {
            Allocation::Dynamic => "dynamic",
            Allocation::StaticStack => "static-stack",
            Allocation::Static => "static",
        }
    }
}

/// Where the top of a task's stack was learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackTop {
    /// `pxEndOfStack` + one stack word.
    EndOfStack,
    /// The end of the heap block that holds the stack (no `pxEndOfStack` in this build).
    HeapBlock,
    /// The end of the static array that holds the stack (`xTaskCreateStatic`'s buffer), from
    /// the ELF's symbol table (no `pxEndOfStack` in this build).
    StaticArray,
}

/// A task's stack: `[low, high)`, growing down from `high`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackBounds {
    /// `pxStack`: the lowest address.
    pub low: u64,
    /// One past the highest usable byte, when known.
    pub high: Option<u64>,
    /// Where `high` came from.
    pub high_from: Option<StackTop>,
}

impl StackBounds {
    /// Bytes, when the top is known.
    pub fn size(&self) -> Option<u64> {
        self.high.and_then(|h| h.checked_sub(self.low))
    }
}

/// The stack never used: the 0xa5 fill counted from `pxStack` upward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HighWater {
    /// Bytes still holding the fill.
    pub bytes: u64,
    /// The same in stack words, as `uxTaskGetStackHighWaterMark` returns it (rounded down).
    pub words: u64,
}

/// Where a task's registers come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterSource {
    /// The core's own: the task is running.
    Core,
    /// The context the port saved on its stack.
    Saved(FrameKind),
}

/// A task's registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskRegisters {
    /// Where they come from.
    pub source: RegisterSource,
    /// r0..r15 and xPSR.
    pub regs: CoreRegisters,
    /// The saved `EXC_RETURN` (ARM_CM4F/CM7 ports).
    pub exc_return: Option<u32>,
    /// s0..s31 and FPSCR of an extended frame.
    pub fp: Option<FpRegisters>,
}

/// A heap block (the allocator's own address and size of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapBlock {
    /// The block's address (its header, where the allocator has one).
    pub addr: u64,
    /// Its size in the allocator's accounting.
    pub size: u64,
}

/// One task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// `pcTaskName`, up to its NUL (bytes that are not UTF-8 replaced).
    pub name: String,
    /// The TCB's address (the task's handle).
    pub tcb: u64,
    /// `uxTCBNumber`: creation order, when the trace facility is built in.
    pub number: Option<u64>,
    /// State.
    pub state: TaskState,
    /// The kernel list its `xStateListItem` is on (`pxReadyTasksLists[2]`,
    /// `xDelayedTaskList1`...), `None` when on none.
    pub list: Option<String>,
    /// Readied while the scheduler was suspended: its event item is on `xPendingReadyList`.
    pub pending_ready: bool,
    /// The tick it wakes at, when on a delayed list.
    pub wake_tick: Option<u64>,
    /// `uxPriority`.
    pub priority: u64,
    /// `uxBasePriority` (the priority before a mutex raised it), with `configUSE_MUTEXES`.
    pub base_priority: Option<u64>,
    /// `ucStaticallyAllocated`, when the build has it.
    pub allocation: Option<Allocation>,
    /// The stack.
    pub stack: StackBounds,
    /// `pxTopOfStack`: where its context was saved when it last stopped running.
    pub top_of_stack: u64,
    /// Its registers: the core's when running, else decoded from its saved context; `None`
    /// when they cannot be known (see the anomalies).
    pub registers: Option<TaskRegisters>,
    /// The stack never used, when the kernel fills new stacks.
    pub high_water: Option<HighWater>,
    /// The heap block of its TCB, when a heap walk was given.
    pub tcb_block: Option<HeapBlock>,
    /// The heap block of its stack, likewise.
    pub stack_block: Option<HeapBlock>,
    /// Where its pc is (innermost function first), when symbols were given.
    pub location: Option<SourceLocation>,
}

/// How memlife knows that the kernel fills new stacks with 0xa5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackFill {
    /// The build says so (see the text).
    Configured(&'static str),
    /// The build does not say, but the lowest word of a task's stack holds the fill.
    Seen,
    /// Neither: no high-water marks.
    Unknown,
}

impl StackFill {
    /// Whether high-water marks are counted.
    pub fn counted(self) -> bool {
        !matches!(self, StackFill::Unknown)
    }
}

/// What runs on the core at the moment of the read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Running {
    /// An exception handler (IPSR != 0): the exception number.
    Isr(u16),
    /// The scheduler has not started: `main` and its callees.
    BeforeScheduler,
    /// A task.
    Task {
        /// Its TCB.
        tcb: u64,
        /// Its name.
        name: String,
    },
    /// The scheduler runs but `pxCurrentTCB` is null or unreadable.
    Unknown,
}

impl Running {
    /// `ISR 15`, `main`, the task's name, or `?`: how an allocation event names who made it.
    pub fn label(&self) -> String {
        match self {
            Running::Isr(n) => format!("ISR {n}"),
            Running::BeforeScheduler => "main".to_string(),
            Running::Task { name, .. } => name.clone(),
            Running::Unknown => "?".to_string(),
        }
    }
}

/// Who runs and the firmware's own clock at one stop ([`crate::FreeRtos::now`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Now {
    /// What runs on the core.
    pub running: Running,
    /// `xTickCount`, when the kernel has it.
    pub tick: Option<u64>,
}

/// Every task at one moment, and the kernel around them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSnapshot {
    /// The port and how it was detected.
    pub port: Port,
    /// `xSchedulerRunning`.
    pub scheduler_running: Option<bool>,
    /// `uxSchedulerSuspended` (non-zero: `vTaskSuspendAll` nesting).
    pub scheduler_suspended: Option<u64>,
    /// `xTickCount`.
    pub tick_count: Option<u64>,
    /// `uxCurrentNumberOfTasks`.
    pub task_count: Option<u64>,
    /// `configMAX_PRIORITIES`.
    pub priorities: u64,
    /// `pxCurrentTCB`.
    pub current_tcb: u64,
    /// The core's exception number when it was halted in handler mode.
    pub handler: Option<u16>,
    /// Whether stacks are filled with 0xa5, and how memlife knows.
    pub stack_fill: StackFill,
    /// Every task found, in creation order (`uxTCBNumber`) when the build numbers them, else
    /// by TCB address.
    pub tasks: Vec<Task>,
    /// What is wrong.
    pub anomalies: Vec<Anomaly>,
}

impl TaskSnapshot {
    /// What the core runs: an ISR in handler mode, `main` before the scheduler starts, else
    /// the current task.
    pub fn running(&self) -> Running {
        if let Some(n) = self.handler {
            return Running::Isr(n);
        }
        match self.scheduler_running {
            Some(false) => Running::BeforeScheduler,
            _ => self
                .tasks
                .iter()
                .find(|t| t.tcb == self.current_tcb)
                .map(|t| Running::Task {
                    tcb: t.tcb,
                    name: t.name.clone(),
                })
                .unwrap_or(Running::Unknown),
        }
    }

    /// The task with this TCB.
    pub fn task(&self, tcb: u64) -> Option<&Task> {
        self.tasks.iter().find(|t| t.tcb == tcb)
    }

    /// Fills in what the ELF tells: each task's `location` from its pc, and the top of a
    /// stack still unknown (no `pxEndOfStack`, not in a heap block: call
    /// [`TaskSnapshot::attribute_heap`] first) from the static array that starts at
    /// `pxStack`.
    pub fn annotate(&mut self, symbols: &memlife_dwarf::Symbols) {
        for t in &mut self.tasks {
            if let Some(r) = &t.registers {
                t.location = symbols.locate(u64::from(r.regs.pc())).into_iter().next();
            }
            if t.stack.high.is_none()
                && let Some(sym) = symbols.elf_symbols().iter().find(|s| {
                    s.address == t.stack.low
                        && s.size > 0
                        && s.kind == memlife_dwarf::SymbolKind::Data
                })
            {
                t.stack.high = t.stack.low.checked_add(sym.size);
                t.stack.high_from = Some(StackTop::StaticArray);
            }
        }
    }
}
