//! One read of every task: the kernel's globals (one bulk read), each task list (one small
//! read per item), every TCB (one pipelined request), every stack (another), then the parse
//! on the host.
//!
//! A task's state follows FreeRTOS's `eTaskGetState` from the lists its two list items are
//! on (`pxContainer`), not merely from the list the walk found it on; the saved context and
//! the high-water mark come from its stack bytes. Everything read is bounded: lists by
//! [`crate::MAX_LIST_ITEMS`], tasks by [`MAX_TASKS`], a stack read by [`MAX_STACK_BYTES`].

use std::collections::HashMap;

use memlife_core::Memory;
use memlife_core::cortex_m::CoreRegisters;
use memlife_heap::image::MemImage;

use crate::frame::{self, MAX_FRAME_LEN, XPSR_THUMB};
use crate::layout::{Global, KernelLayout};
use crate::list::{self, Entry};
use crate::mode::IPSR_MASK;
use crate::read::{read_each, read_or_none};
use crate::task::{
    Allocation, HighWater, RegisterSource, StackBounds, StackFill, StackTop, Task, TaskRegisters,
    TaskSnapshot, TaskState,
};
use crate::{Anomaly, AnomalyKind, FreeRtos, RtosError};

/// The most tasks one read reports, whatever the lists say.
pub const MAX_TASKS: usize = 1024;
/// The most bytes read of one stack; a larger stack is an anomaly (damaged bounds).
pub const MAX_STACK_BYTES: u64 = 1 << 20;
/// The most stack bytes one read of every task fetches: damaged bounds cannot make it read
/// the whole address space one megabyte at a time.
pub const MAX_TOTAL_STACK_BYTES: u64 = 8 << 20;
/// `tskSTACK_FILL_BYTE`.
pub const STACK_FILL: u8 = 0xa5;

/// Which kernel list a walk is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListKind {
    Ready(u64),
    Delayed(u8),
    PendingReady,
    Termination,
    Suspended,
}

/// The kernel's globals as read.
struct Globals {
    image: MemImage<'static>,
    current_tcb: u64,
    scheduler_running: Option<bool>,
    scheduler_suspended: Option<u64>,
    tick_count: Option<u64>,
    task_count: Option<u64>,
}

impl Globals {
    fn read(mem: &mut dyn Memory, layout: &KernelLayout) -> Result<Globals, RtosError> {
        let image = MemImage::read(mem, &layout.global_ranges())?;
        let value = |g: Option<Global>| g.and_then(|g| image.uint(g.addr, g.size));
        Ok(Globals {
            current_tcb: value(Some(layout.current_tcb)).unwrap_or(0),
            scheduler_running: value(layout.scheduler_running).map(|v| v != 0),
            scheduler_suspended: value(layout.scheduler_suspended),
            tick_count: value(layout.tick_count),
            task_count: value(layout.task_count),
            image,
        })
    }
}

/// The kernel's task lists with their names and addresses.
fn lists(layout: &KernelLayout) -> Vec<(ListKind, u64, String)> {
    let mut out: Vec<(ListKind, u64, String)> = (0..layout.priorities)
        .map(|p| {
            (
                ListKind::Ready(p),
                layout.ready_list(p),
                format!("pxReadyTasksLists[{p}]"),
            )
        })
        .collect();
    out.push((
        ListKind::Delayed(1),
        layout.delayed[0].addr,
        "xDelayedTaskList1".into(),
    ));
    out.push((
        ListKind::Delayed(2),
        layout.delayed[1].addr,
        "xDelayedTaskList2".into(),
    ));
    out.push((
        ListKind::PendingReady,
        layout.pending_ready.addr,
        "xPendingReadyList".into(),
    ));
    if let Some(g) = layout.termination {
        out.push((
            ListKind::Termination,
            g.addr,
            "xTasksWaitingTermination".into(),
        ));
    }
    if let Some(g) = layout.suspended {
        out.push((ListKind::Suspended, g.addr, "xSuspendedTaskList".into()));
    }
    out
}

