//! Task reads over synthetic kernels ([`crate::testing`]): every state, the three frame
//! shapes, before the scheduler starts, and damage (loops, wild pointers, overflowed stacks,
//! random RAM) that must give anomalies, never a panic or an unbounded walk.
#![allow(clippy::unwrap_used)]

use memlife_core::Memory;
use memlife_core::cortex_m::CoreRegisters;
use memlife_testkit::ram::Counted;

use crate::frame::{ContextLayout, FrameKind};
use crate::testing::{BASE, Builder, STACK_BYTES, USED, kernel};
use crate::{AnomalyKind, RegisterSource, Running, TaskSnapshot, TaskState};

const PC: u32 = 0x0800_2000;

fn core(pc: u32, xpsr: u32) -> CoreRegisters {
    let mut r = [0u32; 16];
    r[13] = 0x2000_3ff0;
    r[15] = pc;
    CoreRegisters::new(r, xpsr)
}

fn read(mem: &mut dyn Memory, layout: ContextLayout, core: Option<&CoreRegisters>) -> TaskSnapshot {
    kernel(layout).read_tasks(mem, core).unwrap()
}

fn kinds(s: &TaskSnapshot) -> Vec<AnomalyKind> {
    s.anomalies.iter().map(|a| a.kind).collect()
}

#[test]
fn every_state_as_the_kernel_says_it() {
    let mut b = Builder::new();
    let l = b.layout.clone();
    let suspended = l.suspended.unwrap().addr;
    let basic = FrameKind::Basic;
    let run = b.task("Run", 2, l.ready_list(2), basic, PC);
    let ready = b.task("Ready", 1, l.ready_list(1), basic, PC + 2);
    let delayed = b.task("Sleep", 1, l.delayed[1].addr, basic, PC + 4);
    b.put(delayed + l.tcb.state_item, 5000); // its wake tick
    let susp = b.task("Susp", 3, suspended, basic, PC);
    let notified = b.task("Notify", 3, suspended, basic, PC);
    b.put(notified + l.tcb.notify_state.unwrap().offset, 1); // taskWAITING_NOTIFICATION
    let waits = b.task("Queue", 3, suspended, basic, PC);
    b.put(b.event_item(waits) + 16, 0x2000_0f00); // on some queue's event list
    let deleted = b.task("Gone", 1, l.termination.unwrap().addr, basic, PC);
    // Readied while the scheduler was suspended: the state item is still on a delayed list.
    let pending = b.task("Pend", 2, l.delayed[0].addr, basic, PC);
    let pending_event = b.event_item(pending);
    b.join(l.pending_ready.addr, pending_event);
    let mut mem = b.finish(run);
    let c = core(0x0800_3000, 0x0100_0000);
    let s = read(&mut mem, ContextLayout::NoFpu, Some(&c));
    assert!(s.anomalies.is_empty(), "{:?}", s.anomalies);
    let state = |tcb| s.task(tcb).unwrap().state;
    assert_eq!(state(run), TaskState::Running);
    assert_eq!(state(ready), TaskState::Ready);
    assert_eq!(state(delayed), TaskState::Blocked);
    assert_eq!(state(susp), TaskState::Suspended);
    assert_eq!(state(notified), TaskState::Blocked);
    assert_eq!(state(waits), TaskState::Blocked);
    assert_eq!(state(deleted), TaskState::Deleted);
    assert_eq!(state(pending), TaskState::Ready);
    let p = s.task(pending).unwrap();
    assert!(p.pending_ready);
    assert_eq!(p.list.as_deref(), Some("xDelayedTaskList1"));
    let d = s.task(delayed).unwrap();
    assert_eq!(
        (d.wake_tick, d.list.as_deref()),
        (Some(5000), Some("xDelayedTaskList2"))
    );
    assert_eq!(
        s.task(ready).unwrap().list.as_deref(),
        Some("pxReadyTasksLists[1]")
    );
    assert_eq!(s.tasks.len(), 8);
    assert_eq!(s.task_count, Some(8));
    assert_eq!(
        (s.tick_count, s.scheduler_running),
        (Some(1234), Some(true))
    );
    // Creation order.
    let names: Vec<&str> = s.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Run", "Ready", "Sleep", "Susp", "Notify", "Queue", "Gone", "Pend"
        ]
    );
    assert_eq!(
        s.running(),
        Running::Task {
            tcb: run,
            name: "Run".into()
        }
    );
    // The running task's registers are the core's; the others' come from their stacks.
    let r = s.task(run).unwrap().registers.unwrap();
    assert_eq!((r.source, r.regs), (RegisterSource::Core, c));
    let r = s.task(ready).unwrap().registers.unwrap();
    assert_eq!(r.source, RegisterSource::Saved(FrameKind::Basic));
    assert_eq!(r.regs.pc(), PC + 2);
    let t = s.task(ready).unwrap();
    assert_eq!(u64::from(r.regs.sp()), t.top_of_stack + 0x40);
    assert_eq!(u64::from(r.regs.sp()), t.stack.high.unwrap() - USED);
    // The fill below the context, counted as uxTaskGetStackHighWaterMark does.
    let hwm = t.high_water.unwrap();
    assert_eq!(hwm.bytes, STACK_BYTES - USED - 0x40);
    assert_eq!(hwm.words, hwm.bytes / 4);
    assert_eq!(t.stack.size(), Some(STACK_BYTES));
}

