//! `memlife serve` with LLDB as the client (`lldb --batch`, `gdb-remote`), on the gdb-remote
//! backend (QEMU's gdbstub) and on the probe-rs path (memlife's virtual probe over QEMU).
//! The write watchpoint is the point: both backends stop before the store, and LLDB must be
//! told so to report the value the firmware wrote.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use common::*;

/// `memlife serve` on the heap4 leak firmware with these backend options.
fn start(backend: &[&str]) -> serve::Served {
    serve::start(&elf("heap4", "leak-on-switch"), backend)
}

/// The number after `prefix` on each line that starts with it (leading spaces ignored).
fn numbers_after(text: &str, prefix: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix(prefix))
        .filter_map(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .find(|w| !w.is_empty())
        })
        .map(|n| n.parse().unwrap())
        .collect()
}

/// The values of the `memory read` commands: the line after each echo, `0xADDR: N`.
fn counter_reads(text: &str) -> Vec<u64> {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .filter(|w| w[0].starts_with("(lldb) memory read"))
        .map(|w| {
            let (_, n) = w[1]
                .split_once(": ")
                .unwrap_or_else(|| panic!("not a memory line: {}\n{text}", w[1]));
            n.trim()
                .parse()
                .unwrap_or_else(|_| panic!("not a number: {}\n{text}", w[1]))
        })
        .collect()
}

/// The session of the issue: break, continue, a register, a backtrace, memory, `monitor heap`, a write
/// watchpoint on `xFreeBytesRemaining`, detach.
fn lldb_session(backend: &[&str]) {
    let elf = elf("heap4", "leak-on-switch");
    let served = start(backend);
    let addr = served.addr.clone();
    let counter = "memory read --size 4 --format d --count 1 &xFreeBytesRemaining";
    let out = lldb_batch(
        &elf,
        &addr,
        &[
            "breakpoint set --name model_release",
            "continue",
            "register read pc",
            "thread backtrace",
            counter,
            "process plugin packet monitor heap",
            "watchpoint set variable xFreeBytesRemaining",
            "continue",
            counter,
            "detach",
        ],
    );
    let text = format!("{}{}", stdout(&out), stderr(&out));
    let log = served.log();
    assert!(out.status.success(), "{text}\n{log}");
    assert!(text.contains("stop reason = breakpoint 1.1"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("pc = 0x") && l.contains("`model_release")),
        "register read pc at the breakpoint: {text}"
    );
    // LLDB unwinds through memlife (registers and stack read from the target).
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("frame #1: ") && l.contains("`main at main.c")),
        "the caller of model_release: {text}"
    );
    // Memory as LLDB reads it, at the breakpoint and after the watchpoint's stop.
    let memory = counter_reads(&text);
    assert_eq!(memory.len(), 2, "two reads of xFreeBytesRemaining: {text}");
    // memlife's own heap walk agrees with LLDB's read of the firmware's counter.
    let walked = numbers_after(&text, "freertos-heap4: ");
    assert_eq!(walked, vec![memory[0]], "monitor heap: {text}");
    assert!(text.contains("Watchpoint 1 hit"), "{text}");
    assert!(text.contains("stop reason = watchpoint 1"), "{text}");
    let old = numbers_after(&text, "old value: ");
    let new = numbers_after(&text, "new value: ");
    // LLDB prints `new value:` once when the watchpoint is set, then old/new at the hit.
    assert_eq!(old, vec![memory[0]], "old value at the hit: {text}");
    assert_eq!(new.len(), 2, "{text}");
    assert_eq!(
        new[0], memory[0],
        "value when the watchpoint was set: {text}"
    );
    assert_ne!(
        new[1], old[0],
        "the hit reports the store, not the old value: {text}"
    );
    assert_eq!(
        new[1], memory[1],
        "the new value LLDB reports is what memory holds after the stop: {text}"
    );
    assert!(text.contains("Process 1 detached"), "{text}");
    assert!(log.contains("detached; the target runs on"), "{log}");
}

#[test]
fn lldb_watches_through_memlife_serve_on_qemu() {
    lldb_session(&["--qemu", "netduinoplus2"]);
}

#[test]
fn lldb_watches_through_memlife_serve_on_the_probe_rs_path() {
    lldb_session(&["--chip", "STM32F405RGTx", "--probe", "qemu"]);
}
