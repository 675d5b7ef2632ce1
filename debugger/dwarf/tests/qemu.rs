//! CFI unwinding and typed reads against the bundled firmware running on
//! `qemu-system-arm -M netduinoplus2`, driven through `memlife-rsp`.
//!
//! Needs `qemu-system-arm`; `firmware/build/heap4-healthy.elf` is built on first use.
//! `MEMLIFE_DWARF_TEST_ELF` points the tests at another heap4 ELF with the same functions and
//! globals. Each test starts its own QEMU on its own free port; the guard kills it on drop.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Duration;

use memlife_core::cortex_m::CoreRegisters;
use memlife_core::{BreakpointKind, Breakpoints, Control, Memory, Snapshot, StopReason};
use memlife_dwarf::unwind::{self, UnwindEnd};
use memlife_dwarf::{Frame, Symbols, Value, read_c_string, read_variable};
use memlife_rsp::{GdbRemote, QemuProcess};

const MACHINE: &str = "netduinoplus2";
const WAIT: Duration = Duration::from_secs(10);
const RAM: std::ops::Range<u64> = 0x2000_0000..0x2003_0000;

fn firmware() -> PathBuf {
    memlife_testkit::firmware::elf_or_env("MEMLIFE_DWARF_TEST_ELF", "heap4", "healthy")
}

fn start() -> (QemuProcess, GdbRemote, Symbols) {
    let elf = firmware();
    let symbols = Symbols::load(&elf).unwrap();
    let qemu = QemuProcess::start(MACHINE, &elf, &[]).unwrap();
    let target = qemu.connect().unwrap();
    (qemu, target, symbols)
}

/// Runs to the next stop and checks it is the breakpoint at `addr`.
fn run_to(t: &mut GdbRemote, addr: u64) {
    t.resume().unwrap();
    let stop = t.wait_for_stop(WAIT).unwrap();
    assert_eq!(
        stop,
        Some(StopReason::Breakpoint(addr)),
        "expected a stop at {addr:#x}"
    );
}

fn names(frames: &[Frame]) -> Vec<&str> {
    frames
        .iter()
        .map(|f| f.function.as_deref().unwrap_or("??"))
        .collect()
}

fn show(frames: &[Frame]) -> String {
    frames
        .iter()
        .enumerate()
        .map(|(i, f)| format!("#{i} {f}\n"))
        .collect()
}

/// Every frame is a firmware function with a file:line in firmware/src, and the chain runs
/// from pvPortMalloc through a phase function to main. (The loader's allocation wrapper,
/// `mem_try_alloc`, tail-calls the allocator, so it is not on the stack.)
fn check_malloc_chain(frames: &[Frame], end: &UnwindEnd) {
    let text = show(frames);
    let fns = names(frames);
    assert_eq!(fns.first(), Some(&"pvPortMalloc"), "{text}");
    assert!(
        !fns.contains(&"mem_try_alloc"),
        "a tail-calling wrapper is not a frame:\n{text}"
    );
    assert!(
        fns.iter()
            .any(|f| ["model_load", "graph_build", "inference_run", "model_switch"].contains(f)),
        "no phase function:\n{text}"
    );
    let main_at = fns.iter().position(|f| *f == "main");
    assert!(main_at.is_some(), "main missing:\n{text}");
    // Past main is only the reset handler, if anything.
    for f in &fns[main_at.unwrap() + 1..] {
        assert_eq!(*f, "Reset_Handler", "{text}");
    }
    for f in &frames[..=main_at.unwrap()] {
        let file = f.file.as_deref().unwrap_or("");
        assert!(
            file.contains("src/") && file.ends_with(".c"),
            "frame without a firmware source file:\n{text}"
        );
        assert!(
            f.line.is_some_and(|l| l > 0),
            "frame without a line:\n{text}"
        );
    }
    // The stack grows down: callers' frames sit at higher addresses, all in RAM.
    for w in frames.windows(2) {
        assert!(
            w[1].sp >= w[0].sp,
            "sp goes down towards the caller:\n{text}"
        );
    }
    assert!(
        frames
            .iter()
            .all(|f| RAM.contains(&f.sp) || f.sp == RAM.end),
        "{text}"
    );
    // The reset handler's return address is lr's reset value.
    assert_eq!(*end, UnwindEnd::Outermost, "{text}");
}

