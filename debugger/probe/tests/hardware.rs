//! Opt-in smoke test on a real board: hardware tests never run by default (README, "Real
//! boards").
//!
//! ```sh
//! MEMLIFE_PROBE_CHIP=STM32F407VGTx cargo test -p memlife-probe --test hardware -- --nocapture
//! MEMLIFE_PROBE_CHIP=esp32s3 cargo test -p memlife-probe --features esp32 --test hardware
//! ```
//!
//! `MEMLIFE_PROBE=VID:PID[:SERIAL]` picks the probe. The board must run some firmware; the test
//! halts it, reads registers and stack memory, writes one word below the stack pointer and
//! restores it, steps, fills every breakpoint unit, sets and clears a data watchpoint
//! (Cortex-M), and lets the firmware run on.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

use std::time::Duration;

use memlife_core::{
    BreakpointKind, ErrorKind, Memory, Register, Registers, StopReason, Target, WatchKind,
};
use memlife_probe::{ProbeOptions, ProbeSelector, ProbeTarget};

#[test]
fn board_smoke() {
    let Ok(chip) = std::env::var("MEMLIFE_PROBE_CHIP") else {
        eprintln!("MEMLIFE_PROBE_CHIP is not set: no board test");
        return;
    };
    let mut opts = ProbeOptions::new(chip);
    if let Ok(sel) = std::env::var("MEMLIFE_PROBE") {
        opts.probe = Some(ProbeSelector::parse(&sel).unwrap());
    }
    let mut t = ProbeTarget::open(&opts).unwrap();
    eprintln!("attached: {}", t.describe());

    let c = t.control().unwrap();
    assert_eq!(c.halt().unwrap(), StopReason::Halted);
    assert!(c.is_halted());
    let pc = t.read_register(Register::ProgramCounter).unwrap();
    let sp = t.read_register(Register::StackPointer).unwrap();
    eprintln!("pc {pc:#010x} sp {sp:#010x}");
    let regs = t.read_all_registers().unwrap();
    assert!(regs.iter().any(|(n, v)| n == "pc" && *v == pc), "{regs:?}");

    // Word transfers: an unaligned read equals the same bytes of an aligned one.
    let whole = t.read_vec(sp & !3, 64).unwrap();
    let part = t.read_vec((sp & !3) + 3, 9).unwrap();
    assert_eq!(part, whole[3..12]);

    // A write below the stack pointer (free stack of a halted core), read back and restored.
    let scratch = (sp & !3) - 16;
    let saved = t.read_vec(scratch, 8).unwrap();
    let w = t.memory_write().unwrap();
    w.write(scratch + 1, &[0xA5, 0x5A, 0xC3, 0x3C, 0x99])
        .unwrap();
    assert_eq!(
        t.read_vec(scratch + 1, 5).unwrap(),
        [0xA5, 0x5A, 0xC3, 0x3C, 0x99]
    );
    t.memory_write().unwrap().write(scratch, &saved).unwrap();
    assert_eq!(t.read_vec(scratch, 8).unwrap(), saved);

    assert_eq!(t.control().unwrap().step().unwrap(), StopReason::Step);

    // Every breakpoint unit, then one more: the error names the count.
    let bps = t.breakpoints().unwrap();
    let mut n = 0u64;
    let err = loop {
        match bps.add_breakpoint(0x100 + 4 * n, BreakpointKind::Software) {
            Ok(()) => n += 1,
            Err(e) => break e,
        }
        assert!(n < 64, "no breakpoint limit found");
    };
    eprintln!("{n} hardware breakpoints; then: {err}");
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(err.to_string().contains(&n.to_string()), "{err}");
    for i in 0..n {
        bps.remove_breakpoint(0x100 + 4 * i, BreakpointKind::Software)
            .unwrap();
    }

    if let Some(w) = t.watchpoints() {
        match w.add_watchpoint(scratch, 4, WatchKind::Write) {
            Ok(()) => w.remove_watchpoint(scratch, 4, WatchKind::Write).unwrap(),
            Err(e) => eprintln!("watchpoint: {e}"),
        }
    }

    let c = t.control().unwrap();
    c.resume().unwrap();
    assert!(!c.is_halted());
    // Nothing is armed, so a stop now would be a bug (or the firmware's own bkpt).
    let stop = c.wait_for_stop(Duration::from_millis(200)).unwrap();
    eprintln!("after resume: {stop:?}");
    t.disconnect(true).unwrap();
}