#[test]
fn cortex_m4f_frames_basic_and_extended() {
    let mut b = Builder::new();
    let l = b.layout.clone();
    let basic = b.task("Int", 1, l.ready_list(1), FrameKind::BasicWithExcReturn, PC);
    let fpu = b.task("Float", 1, l.ready_list(1), FrameKind::Extended, PC + 8);
    let mut mem = b.finish(0);
    let s = read(&mut mem, ContextLayout::Fpu, None);
    assert!(s.anomalies.is_empty(), "{:?}", s.anomalies);
    let regs = |tcb| s.task(tcb).unwrap().registers.unwrap();
    let r = regs(basic);
    assert_eq!(
        r.source,
        RegisterSource::Saved(FrameKind::BasicWithExcReturn)
    );
    assert_eq!(
        (r.exc_return, r.fp, r.regs.pc()),
        (Some(0xFFFF_FFFD), None, PC)
    );
    assert_eq!(
        u64::from(r.regs.sp()),
        s.task(basic).unwrap().top_of_stack + 0x44
    );
    let r = regs(fpu);
    assert_eq!(r.source, RegisterSource::Saved(FrameKind::Extended));
    assert_eq!(r.regs.pc(), PC + 8);
    assert_eq!(
        r.regs.r[4..12],
        [0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x4b]
    );
    let fp = r.fp.unwrap();
    assert_eq!(
        (fp.s[0], fp.s[15], fp.s[16], fp.s[31]),
        (0x5000, 0x500f, 0x5010, 0x501f)
    );
    assert_eq!(fp.fpscr, 0xF0);
    assert_eq!(
        u64::from(r.regs.sp()),
        s.task(fpu).unwrap().stack.high.unwrap() - USED
    );
    // The same kernel read as a port without FPU context decodes garbage: the check says so.
    let s = read(&mut mem, ContextLayout::NoFpu, None);
    assert!(
        kinds(&s).contains(&AnomalyKind::BadFrame),
        "{:?}",
        s.anomalies
    );
}

#[test]
fn before_the_scheduler_starts_no_task_runs() {
    let mut b = Builder::new();
    let l = b.layout.clone();
    b.put(l.scheduler_running.unwrap().addr, 0);
    let first = b.task("Hi", 3, l.ready_list(3), FrameKind::Basic, PC);
    b.task("Lo", 1, l.ready_list(1), FrameKind::Basic, PC);
    let mut mem = b.finish(first);
    let s = read(
        &mut mem,
        ContextLayout::NoFpu,
        Some(&core(0x0800_0400, 0x0100_0000)),
    );
    assert!(s.anomalies.is_empty(), "{:?}", s.anomalies);
    assert_eq!(s.running(), Running::BeforeScheduler);
    assert_eq!(s.running().label(), "main");
    // pxCurrentTCB is only the task that will run first: its registers are its initial context.
    let t = s.task(first).unwrap();
    assert_eq!(t.state, TaskState::Ready);
    assert_eq!(
        t.registers.unwrap().source,
        RegisterSource::Saved(FrameKind::Basic)
    );
    assert_eq!(t.registers.unwrap().regs.pc(), PC);
}