#[test]
fn backtrace_from_pv_port_malloc_reaches_main() {
    let (_qemu, mut t, symbols) = start();
    let unwinder = symbols.unwinder().expect("the firmware has .debug_frame");
    assert!(unwinder.has_debug_frame());
    let malloc = symbols.function("pvPortMalloc").unwrap().entry;
    assert!(unwinder.covers(malloc));
    t.add_breakpoint(malloc, BreakpointKind::Software).unwrap();

    let mut callers = Vec::new();
    for hit in 0..6 {
        run_to(&mut t, malloc);
        // At the entry: CFA = sp + 0 and the return address is still in lr.
        let regs = CoreRegisters::read_r0_to_r15(&mut t).unwrap();
        assert_eq!(u64::from(regs.pc()), malloc);
        let bt = unwind::unwind(&symbols, &mut t, &regs, 64);
        check_malloc_chain(&bt.frames, &bt.end);
        assert_eq!(bt.frames[0].sp, u64::from(regs.sp()));
        let caller = bt
            .frames
            .iter()
            .find(|f| !f.inlined && f.pc != malloc)
            .unwrap();
        assert_eq!(
            caller.pc,
            u64::from(regs.lr() & !1),
            "frame 1 returns to lr"
        );
        assert_eq!(
            symbols.backtrace(&mut t, &regs, 64),
            bt.frames,
            "Symbols::backtrace is the same walk"
        );
        assert_eq!(
            symbols.backtrace(&mut t, &regs, 2).len(),
            2,
            "max_frames holds"
        );

        // A few instructions in, past the prologue's push: the saved lr now comes from the
        // stack, and the chain must be the same.
        for _ in 0..4 {
            t.step().unwrap();
        }
        let inside = CoreRegisters::read_r0_to_r15(&mut t).unwrap();
        let bt2 = unwind::unwind(&symbols, &mut t, &inside, 64);
        check_malloc_chain(&bt2.frames, &bt2.end);
        assert_eq!(
            names(&bt2.frames),
            names(&bt.frames),
            "hit {hit}: entry\n{}inside\n{}",
            show(&bt.frames),
            show(&bt2.frames)
        );
        callers.push(names(&bt.frames).join(" <- "));
    }
    // The hits come from more than one call site (init, load, ...).
    callers.dedup();
    assert!(callers.len() > 1, "{callers:?}");
}

#[test]
fn backtrace_without_cfi_falls_back_to_lr_once_and_crosses_exc_return_frames() {
    let (_qemu, mut t, symbols) = start();
    let malloc = symbols.function("pvPortMalloc").unwrap().entry;
    t.add_breakpoint(malloc, BreakpointKind::Software).unwrap();
    run_to(&mut t, malloc);
    let mut regs = CoreRegisters::read_r0_to_r15(&mut t).unwrap();

    // An EXC_RETURN in lr at a function entry: the frame above is an exception frame. On the
    // process stack with no PSP given, the walk cannot read it and stops there.
    regs.r[14] = 0xFFFF_FFFD;
    let bt = unwind::unwind(&symbols, &mut t, &regs, 64);
    assert_eq!(bt.frames.len(), 1);
    assert_eq!(
        bt.end,
        UnwindEnd::ExceptionFrame {
            exc_return: 0xFFFF_FFFD
        }
    );
    // On the main stack it is the eight words at sp: the walk goes on at the pc stacked there
    // (here whatever the real stack holds), marked as interrupted code.
    regs.r[14] = 0xFFFF_FFF9;
    let bt = unwind::unwind(&symbols, &mut t, &regs, 64);
    let mut stacked = |i: u64| {
        let mut b = [0u8; 4];
        memlife_core::Memory::read(&mut t, u64::from(regs.sp()) + 4 * i, &mut b).unwrap();
        u32::from_le_bytes(b)
    };
    let interrupted = bt
        .interrupted
        .as_ref()
        .expect("the exception frame was crossed");
    assert_eq!(interrupted.exc_return, 0xFFFF_FFF9);
    assert_eq!(interrupted.regs[15], Some(stacked(6)));
    assert_eq!(interrupted.regs[14], Some(stacked(5)));
    assert!(bt.frames.len() > 1, "{}", show(&bt.frames));
    assert_eq!(bt.frames[1].pc, u64::from(stacked(6) & !1));
    assert!(bt.frames[1].interrupted && !bt.frames[0].interrupted);

    // pc outside every function: frame 0 is reported, then lr is tried once.
    let real = CoreRegisters::read_r0_to_r15(&mut t).unwrap();
    let mut odd = real;
    odd.r[15] = 0x0800_0000; // the vector table: data, not a function
    let bt = unwind::unwind(&symbols, &mut t, &odd, 64);
    assert_eq!(bt.frames[0].pc, 0x0800_0000);
    assert_eq!(bt.frames[0].function, None);
    assert!(bt.frames.len() > 1, "{}", show(&bt.frames));
    assert_eq!(bt.frames[1].pc, u64::from(real.lr() & !1));
    // After the one fallback the callers have CFI again: the walk goes on to main's caller.
    assert!(names(&bt.frames).contains(&"main"), "{}", show(&bt.frames));
    assert_eq!(bt.end, UnwindEnd::Outermost, "{}", show(&bt.frames));

    // pc 0 and an unreadable stack end the walk without a panic.
    let mut zero = real;
    zero.r[15] = 0;
    zero.r[14] = 0;
    let bt = unwind::unwind(&symbols, &mut t, &zero, 64);
    assert_eq!(bt.frames.len(), 1);
    assert_eq!(bt.end, UnwindEnd::Outermost);
    // A stack pointer whose frame would wrap past 4 GiB, and one where nothing is mapped.
    let mut wild = real;
    wild.r[15] = symbols.function("main").unwrap().entry as u32 + 8;
    wild.r[13] = 0xFFFF_FFF0;
    let bt = unwind::unwind(&symbols, &mut t, &wild, 64);
    assert_eq!(bt.frames.len(), 1, "{}", show(&bt.frames));
    assert!(
        matches!(bt.end, UnwindEnd::Unsupported { .. }),
        "{:?}",
        bt.end
    );
    wild.r[13] = 0x9000_0000;
    let bt = unwind::unwind(&symbols, &mut t, &wild, 64);
    assert_eq!(bt.frames.len(), 1, "{}", show(&bt.frames));
    assert!(
        matches!(bt.end, UnwindEnd::ReadError { addr, .. } if addr >= 0x9000_0000),
        "{:?}",
        bt.end
    );
}

