//! A FreeRTOS firmware's tasks as gdb threads, at the packet level (`replay`) over the live fake
//! holding memlife-rtos's synthetic kernel: the thread list and its extra info, each thread's
//! registers in the three frame shapes, the task-exit return address shown as 0, refused
//! writes, stops and steps that name the thread that runs, handler mode and the time before the
//! scheduler starts.

use std::sync::{Arc, Mutex};

use memlife_core::cortex_m::{LR, PC, SP};
use memlife_rtos::frame::{ContextLayout, FrameKind};
use memlife_rtos::testing::{BASE, Builder, STACK_BYTES, USED, kernel};
use memlife_testkit::live::{LiveTarget, Probe, Run};

use super::{entry, symbols};
use crate::threads::{HANDLER_TID, Threads};
use crate::{Bridge, ServeEvent, ServeOptions};

/// FreeRTOS's task-exit return address in these tests (`prvTaskExitError`).
const EXIT: u32 = 0x0800_3c84;
const PC_READY: u32 = 0x0800_2000;
/// xPSR in thread mode, and in the SysTick handler.
const THREAD: u64 = 0x0100_0000;
const SYSTICK: u64 = 0x0100_000f;

/// A bridge over the synthetic kernel, the probe on its core, and what it told.
struct Rtos {
    bridge: Bridge,
    probe: Probe,
    events: Arc<Mutex<Vec<ServeEvent>>>,
}

impl Rtos {
    /// A bridge over the kernel `b` built, `current` its `pxCurrentTCB`, the core at `pc` in
    /// thread mode.
    fn new(b: Builder, current: u64, layout: ContextLayout, pc: u32) -> Rtos {
        let (target, probe) = LiveTarget::new(b.finish(current));
        {
            let mut s = probe.0.borrow_mut();
            s.regs[PC] = u64::from(pc);
            s.regs[SP] = BASE + 0xF000;
            s.regs[LR] = 0x0800_0301;
            s.regs[4] = 0x4444;
            s.regs[25] = THREAD;
        }
        let events: Arc<Mutex<Vec<ServeEvent>>> = Arc::default();
        let sink = Arc::clone(&events);
        let options = ServeOptions {
            events: Some(Arc::new(move |e: &ServeEvent| {
                sink.lock().unwrap().push(e.clone())
            })),
            ..ServeOptions::default()
        };
        let mut bridge = Bridge::new(Box::new(target), symbols(), options);
        assert!(bridge.threads.is_none(), "the fixture has no kernel");
        bridge.threads = Some(Threads::new(kernel(layout), Some(EXIT)));
        Rtos {
            bridge,
            probe,
            events,
        }
    }

    /// The reply bodies to `packets`, one client session.
    fn ask(&mut self, packets: &[&str]) -> Vec<String> {
        let input: Vec<u8> = packets.iter().flat_map(|p| frame(p)).collect();
        let out = crate::replay::replay(&mut self.bridge, &input);
        bodies(&String::from_utf8_lossy(&out))
    }

    fn reg(&self, n: usize, value: u64) {
        self.probe.0.borrow_mut().regs[n] = value;
    }
}

fn frame(body: &str) -> Vec<u8> {
    let sum = body.bytes().fold(0u8, |a, b| a.wrapping_add(b));
    format!("${body}#{sum:02x}").into_bytes()
}