/// Walks every list and gathers the TCBs on them, in the order found, each once.
fn collect_tcbs(
    mem: &mut dyn Memory,
    layout: &KernelLayout,
    globals: &Globals,
    anomalies: &mut Vec<Anomaly>,
) -> Result<Vec<u64>, RtosError> {
    let mut order = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (kind, addr, name) in lists(layout) {
        let Some(header) = globals.image.bytes(addr, layout.list.size) else {
            continue;
        };
        let entries = list::walk(mem, &layout.list, addr, &header, &name, anomalies)?;
        for Entry { item, owner, .. } in entries {
            // The pending-ready list links event items, every other list state items.
            let member = if kind == ListKind::PendingReady {
                layout.tcb.event_item
            } else {
                layout.tcb.state_item
            };
            if owner == 0 || !owner.is_multiple_of(4) || owner.checked_add(member) != Some(item) {
                anomalies.push(Anomaly::new(
                    AnomalyKind::BadPointer,
                    Some(item),
                    format!("{name}: item {item:#010x} has owner {owner:#010x}, not its TCB"),
                ));
                continue;
            }
            if order.len() >= MAX_TASKS {
                anomalies.push(Anomaly::new(
                    AnomalyKind::TooManyItems,
                    Some(addr),
                    format!("more than {MAX_TASKS} tasks on the lists; the rest are left out"),
                ));
                return Ok(order);
            }
            if seen.insert(owner) {
                order.push(owner);
            }
        }
    }
    // The running task is on no list for a moment inside the kernel (between leaving the
    // ready list and joining a delayed one).
    let current = globals.current_tcb;
    if current != 0 && current.is_multiple_of(4) && seen.insert(current) {
        order.push(current);
    }
    Ok(order)
}

/// A TCB as parsed, before its stack is read.
struct Parsed {
    task: Task,
    stack_read: Option<(u64, u64)>,
}

/// The state of the task whose TCB is `tcb`, from the lists its items are on, as
/// `eTaskGetState` decides it; and the name of the list its state item is on.
fn state_of(
    kernel: &FreeRtos,
    globals: &Globals,
    names: &HashMap<u64, String>,
    tcb: u64,
    bytes: &[u8],
) -> (TaskState, Option<String>, bool) {
    let l = &kernel.layout;
    let container = |item_offset: u64| {
        l.list
            .item
            .container
            .and_then(|f| f.within(item_offset).read(bytes))
    };
    let state_list = container(l.tcb.state_item).unwrap_or(0);
    let event_list = container(l.tcb.event_item).unwrap_or(0);
    let list_name = names.get(&state_list).cloned();
    let pending = event_list == l.pending_ready.addr;
    let running = globals.scheduler_running != Some(false) && tcb == globals.current_tcb;
    let state = if running {
        TaskState::Running
    } else if pending {
        TaskState::Ready
    } else if l.delayed.iter().any(|d| d.addr == state_list) {
        TaskState::Blocked
    } else if l.suspended.is_some_and(|s| s.addr == state_list) {
        if event_list != 0 || waits_for_notification(kernel, bytes) {
            TaskState::Blocked
        } else {
            TaskState::Suspended
        }
    } else if state_list == 0 || l.termination.is_some_and(|t| t.addr == state_list) {
        TaskState::Deleted
    } else {
        TaskState::Ready
    };
    (state, list_name, pending)
}

/// `ucNotifyState[i] == taskWAITING_NOTIFICATION` (1) for some index.
fn waits_for_notification(kernel: &FreeRtos, bytes: &[u8]) -> bool {
    const TASK_WAITING_NOTIFICATION: u8 = 1;
    kernel
        .layout
        .tcb
        .notify_state
        .and_then(|f| f.bytes(bytes))
        .is_some_and(|s| s.contains(&TASK_WAITING_NOTIFICATION))
}