#[test]
fn a_kernel_not_yet_initialised_has_no_tasks_and_nothing_wrong() {
    let mut mem = memlife_testkit::ram::at(BASE, vec![0; 0x10000]);
    let s = read(&mut mem, ContextLayout::NoFpu, None);
    assert!(s.tasks.is_empty() && s.anomalies.is_empty(), "{s:?}");
    assert_eq!(s.scheduler_running, Some(false));
}

#[test]
fn a_list_that_loops_is_cut_and_the_other_lists_still_read() {
    let mut b = Builder::new();
    let l = b.layout.clone();
    let a = b.task("A", 1, l.ready_list(1), FrameKind::Basic, PC);
    let bb = b.task("B", 1, l.ready_list(1), FrameKind::Basic, PC);
    let c = b.task("C", 2, l.ready_list(2), FrameKind::Basic, PC);
    let mut b = b.finish_keep(c);
    // B's next goes back to A, and the count claims a billion items.
    let next = l.list.item.next.offset;
    b.put(bb + l.tcb.state_item + next, (a + l.tcb.state_item) as u32);
    b.put(l.ready_list(1), 1_000_000_000);
    let mut mem = Counted::new(b.memory());
    let s = read(&mut mem, ContextLayout::NoFpu, None);
    let k = kinds(&s);
    assert!(k.contains(&AnomalyKind::TooManyItems), "{k:?}");
    assert!(k.contains(&AnomalyKind::Cycle), "{k:?}");
    assert_eq!(s.tasks.len(), 3, "A and B once each, and C");
    mem.assert_within(40, 64 * 1024, "a looping list");
}

#[test]
fn wild_pointers_are_anomalies() {
    let mut b = Builder::new();
    let l = b.layout.clone();
    let a = b.task("A", 1, l.ready_list(1), FrameKind::Basic, PC);
    let c = b.task("C", 2, l.delayed[0].addr, FrameKind::Basic, PC);
    let d = b.task("D", 3, l.ready_list(3), FrameKind::Basic, PC);
    let mut b = b.finish_keep(0);
    // Ready list 1 points into nowhere; C's owner is not its TCB; D's stack pointer is wild.
    b.put(l.ready_list(1) + l.list.first.offset, 0x9000_0000);
    b.put(c + l.tcb.state_item + 12, 0x2000_0f00);
    b.put(d + l.tcb.top_of_stack.offset, 0x9000_0000);
    b.put(d + l.tcb.end_of_stack.unwrap().offset, 0x1000);
    let s = read(&mut b.memory(), ContextLayout::NoFpu, None);
    let k = kinds(&s);
    assert!(k.contains(&AnomalyKind::BadPointer), "{k:?}");
    assert!(k.contains(&AnomalyKind::BadStack), "{k:?}");
    assert!(s.task(a).is_none() && s.task(c).is_none(), "{:?}", s.tasks);
    let d = s.task(d).unwrap();
    assert_eq!(
        d.registers, None,
        "an unreadable context gives no registers"
    );
    assert_eq!(
        d.stack.high, None,
        "a stack top below its bottom is dropped"
    );
    assert_eq!(s.tasks.len(), 1);
    assert!(
        k.contains(&AnomalyKind::CountMismatch),
        "3 tasks counted, 1 found"
    );
}

#[test]
fn an_overflowed_stack_is_reported() {
    let mut b = Builder::new();
    let l = b.layout.clone();
    let t = b.task("Deep", 1, l.ready_list(1), FrameKind::Basic, PC);
    let low = u64::from(b.get(t + l.tcb.stack.offset));
    // Used to its last byte, and its saved context below pxStack.
    for a in (low..low + STACK_BYTES - 0x100).step_by(4) {
        b.put(a, 0x1234_5678);
    }
    b.put(t + l.tcb.top_of_stack.offset, (low - 0x20) as u32);
    let s = read(&mut b.finish(0), ContextLayout::NoFpu, None);
    assert_eq!(
        kinds(&s)
            .iter()
            .filter(|k| **k == AnomalyKind::StackOverflow)
            .count(),
        2,
        "{:?}",
        s.anomalies
    );
    assert_eq!(s.task(t).unwrap().high_water.unwrap().bytes, 0);
}