/// The bodies of the `$body#cs` frames in `text`, in order.
fn bodies(text: &str) -> Vec<String> {
    text.split('$')
        .skip(1)
        .filter_map(|f| f.split_once('#').map(|(b, _)| super::unrle(b)))
        .collect()
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The 32-bit words of a `g` reply (`None`: `xx`).
fn words(g: &str) -> Vec<Option<u32>> {
    g.as_bytes()
        .chunks(8)
        .map(|w| {
            let w = std::str::from_utf8(w).ok()?;
            u32::from_str_radix(w, 16).ok().map(u32::swap_bytes)
        })
        .collect()
}

/// Three tasks in the three lists that matter, the first running; their TCBs.
fn three_tasks(b: &mut Builder, kind: FrameKind) -> [u64; 3] {
    let l = b.layout.clone();
    let run = b.task("Infer", 2, l.ready_list(2), kind, 0x0800_1000);
    let ready = b.task("Ready", 1, l.ready_list(1), kind, PC_READY);
    let sleep = b.task("Sleep", 3, l.delayed[0].addr, kind, PC_READY + 8);
    [run, ready, sleep]
}

#[test]
fn every_task_is_a_thread_the_running_one_first() {
    let mut b = Builder::new();
    let [run, ready, sleep] = three_tasks(&mut b, FrameKind::Basic);
    let mut r = Rtos::new(b, run, ContextLayout::NoFpu, 0x0800_1234);
    let out = r.ask(&[
        "qfThreadInfo",
        "qsThreadInfo",
        &format!("qThreadExtraInfo,{ready:x}"),
        &format!("qThreadExtraInfo,{sleep:x}"),
        &format!("qThreadExtraInfo,{run:x}"),
        &format!("T{sleep:x}"),
        "T20000008",
        "?",
    ]);
    assert_eq!(out[0], format!("m{run:x},{ready:x},{sleep:x}"));
    assert_eq!(out[1], "l");
    assert_eq!(out[2], hex("Name: Ready, State: Ready, Priority: 1"));
    assert_eq!(out[3], hex("Name: Sleep, State: Blocked, Priority: 3"));
    assert_eq!(out[4], hex("Name: Infer, State: Running, Priority: 2"));
    assert_eq!(out[5], "OK", "a task is alive");
    assert_eq!(out[6], "E01", "no task there");
    // The stop gdb asks about at connection names the running task.
    assert_eq!(out[7], format!("T05thread:{run:x};"));
}

/// Registers: the running task's are the core's; a task that is not running has its saved
/// context, in each of the three frame shapes; `p` answers the same one register at a time.
#[test]
fn registers_of_each_thread_in_the_three_frame_shapes() {
    for (kind, layout) in [
        (FrameKind::Basic, ContextLayout::NoFpu),
        (FrameKind::BasicWithExcReturn, ContextLayout::Fpu),
        (FrameKind::Extended, ContextLayout::Fpu),
    ] {
        let mut b = Builder::new();
        let [run, ready, _] = three_tasks(&mut b, kind);
        let top = u64::from(b.get(ready + b.layout.tcb.top_of_stack.offset));
        let mut r = Rtos::new(b, run, layout, 0x0800_1234);
        let out = r.ask(&[
            &format!("Hg{run:x}"),
            "g",
            &format!("Hg{ready:x}"),
            "g",
            "pf",
            "pd",
            "p19",
        ]);
        let core = words(&out[1]);
        assert_eq!(core[15], Some(0x0800_1234), "{kind:?}: the core's pc");
        assert_eq!(core[4], Some(0x4444));
        let saved = words(&out[3]);
        assert_eq!(saved.len(), 17);
        assert_eq!(saved[15], Some(PC_READY), "{kind:?}: the saved pc");
        assert_eq!(
            saved[4..12],
            (4..12).map(|n| Some(0x40 + n)).collect::<Vec<_>>()
        );
        assert_eq!(saved[..4], [Some(0xA0), Some(0xA1), Some(0xA2), Some(0xA3)]);
        assert_eq!(saved[14], Some(0x0800_0101), "lr");
        let sp = top + u64::from(kind.size());
        assert_eq!(saved[13], Some(sp as u32), "{kind:?}: sp above the frame");
        assert_eq!(saved[16], Some(0x0100_0000), "xpsr");
        assert_eq!(words(&out[4]), [Some(PC_READY)]);
        assert_eq!(words(&out[5]), [Some(sp as u32)]);
        assert_eq!(words(&out[6]), [Some(0x0100_0000)]);
    }
}

/// The task-exit return address reads as 0 where the kernel put it: the word below a task's
/// initial top (its entry function's saved lr) and a task that never ran's lr; memory around
/// it, and a word that holds something else, reads as it is.
#[test]
fn the_task_exit_return_address_reads_as_zero() {
    let mut b = Builder::new();
    let [run, ready, sleep] = three_tasks(&mut b, FrameKind::Basic);
    let t = b.layout.tcb;
    // The entry function's saved lr: below pxEndOfStack aligned to 8 bytes.
    let slot = |b: &Builder, tcb: u64| {
        let end = u64::from(b.get(tcb + t.end_of_stack.unwrap().offset));
        (end & !7) - 4
    };
    let (ready_slot, sleep_slot) = (slot(&b, ready), slot(&b, sleep));
    b.put(ready_slot, EXIT | 1);
    b.put(sleep_slot, 0x0800_0555);
    // Ready never ran: the lr of its first context is the trap.
    let top = u64::from(b.get(ready + t.top_of_stack.offset));
    b.put(top + 0x34, EXIT | 1);
    let mut r = Rtos::new(b, run, ContextLayout::NoFpu, 0x0800_1234);
    // gdb unwinds a thread that is not running after it switched to it (the tasks are read).
    let out = r.ask(&[
        &format!("Hg{ready:x}"),
        "g",
        "pe",
        &format!("m{:x},10", ready_slot - 8),
        &format!("m{:x},2", ready_slot + 2),
        &format!("m{:x},4", sleep_slot),
    ]);
    assert_eq!(words(&out[1])[14], Some(0), "lr");
    assert_eq!(out[2], "00000000");
    let shown = &out[3];
    assert_eq!(&shown[16..24], "00000000", "{shown}");
    assert_ne!(
        &shown[..16],
        "0000000000000000",
        "the words around it: {shown}"
    );
    assert_eq!(out[4], "0000", "half of the word");
    assert_eq!(out[5], "55050008", "another value stays");
    // memlife's own reads see the memory as it is.
    let mut word = [0u8; 4];
    memlife_core::Memory::read(r.bridge.target.as_memory(), ready_slot, &mut word).unwrap();
    assert_eq!(u32::from_le_bytes(word), EXIT | 1);
}

/// The word of the running task is known before any thread list: gdb unwinds the thread that
/// stopped first.
#[test]
fn the_running_tasks_word_is_hidden_before_any_thread_list() {
    let mut b = Builder::new();
    let [run, _, _] = three_tasks(&mut b, FrameKind::Basic);
    let end = u64::from(b.get(run + b.layout.tcb.end_of_stack.unwrap().offset));
    let slot = (end & !7) - 4;
    b.put(slot, EXIT | 1);
    let mut r = Rtos::new(b, run, ContextLayout::NoFpu, 0x0800_1234);
    r.reg(LR, u64::from(EXIT | 1));
    let out = r.ask(&[&format!("m{slot:x},4"), &format!("Hg{run:x}"), "g"]);
    assert_eq!(out[0], "00000000", "{out:?}");
    assert_eq!(
        words(&out[2]).get(14),
        Some(&Some(0)),
        "the core's lr, at a task's entry: {out:?}"
    );
    assert!(
        r.bridge.threads.as_ref().unwrap().view.is_none(),
        "no task read"
    );
}

#[test]
fn writes_to_a_task_that_is_not_running_are_refused() {
    let mut b = Builder::new();
    let [run, ready, _] = three_tasks(&mut b, FrameKind::Basic);
    let mut r = Rtos::new(b, run, ContextLayout::NoFpu, 0x0800_1234);
    let g = "0".repeat(17 * 8);
    let out = r.ask(&[
        &format!("Hg{ready:x}"),
        &format!("G{g}"),
        "P0=01000000",
        &format!("Hg{run:x}"),
        "P0=07000000",
    ]);
    assert_eq!(out[1], "E0d");
    assert_eq!(out[2], "E0d");
    assert_eq!(out[4], "OK", "the running task's registers are the core's");
    assert_eq!(r.probe.state().regs[0], 7);
    let told: Vec<String> = r
        .events
        .lock()
        .unwrap()
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert!(
        told.iter()
            .any(|t| t.contains("register write to task Ready") && t.contains("refused")),
        "{told:?}"
    );
}

/// Continue and step act on the core, whichever thread gdb names; each stop names the task
/// that runs then.
#[test]
fn stops_and_steps_name_the_thread_that_runs() {
    let mut b = Builder::new();
    let [run, ready, _] = three_tasks(&mut b, FrameKind::Basic);
    let mut r = Rtos::new(b, run, ContextLayout::NoFpu, 0x0800_1234);
    let release = entry("model_release");
    r.probe.script([Run::Pass(release)]);
    let out = r.ask(&[
        &format!("Z0,{release:x},2"),
        "vCont;c",
        &format!("vCont;s:{ready:x};c"),
        &format!("vCont;s:{run:x}"),
    ]);
    assert_eq!(out[0], "OK");
    assert_eq!(out[1], format!("T05thread:{run:x};swbreak:;"));
    assert_eq!(out[2], format!("T05thread:{run:x};"), "the core stepped");
    assert_eq!(
        out[3],
        format!("T05thread:{run:x};"),
        "scheduler locking is accepted"
    );
    assert_eq!(r.probe.state().regs[PC], release + 4);
}

/// Before the scheduler starts the core is thread 1 (`main`) and every task created so far is
/// listed, with the context it will start from.
#[test]
fn before_the_scheduler_starts_the_core_is_thread_one() {
    let mut b = Builder::new();
    b.put(b.layout.scheduler_running.unwrap().addr, 0);
    let [first, ready, _] = three_tasks(&mut b, FrameKind::Basic);
    let mut r = Rtos::new(b, first, ContextLayout::NoFpu, 0x0800_0400);
    let out = r.ask(&[
        "qfThreadInfo",
        "qThreadExtraInfo,1",
        &format!("qThreadExtraInfo,{first:x}"),
        "Hg1",
        "g",
        &format!("Hg{ready:x}"),
        "g",
        "?",
    ]);
    assert!(out[0].starts_with("m01,"), "{}", out[0]);
    assert!(out[0].contains(&format!("{first:x}")) && out[0].contains(&format!("{ready:x}")));
    assert_eq!(
        out[1],
        hex("Name: main, State: Running (scheduler not started)")
    );
    assert_eq!(out[2], hex("Name: Infer, State: Ready, Priority: 2"));
    assert_eq!(words(&out[4])[15], Some(0x0800_0400));
    assert_eq!(words(&out[6])[15], Some(PC_READY));
    assert_eq!(out[7], "T05thread:01;");
}

/// In handler mode without the process stack pointer (QEMU), the interrupted task is the
/// current thread with the core's registers; with it (a probe), the handler is a thread of its
/// own and the task has the registers of its exception frame.
#[test]
fn handler_mode_with_and_without_the_process_stack_pointer() {
    let mut b = Builder::new();
    let [run, ready, _] = three_tasks(&mut b, FrameKind::Basic);
    // The exception frame the core stacked on the running task's stack.
    let psp = BASE + 0x4000 + STACK_BYTES - USED;
    for (i, v) in [
        0xB0,
        0xB1,
        0xB2,
        0xB3,
        0xBC,
        0x0800_0741,
        0x0800_0750,
        0x0100_0000,
    ]
    .iter()
    .enumerate()
    {
        b.put(psp + 4 * i as u64, *v);
    }
    let handler = entry("model_release") as u32;
    let mut r = Rtos::new(b, run, ContextLayout::NoFpu, handler);
    r.reg(25, SYSTICK);
    r.reg(LR, 0xFFFF_FFFD);
    let out = r.ask(&["qfThreadInfo", &format!("qThreadExtraInfo,{run:x}"), "?"]);
    assert_eq!(out[0], format!("m{run:x},{ready:x},{:x}", run + 2 * 0x100));
    assert_eq!(
        out[1],
        hex("Name: Infer, State: Running (in exception 15: SysTick), Priority: 2")
    );
    assert_eq!(out[2], format!("T05thread:{run:x};"));

    r.probe.0.borrow_mut().named.push(("psp".into(), psp));
    r.bridge.forget_stop();
    let h = HANDLER_TID.get();
    let out = r.ask(&[
        "qfThreadInfo",
        &format!("qThreadExtraInfo,{h:x}"),
        &format!("qThreadExtraInfo,{run:x}"),
        &format!("Hg{run:x}"),
        "g",
        "Hg2",
        "g",
        "?",
    ]);
    assert!(out[0].starts_with(&format!("m02,{run:x},")), "{}", out[0]);
    assert_eq!(
        out[1],
        hex("Name: Handler mode, State: Running (exception 15: SysTick)")
    );
    assert_eq!(
        out[2],
        hex("Name: Infer, State: Running (interrupted by exception 15: SysTick), Priority: 2")
    );
    let task = words(&out[4]);
    assert_eq!(task[15], Some(0x0800_0750), "the stacked pc");
    assert_eq!(task[14], Some(0x0800_0741), "the stacked lr");
    assert_eq!(task[13], Some((psp + 0x20) as u32), "sp above the frame");
    assert_eq!(task[..4], [Some(0xB0), Some(0xB1), Some(0xB2), Some(0xB3)]);
    assert_eq!(
        task[4],
        Some(0x4444),
        "r4..r11 are not stacked: the core still has them"
    );
    let core = words(&out[6]);
    assert_eq!(core[15], Some(handler));
    assert_eq!(out[7], "T05thread:02;");
}

/// Without a FreeRTOS kernel (or with threads turned off) the core is the one thread, as
/// before.
#[test]
fn without_threads_the_core_is_the_one_thread() {
    let mut b = Builder::new();
    let [run, _, _] = three_tasks(&mut b, FrameKind::Basic);
    let mut r = Rtos::new(b, run, ContextLayout::NoFpu, 0x0800_1234);
    r.bridge.threads = None;
    let out = r.ask(&["qfThreadInfo", "qThreadExtraInfo,1", "?", "vCont;s:1"]);
    assert_eq!(out[0], "m01");
    assert_eq!(out[1], "", "no extra info");
    assert_eq!(out[2], "T05thread:01;");
    assert_eq!(out[3], "S05", "a single-threaded step");
}

/// `monitor tasks` prints the table `memlife tasks` prints.
#[test]
fn monitor_tasks_prints_the_task_table() {
    let mut b = Builder::new();
    let [run, _, _] = three_tasks(&mut b, FrameKind::Basic);
    let mut r = Rtos::new(b, run, ContextLayout::NoFpu, 0x0800_1234);
    let text = r.bridge.monitor(b"tasks").unwrap();
    assert!(text.contains("running: Infer"), "{text}");
    for (name, state) in [
        ("Infer", "running"),
        ("Ready", "ready"),
        ("Sleep", "blocked"),
    ] {
        assert!(
            text.lines()
                .any(|l| l.contains(&format!(" {name} ")) && l.contains(state)),
            "{name}: {text}"
        );
    }
}

/// Damaged kernel memory (random words over the globals, the TCBs, the stacks) and a core in
/// any mode: every thread packet is answered, nothing panics, and the thread that runs is
/// always listed.
#[test]
fn damaged_kernel_memory_never_panics() {
    let mut b = Builder::new();
    let l = b.layout.clone();
    let mut tcbs = Vec::new();
    for i in 0..5u32 {
        let kind = [FrameKind::Basic, FrameKind::BasicWithExcReturn][i as usize % 2];
        tcbs.push(b.task("T", i % 4, l.ready_list(u64::from(i % 4)), kind, PC_READY));
    }
    let base = b.finish_keep(tcbs[0]);
    memlife_testkit::fuzz::cases(0x7415, 120, |i, rng| {
        let mut b = Builder::new();
        b.ram = base.ram.clone();
        let span = if i % 3 == 0 { b.ram.len() } else { 0x5000 };
        for _ in 0..1 + rng.below(48) {
            let off = (rng.below(span as u64 / 4) * 4) as usize;
            let v = match rng.below(3) {
                0 => rng.next_u32(),
                1 => (BASE + rng.below(0x10000)) as u32,
                _ => u32::MAX - rng.below(16) as u32,
            };
            b.ram[off..off + 4].copy_from_slice(&v.to_le_bytes());
        }
        let layout = [ContextLayout::NoFpu, ContextLayout::Fpu][i as usize % 2];
        let (target, probe) = LiveTarget::new(b.memory());
        {
            let mut s = probe.0.borrow_mut();
            s.regs[PC] = u64::from(PC_READY);
            s.regs[SP] = BASE + rng.below(0x10000);
            s.regs[LR] = u64::from(rng.next_u32());
            s.regs[25] = if rng.below(2) == 0 { THREAD } else { SYSTICK };
            if rng.below(2) == 0 {
                s.named.push(("psp".into(), BASE + rng.below(0x10000)));
            }
        }
        let mut bridge = Bridge::new(Box::new(target), symbols(), ServeOptions::default());
        bridge.threads = Some(Threads::new(kernel(layout), Some(EXIT)));
        let mut r = Rtos {
            bridge,
            probe,
            events: Arc::default(),
        };
        let list = r.ask(&["qfThreadInfo"]);
        let ids: Vec<String> = list[0]
            .strip_prefix('m')
            .unwrap_or_else(|| panic!("case {i}: {list:?}"))
            .split(',')
            .map(str::to_string)
            .collect();
        let mut packets = Vec::new();
        for id in ids.iter().take(16) {
            packets.extend([
                format!("qThreadExtraInfo,{id}"),
                format!("Hg{id}"),
                "g".into(),
                "pf".into(),
                format!("m{:x},40", BASE + 0x4000 + rng.below(0x800)),
            ]);
        }
        packets.push("?".into());
        let asked: Vec<&str> = packets.iter().map(String::as_str).collect();
        let out = r.ask(&asked);
        assert_eq!(out.len(), asked.len(), "case {i}: {out:?}");
        let stop = out.last().unwrap();
        assert!(
            ids.iter().any(|id| stop.contains(&format!("thread:{id};"))),
            "case {i}: {stop} names a listed thread {ids:?}"
        );
    });
}