/// The task a TCB's bytes describe, and the stack range to read for it.
fn parse_tcb(
    kernel: &FreeRtos,
    globals: &Globals,
    names: &HashMap<u64, String>,
    tcb: u64,
    bytes: &[u8],
    anomalies: &mut Vec<Anomaly>,
) -> Parsed {
    let t = &kernel.layout.tcb;
    let name_bytes = t.name.bytes(bytes).unwrap_or_default();
    let name_end = name_bytes
        .iter()
        .position(|b| *b == 0)
        .unwrap_or(name_bytes.len());
    let name = String::from_utf8_lossy(&name_bytes[..name_end]).into_owned();
    let (state, list, pending_ready) = state_of(kernel, globals, names, tcb, bytes);
    let wake_tick = (state == TaskState::Blocked
        && list
            .as_deref()
            .is_some_and(|l| l.starts_with("xDelayedTaskList")))
    .then(|| {
        kernel
            .layout
            .list
            .item
            .value
            .within(t.state_item)
            .read(bytes)
    })
    .flatten();
    let low = t.stack.read(bytes).unwrap_or(0);
    let top = t.top_of_stack.read(bytes).unwrap_or(0);
    let high = t
        .end_of_stack
        .and_then(|f| f.read(bytes))
        .and_then(|end| end.checked_add(t.stack_word));
    let stack = stack_bounds(&name, tcb, low, high, anomalies);
    let stack_read = stack_range(&stack, top);
    Parsed {
        task: Task {
            name,
            tcb,
            number: t.number.and_then(|f| f.read(bytes)),
            state,
            list,
            pending_ready,
            wake_tick,
            priority: t.priority.read(bytes).unwrap_or(0),
            base_priority: t.base_priority.and_then(|f| f.read(bytes)),
            allocation: t
                .allocation
                .and_then(|f| f.read(bytes))
                .and_then(Allocation::from_raw),
            stack,
            top_of_stack: top,
            registers: None,
            high_water: None,
            tcb_block: None,
            stack_block: None,
            location: None,
        },
        stack_read,
    }
}

/// The stack's bounds, checked: a bound that makes no sense is an anomaly and is dropped.
fn stack_bounds(
    name: &str,
    tcb: u64,
    low: u64,
    high: Option<u64>,
    anomalies: &mut Vec<Anomaly>,
) -> StackBounds {
    let mut bad = |message: String| {
        anomalies.push(Anomaly::new(AnomalyKind::BadStack, Some(tcb), message));
    };
    if low == 0 || !low.is_multiple_of(4) {
        bad(format!("task {name}: pxStack is {low:#010x}"));
    }
    let high = match high {
        Some(h) if h > low && h - low <= MAX_STACK_BYTES => Some(h),
        Some(h) => {
            bad(format!(
                "task {name}: the stack [{low:#010x}, {h:#010x}) is empty, inverted or larger \
                 than {MAX_STACK_BYTES} bytes"
            ));
            None
        }
        None => None,
    };
    StackBounds {
        low,
        high,
        high_from: high.map(|_| StackTop::EndOfStack),
    }
}

/// What to read of a stack: the whole of it when its bounds are known, else from `pxStack` to
/// the end of the largest context above `pxTopOfStack` (all the fill can be below the saved
/// context); `None` when neither makes sense.
fn stack_range(stack: &StackBounds, top: u64) -> Option<(u64, u64)> {
    if stack.low == 0 || !stack.low.is_multiple_of(4) {
        return None;
    }
    if let Some(high) = stack.high {
        return Some((stack.low, high));
    }
    let end = top.checked_add(u64::from(MAX_FRAME_LEN))?;
    (end > stack.low && end - stack.low <= MAX_STACK_BYTES).then_some((stack.low, end))
}

/// Drops the stack reads past [`MAX_TOTAL_STACK_BYTES`] (their tasks get no registers from
/// the stack bytes and no high-water mark).
fn budget_stack_reads(parsed: &mut [Parsed], anomalies: &mut Vec<Anomaly>) {
    let mut total = 0u64;
    for p in parsed {
        let Some((lo, hi)) = p.stack_read else {
            continue;
        };
        total = total.saturating_add(hi - lo);
        if total > MAX_TOTAL_STACK_BYTES {
            p.stack_read = None;
            anomalies.push(Anomaly::new(
                AnomalyKind::TooManyItems,
                Some(p.task.tcb),
                format!(
                    "task {}: its stack is not read: the stacks add up to more than \
                     {MAX_TOTAL_STACK_BYTES} bytes",
                    p.task.name
                ),
            ));
        }
    }
}