#[test]
fn random_ram_never_panics_and_reads_are_bounded() {
    let mut b = Builder::new();
    let l = b.layout.clone();
    for i in 0..6u32 {
        b.task(
            "T",
            i % 4,
            l.ready_list(u64::from(i % 4)),
            FrameKind::Basic,
            PC,
        );
    }
    let base = b.finish_keep(0);
    memlife_testkit::fuzz::cases(0x5eed, 300, |i, rng| {
        let mut ram = base.ram.clone();
        // Scribble random words over the globals and the TCBs, or everywhere.
        let span = if i % 3 == 0 { ram.len() } else { 0x2000 };
        for _ in 0..1 + rng.below(64) {
            let off = (rng.below(span as u64 / 4) * 4) as usize;
            let v = match rng.below(3) {
                0 => rng.next_u32(),
                1 => (BASE + rng.below(0x10000)) as u32,
                _ => u32::MAX - rng.below(16) as u32,
            };
            ram[off..off + 4].copy_from_slice(&v.to_le_bytes());
        }
        let mut mem = Counted::new(memlife_testkit::ram::at(BASE, ram));
        for layout in [ContextLayout::NoFpu, ContextLayout::Fpu] {
            let s = read(&mut mem, layout, None);
            assert!(s.tasks.len() <= crate::MAX_TASKS);
        }
        // Eleven lists of at most MAX_LIST_ITEMS items, the TCBs and stacks in a few reads.
        mem.assert_within(
            2 * (11 * crate::MAX_LIST_ITEMS + 3 * crate::MAX_TASKS as u64 + 8),
            2 * (crate::walk::MAX_TOTAL_STACK_BYTES + (4 << 20)),
            "random RAM",
        );
    });
}

#[test]
fn who_runs_is_read_in_at_most_three_reads() {
    let mut b = Builder::new();
    let l = b.layout.clone();
    let t = b.task("Infer", 1, l.ready_list(1), FrameKind::Basic, PC);
    let mut mem = Counted::new(b.finish(t));
    let k = kernel(ContextLayout::NoFpu);
    assert_eq!(k.running(&mut mem, 0x0100_000f).unwrap(), Running::Isr(15));
    assert_eq!(k.running(&mut mem, 0x0100_000f).unwrap().label(), "ISR 15");
    assert_eq!(mem.reads, 0, "handler mode needs no read");
    assert_eq!(
        k.running(&mut mem, 0x0100_0000).unwrap(),
        Running::Task {
            tcb: t,
            name: "Infer".into()
        }
    );
    assert!(mem.reads <= 3, "{} reads", mem.reads);
    // Before the scheduler starts: main.
    let mut b = Builder::new();
    b.put(l.scheduler_running.unwrap().addr, 0);
    b.task("Infer", 1, l.ready_list(1), FrameKind::Basic, PC);
    let mut mem = Counted::new(b.finish(t));
    assert_eq!(
        k.running(&mut mem, 0x0100_0000).unwrap(),
        Running::BeforeScheduler
    );
    assert_eq!(mem.reads, 2, "pxCurrentTCB and xSchedulerRunning only");
}

#[test]
fn the_tick_count_comes_with_who_runs_and_the_stack_margin_from_the_fill() {
    let mut b = Builder::new();
    let l = b.layout.clone();
    let t = b.task("Infer", 1, l.ready_list(1), FrameKind::Basic, PC);
    b.put(l.tick_count.unwrap().addr, 4242);
    let low = u64::from(b.get(t + l.tcb.stack.offset));
    let mut mem = Counted::new(b.finish(t));
    let k = kernel(ContextLayout::NoFpu);
    let now = k.now(&mut mem, 0x0100_0000).unwrap();
    assert_eq!(now.tick, Some(4242));
    assert_eq!(now.running.label(), "Infer");
    // Three globals in one request, then the name.
    assert!(mem.reads <= 4, "{} reads", mem.reads);
    // In an exception handler: the tick count alone.
    let isr = k.now(&mut mem, 0x0100_000f).unwrap();
    assert_eq!((isr.running, isr.tick), (Running::Isr(15), Some(4242)));
    assert_eq!(k.stack_low(&mut mem, t).unwrap(), Some(low));
    // The builder fills the stack's low end; the margin counts fill bytes from pxStack up, and
    // never reads past the limit given.
    let margin = k.unused_stack(&mut mem, low, 64).unwrap().unwrap();
    assert!(margin > 0 && margin <= 64, "{margin}");
    assert_eq!(k.unused_stack(&mut mem, low, 0).unwrap(), Some(0));
}