#[test]
fn typed_reads_of_the_tensor_table() {
    let (_qemu, mut t, symbols) = start();
    let run = symbols.function("inference_run").unwrap().entry;
    t.add_breakpoint(run, BreakpointKind::Software).unwrap();
    // The 2nd entry: after the model switch, the table has been planned twice.
    run_to(&mut t, run);
    run_to(&mut t, run);

    let count = read_variable(&symbols, &mut t, "g_tensor_count").unwrap();
    let count = count.as_u64().unwrap();
    assert!(count > 0, "g_tensor_count {count}");
    let tensors = read_variable(&symbols, &mut t, "g_tensors").unwrap();
    let elements = tensors.elements().unwrap();
    assert!(elements.len() as u64 >= count);
    let mut placed = 0;
    for (i, tensor) in elements.iter().take(count as usize).enumerate() {
        for field in ["name", "addr", "size", "producer", "last_consumer"] {
            assert!(
                tensor.field(field).is_some(),
                "tensor {i} lacks {field}: {tensor:?}"
            );
        }
        let Some(Value::Pointer(name)) = tensor.field("name") else {
            panic!("tensor {i}: name is not a pointer: {tensor:?}");
        };
        let name = read_c_string(&mut t, *name, 64).unwrap();
        assert!(!name.is_empty(), "tensor {i}");
        assert!(matches!(tensor.field("producer"), Some(Value::Int(_))));
        let addr = tensor.field("addr").unwrap().as_u64().unwrap();
        let size = tensor.field("size").unwrap().as_u64().unwrap();
        assert!(size > 0, "{name}");
        if addr != 0 {
            placed += 1;
            assert!(RAM.contains(&addr), "{name} at {addr:#x}");
            assert!(addr + size <= RAM.end, "{name} ends past RAM");
        }
    }
    assert!(placed > 0, "no tensor is placed in the arena");

    // The engine: a struct whose pointers point into RAM.
    let engine = read_variable(&symbols, &mut t, "g_engine").unwrap();
    let arena = engine.field("arena").unwrap();
    assert!(
        matches!(arena, Value::Pointer(a) if RAM.contains(a)),
        "{arena:?}"
    );
    assert!(engine.field("n_ops").unwrap().as_u64().unwrap() > 0);
    let blocks = engine.field("weight_blocks").unwrap().elements().unwrap();
    assert!(!blocks.is_empty());
    let json = engine.to_json();
    assert!(json["op_contexts"].is_u64(), "{json}");

    // The same reads from an offline snapshot of RAM give the same values.
    let mut snap = Snapshot::default();
    let ram = t
        .read_vec(RAM.start, (RAM.end - RAM.start) as usize)
        .unwrap();
    snap.add_region(RAM.start, ram).unwrap();
    assert_eq!(
        read_variable(&symbols, &mut snap, "g_tensors").unwrap(),
        tensors
    );
    assert_eq!(
        read_variable(&symbols, &mut snap, "g_engine").unwrap(),
        engine
    );
}