impl FreeRtos {
    /// Reads every task from memory. `core` is the halted core's registers, when known: the
    /// running task's registers, and whether the core is in an exception handler.
    pub fn read_tasks(
        &self,
        mem: &mut dyn Memory,
        core: Option<&CoreRegisters>,
    ) -> Result<TaskSnapshot, RtosError> {
        read_tasks(self, mem, core)
    }
}

/// Reads every task. See [`FreeRtos::read_tasks`].
pub(crate) fn read_tasks(
    kernel: &FreeRtos,
    mem: &mut dyn Memory,
    core: Option<&CoreRegisters>,
) -> Result<TaskSnapshot, RtosError> {
    let layout = &kernel.layout;
    let mut anomalies = Vec::new();
    let globals = Globals::read(mem, layout)?;
    let tcbs = collect_tcbs(mem, layout, &globals, &mut anomalies)?;
    let names: HashMap<u64, String> = lists(layout)
        .into_iter()
        .map(|(_, addr, name)| (addr, name))
        .collect();
    let tcb_len = usize::try_from(layout.tcb.size).unwrap_or(usize::MAX);
    let ranges: Vec<(u64, usize)> = tcbs.iter().map(|&a| (a, tcb_len)).collect();
    let mut parsed = Vec::new();
    for (&tcb, bytes) in tcbs.iter().zip(read_each(mem, &ranges)?) {
        match bytes {
            Some(b) => parsed.push(parse_tcb(kernel, &globals, &names, tcb, &b, &mut anomalies)),
            None => anomalies.push(Anomaly::new(
                AnomalyKind::BadPointer,
                Some(tcb),
                format!("the TCB at {tcb:#010x} is unreadable"),
            )),
        }
    }
    budget_stack_reads(&mut parsed, &mut anomalies);
    let stack_ranges: Vec<(u64, usize)> = parsed
        .iter()
        .filter_map(|p| p.stack_read)
        .map(|(lo, hi)| (lo, (hi - lo) as usize))
        .collect();
    let mut stacks = read_each(mem, &stack_ranges)?.into_iter();
    let mut read: Vec<(Task, Option<Vec<u8>>)> = parsed
        .into_iter()
        .map(|p| {
            let stack = p.stack_read.and_then(|_| stacks.next().flatten());
            (p.task, stack)
        })
        .collect();
    let mut fill = kernel.stack_fill;
    if fill == StackFill::Unknown
        && read.iter().any(|(_, s)| {
            s.as_deref()
                .is_some_and(|s| s.starts_with(&[STACK_FILL; 4]))
        })
    {
        fill = StackFill::Seen;
    }
    for (task, stack) in &mut read {
        finish_task(
            kernel,
            mem,
            task,
            stack.as_deref(),
            core,
            fill,
            &mut anomalies,
        )?;
    }
    let mut tasks: Vec<Task> = read.into_iter().map(|(t, _)| t).collect();
    let handler = core
        .map(|c| (c.xpsr & IPSR_MASK) as u16)
        .filter(|ipsr| *ipsr != 0);
    tasks.sort_by_key(|t| (t.number.unwrap_or(u64::MAX), t.tcb));
    if let Some(count) = globals.task_count
        && count != tasks.len() as u64
    {
        anomalies.push(Anomaly::new(
            AnomalyKind::CountMismatch,
            Some(layout.task_count.map_or(0, |g| g.addr)),
            format!(
                "uxCurrentNumberOfTasks is {count} but {} tasks are on the kernel's lists",
                tasks.len()
            ),
        ));
    }
    Ok(TaskSnapshot {
        port: kernel.port.clone(),
        scheduler_running: globals.scheduler_running,
        scheduler_suspended: globals.scheduler_suspended,
        tick_count: globals.tick_count,
        task_count: globals.task_count,
        priorities: layout.priorities,
        current_tcb: globals.current_tcb,
        handler,
        stack_fill: fill,
        tasks,
        anomalies,
    })
}

/// Registers and high-water mark of one task from its stack bytes (read from `pxStack`);
/// `core` is the halted core's registers, the running task's own.
fn finish_task(
    kernel: &FreeRtos,
    mem: &mut dyn Memory,
    task: &mut Task,
    stack: Option<&[u8]>,
    core: Option<&CoreRegisters>,
    fill: StackFill,
    anomalies: &mut Vec<Anomaly>,
) -> Result<(), RtosError> {
    let word = kernel.layout.tcb.stack_word;
    if let Some(bytes) = stack
        && fill.counted()
    {
        let filled = bytes.iter().take_while(|b| **b == STACK_FILL).count() as u64;
        task.high_water = Some(HighWater {
            bytes: filled,
            words: filled / word,
        });
        if filled == 0 {
            anomalies.push(Anomaly::new(
                AnomalyKind::StackOverflow,
                Some(task.stack.low),
                format!(
                    "task {}: no 0xa5 fill left at the low end of its stack: it has used its \
                     whole stack, or overflowed",
                    task.name
                ),
            ));
        }
    }
    if task.state == TaskState::Running {
        task.registers = core.map(|c| TaskRegisters {
            source: RegisterSource::Core,
            regs: *c,
            exc_return: None,
            fp: None,
        });
        return Ok(());
    }
    task.registers = saved_registers(kernel, mem, task, stack, anomalies)?;
    Ok(())
}

/// A switched-out task's registers from the context at its `pxTopOfStack`, checked.
fn saved_registers(
    kernel: &FreeRtos,
    mem: &mut dyn Memory,
    task: &Task,
    stack: Option<&[u8]>,
    anomalies: &mut Vec<Anomaly>,
) -> Result<Option<TaskRegisters>, RtosError> {
    let Some(layout) = kernel.port.layout else {
        return Ok(None);
    };
    let top = task.top_of_stack;
    let mut bad = |kind: AnomalyKind, message: String| {
        anomalies.push(Anomaly::new(
            kind,
            Some(top),
            format!("task {}: {message}", task.name),
        ));
    };
    if top < task.stack.low {
        bad(
            AnomalyKind::StackOverflow,
            format!(
                "pxTopOfStack {top:#010x} is below pxStack {:#010x}: the stack overflowed",
                task.stack.low
            ),
        );
    }
    let Ok(top32) = u32::try_from(top) else {
        bad(
            AnomalyKind::BadFrame,
            format!("pxTopOfStack {top:#x} is not a 32-bit address"),
        );
        return Ok(None);
    };
    // The context sits inside the stack bytes already read; else one read of the largest one.
    let within = top
        .checked_sub(task.stack.low)
        .and_then(|off| usize::try_from(off).ok())
        .and_then(|off| stack?.get(off..).map(<[u8]>::to_vec));
    let bytes = match within {
        Some(b) if !b.is_empty() => Some(b),
        _ => read_or_none(mem, top, MAX_FRAME_LEN as usize)?,
    };
    let Some(bytes) = bytes else {
        bad(
            AnomalyKind::BadPointer,
            format!("pxTopOfStack {top:#010x} is unreadable"),
        );
        return Ok(None);
    };
    let ctx = match frame::decode(layout, top32, &bytes) {
        Ok(c) => c,
        Err(e) => {
            bad(AnomalyKind::BadFrame, e.to_string());
            return Ok(None);
        }
    };
    if ctx.regs.xpsr & XPSR_THUMB == 0 {
        bad(
            AnomalyKind::BadFrame,
            format!(
                "the saved xPSR {:#010x} has no Thumb bit: not a context the port saved",
                ctx.regs.xpsr
            ),
        );
    }
    if let Some(high) = task.stack.high
        && u64::from(ctx.regs.sp()) > high
    {
        bad(
            AnomalyKind::BadFrame,
            format!(
                "the saved context ends at {:#010x}, above the stack's top {high:#010x}",
                ctx.regs.sp()
            ),
        );
    }
    Ok(Some(TaskRegisters {
        source: RegisterSource::Saved(ctx.kind),
        regs: ctx.regs,
        exc_return: ctx.exc_return,
        fp: ctx.fp,
    }))
}