#[test]
fn typed_read_errors_are_clear() {
    let elf = firmware();
    let symbols = Symbols::load(&elf).unwrap();
    let mut empty = Snapshot::default();
    let err = read_variable(&symbols, &mut empty, "g_tensor").unwrap_err();
    let text = err.to_string();
    assert!(text.contains("no variable named `g_tensor`"), "{text}");
    assert!(
        text.contains("g_tensors"),
        "similar names are offered: {text}"
    );
    let err = read_variable(&symbols, &mut empty, "g_tensors").unwrap_err();
    assert!(
        err.to_string().starts_with("cannot read") && err.to_string().contains("0x2000"),
        "{err}"
    );
}

/// gdb-multiarch's `bt` at the same stop (the 2nd pvPortMalloc entry, on a second QEMU: the
/// firmware is deterministic) names the same functions and return addresses, up to `main`
/// (gdb stops there; we go on to the reset handler).
#[test]
fn backtrace_matches_gdb_multiarch() {
    const HITS: usize = 2;
    let (_qemu, mut t, symbols) = start();
    let malloc = symbols.function("pvPortMalloc").unwrap().entry;
    t.add_breakpoint(malloc, BreakpointKind::Software).unwrap();
    for _ in 0..HITS {
        run_to(&mut t, malloc);
    }
    let regs = CoreRegisters::read_r0_to_r15(&mut t).unwrap();
    let ours = symbols.backtrace(&mut t, &regs, 64);

    let elf = firmware();
    let other = QemuProcess::start(MACHINE, &elf, &[]).unwrap();
    let mut cmd = std::process::Command::new("gdb-multiarch");
    cmd.args(["-q", "-nx", "-batch"])
        .args(["-ex", "set pagination off"])
        .args(["-ex", &format!("target remote {}", other.addr())])
        .args(["-ex", "break pvPortMalloc"]);
    for _ in 0..HITS {
        cmd.args(["-ex", "continue"]);
    }
    cmd.args(["-ex", "bt"]).arg(&elf);
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) => panic!("cannot run gdb-multiarch ({e}): install it (apt: gdb-multiarch)"),
    };
    let text = String::from_utf8_lossy(&out.stdout);
    // "#1  0x08001362 in mem_alloc (size=...) at src/mem.c:64" or "#4  model_load (e=...) at ..."
    let theirs: Vec<(Option<u64>, String)> = text
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| {
            let mut words = l.split_whitespace().skip(1);
            let first = words.next().unwrap_or("");
            match first.strip_prefix("0x") {
                Some(hex) => {
                    let pc = u64::from_str_radix(hex, 16).ok();
                    let _in = words.next();
                    (pc, words.next().unwrap_or("").to_string())
                }
                None => (None, first.to_string()),
            }
        })
        .collect();
    // gdb adds a frame for a function that tail-called the next one (`b.w`, from DWARF call-site
    // records): the firmware's `mem_try_alloc` is a lone `b.w pvPortMalloc`. No such frame is on
    // the stack, and memlife shows the stack; drop the frames whose "return address" follows a
    // branch without link, which no call could have left.
    let theirs: Vec<(Option<u64>, String)> = theirs
        .into_iter()
        .filter(|(pc, _)| !pc.is_some_and(|pc| follows_a_tail_call(&mut t, pc)))
        .collect();
    assert!(
        theirs.len() > 3,
        "gdb printed no backtrace:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let main_at = ours
        .iter()
        .position(|f| f.function.as_deref() == Some("main"))
        .unwrap();
    let ours_to_main = &ours[..=main_at];
    assert_eq!(
        ours_to_main
            .iter()
            .map(|f| f.function.clone().unwrap_or_default())
            .collect::<Vec<_>>(),
        theirs.iter().map(|(_, f)| f.clone()).collect::<Vec<_>>(),
        "ours:\n{}gdb:\n{text}",
        show(&ours)
    );
    for (f, (pc, name)) in ours_to_main.iter().zip(&theirs) {
        if let Some(pc) = pc {
            assert_eq!(
                f.pc,
                *pc,
                "return address of {name}:\nours:\n{}gdb:\n{text}",
                show(&ours)
            );
        }
    }
}

/// Whether the Thumb-2 instruction ending at `pc` is a `B.W` (encoding T4: a branch without
/// link), so that `pc` cannot be a return address.
fn follows_a_tail_call(t: &mut GdbRemote, pc: u64) -> bool {
    let mut insn = [0u8; 4];
    if pc < 4 || t.read(pc - 4, &mut insn).is_err() {
        return false;
    }
    let hw1 = u16::from_le_bytes([insn[0], insn[1]]);
    let hw2 = u16::from_le_bytes([insn[2], insn[3]]);
    hw1 & 0xf800 == 0xf000 && hw2 & 0xd000 == 0x9000
}
