//! The probe-rs path end to end without a board: `--chip STM32F405RGTx --probe qemu` puts
//! memlife's virtual SWD probe between probe-rs and QEMU, so everything from probe-rs up
//! (attach, halt, FPB breakpoints, DWT watchpoints, memory, registers, reset) runs as it does
//! with a real probe. Each result is compared with the gdb-remote backend on the same firmware.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::*;
use memlife_core::{Control, Memory, Registers, Target};

const CHIP: &[&str] = &["--chip", "STM32F405RGTx", "--probe", "qemu"];

/// A heap walk's JSON without the fields that name the backend.
fn walk(mut v: serde_json::Value) -> serde_json::Value {
    let o = v.as_object_mut().unwrap();
    o.remove("target");
    o.remove("link");
    v
}

fn heap_json(elf: &Path, backend: &[&str], hit: &str) -> serde_json::Value {
    let mut args = vec![
        "heap",
        "--elf",
        elf.to_str().unwrap(),
        "--at",
        "model_release",
        "--hit",
        hit,
        "--json",
    ];
    args.extend_from_slice(backend);
    memlife_json(&args)
}

#[test]
fn heap_walks_through_probe_rs_equal_the_gdb_remote_ones() {
    for alloc in ALLOCS {
        for scenario in SCENARIOS {
            let elf = elf(alloc, scenario);
            let probe = heap_json(&elf, CHIP, "2");
            assert!(
                probe["target"]
                    .as_str()
                    .unwrap()
                    .starts_with("probe-rs STM32F405RGTx via QEMU virtual SWD probe"),
                "{}",
                probe["target"]
            );
            let gdb = heap_json(&elf, &["--qemu", "netduinoplus2"], "2");
            assert_eq!(walk(probe), walk(gdb), "{alloc}-{scenario}");
        }
    }
}

#[test]
fn attaching_under_reset_restarts_the_firmware_and_walks_the_same_heap() {
    let elf = elf("nano", "healthy");
    let mut backend = CHIP.to_vec();
    backend.push("--connect-under-reset");
    let probe = heap_json(&elf, &backend, "1");
    let gdb = heap_json(&elf, &["--qemu", "netduinoplus2"], "1");
    assert_eq!(walk(probe), walk(gdb));
}

#[test]
fn a_snapshot_through_probe_rs_walks_offline_like_the_live_heap() {
    let elf = elf("tlsf", "fragmentation");
    let e = elf.to_str().unwrap();
    let dir = tempdir("vprobe-snapshot");
    let snap = dir.join("frag.mlsnap");
    let mut args = vec![
        "snapshot",
        "--elf",
        e,
        "--at",
        "model_release",
        "--output",
        snap.to_str().unwrap(),
    ];
    args.extend_from_slice(CHIP);
    let out = run_memlife(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let offline = memlife_json(&[
        "heap",
        "--elf",
        e,
        "--snapshot",
        snap.to_str().unwrap(),
        "--json",
    ]);
    let live = heap_json(&elf, &["--qemu", "netduinoplus2"], "1");
    let strip = |mut v: serde_json::Value| {
        let o = v.as_object_mut().unwrap();
        for k in ["target", "link", "at", "pc"] {
            o.remove(k);
        }
        v
    };
    assert_eq!(strip(offline), strip(live));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn probes_lists_the_virtual_probe() {
    let out = run_memlife(&["probes"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.lines()
            .any(|l| l.starts_with("QEMU virtual SWD probe") && l.ends_with("--probe qemu")),
        "{text}"
    );
}

#[test]
fn the_virtual_probe_refuses_what_it_cannot_present() {
    let elf = elf("heap4", "healthy");
    let e = elf.to_str().unwrap();
    let out = run_memlife(&[
        "heap",
        "--elf",
        e,
        "--chip",
        "nRF52840_xxAA",
        "--probe",
        "qemu",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("not an STM32F4 chip"),
        "{}",
        stderr(&out)
    );
    let out = run_memlife(&[
        "heap",
        "--elf",
        e,
        "--chip",
        "STM32F405RGTx",
        "--probe",
        "qemu:",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("QEMU machine name"),
        "{}",
        stderr(&out)
    );
}

/// `memlife audit --config examples/EXAMPLE/memlife.toml --elf ELF SCRIPT` with `backend`:
/// the exit code, stdout and the JSON report. Through probe-rs a stop costs several times what
/// it costs over gdb-remote, so the deadline is longer than `run_memlife`'s.
fn audit(
    example: &str,
    elf: &Path,
    script: &str,
    backend: &[&str],
) -> (i32, String, serde_json::Value) {
    let dir = tempdir("vprobe-audit");
    let json = dir.join("report.json");
    let mut cmd = memlife();
    cmd.arg("audit")
        .arg("--config")
        .arg(repo().join("examples").join(example).join("memlife.toml"))
        .arg("--elf")
        .arg(elf)
        .arg("--json")
        .arg(&json)
        .arg("--out")
        .arg(&dir)
        .arg(repo().join("scripts").join(script))
        .args(backend);
    let out = run_with_timeout(cmd, Duration::from_secs(600));
    let report = std::fs::read_to_string(&json)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(serde_json::Value::Null);
    let _ = std::fs::remove_dir_all(&dir);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    (out.status.code().unwrap_or(-1), text, report)
}

/// What an audit found, without the facts of the run (backend, times, stops): the checks with
/// their messages, every phase with its figures and spans, every traced event with its site,
/// and the heap map after the last release.
fn findings(report: &serde_json::Value) -> serde_json::Value {
    let mut v = report.clone();
    let o = v.as_object_mut().unwrap();
    for k in ["run", "dumps"] {
        o.remove(k);
    }
    v
}

/// The breakpoints an audit report says it armed at most, and the target's limit.
fn armed(report: &serde_json::Value) -> (u64, Option<u64>, Option<u64>) {
    let b = &report["run"]["breakpoints"];
    (
        b["max_armed"].as_u64().unwrap_or_else(|| panic!("{b}")),
        b["capacity"].as_u64(),
        b["planned"].as_u64(),
    )
}

/// What is left of [`findings`] once the allocations made between phases are taken out, with
/// the event numbers they shifted: an audit armed by state does not trace them.
fn findings_in_phases(report: &serde_json::Value) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(o) => {
                for k in ["seq", "seq_begin", "seq_end"] {
                    o.remove(k);
                }
                // A phase's or span's `events` is the range of event numbers it holds.
                if o.get("events")
                    .is_some_and(|e| !e.is_array() || o.contains_key("function"))
                {
                    o.remove("events");
                }
                o.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = findings(report);
    let events: Vec<serde_json::Value> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e["phase"].is_null())
        .cloned()
        .collect();
    // The run's totals, of those events.
    for (kind, count, bytes) in [
        ("alloc", "allocs", "alloc_bytes"),
        ("free", "frees", "free_bytes"),
    ] {
        let of_kind: Vec<&serde_json::Value> =
            events.iter().filter(|e| e["kind"] == kind).collect();
        let sum: u64 = of_kind.iter().map(|e| e["size"].as_u64().unwrap()).sum();
        v["totals"][count] = of_kind.len().into();
        v["totals"][bytes] = sum.into();
    }
    v["totals"]["events"] = events.len().into();
    v["events"] = serde_json::Value::Array(events);
    strip(&mut v);
    v
}

/// lifecycle.rhai through the 6 FPB comparators of an STM32F4 finds what it finds over the
/// gdb-remote backend, which arms every breakpoint at once: allocations are read at their
/// caller's return instead of at the allocator's return instructions, and only the innermost
/// awaited returns are armed. On heap4 and the ESP-IDF heap the reports are the same but for
/// the run's facts. The newlib-nano firmware also allocates and frees its whole heap once
/// before the first phase (`mem_init`, main.c:33), which an audit armed by state does not trace:
/// those two events are missing, and the event numbers after them are two lower; every check,
/// phase figure, span, event site and the heap map are the same.
#[test]
fn lifecycle_audits_through_six_comparators_find_what_gdb_remote_finds() {
    for (alloc, scenario, example, code) in [
        ("heap4", "healthy", "healthy", 0),
        ("tlsf", "healthy", "healthy", 0),
        ("heap4", "leak-on-switch", "leak-on-switch", 1),
        ("nano", "healthy", "healthy", 0),
    ] {
        let what = format!("{alloc}-{scenario}");
        let elf = elf(alloc, scenario);
        let gdb_flags = ["--qemu", "netduinoplus2"];
        let (gcode, gtext, gdb) = audit(example, &elf, "lifecycle.rhai", &gdb_flags);
        assert_eq!(gcode, code, "{what} over gdb-remote: {gtext}");
        let (pcode, ptext, probe) = audit(example, &elf, "lifecycle.rhai", CHIP);
        assert_eq!(pcode, code, "{what} through probe-rs: {ptext}");
        let (max, capacity, planned) = armed(&probe);
        assert_eq!(capacity, Some(6), "{what}");
        assert!(max <= 6, "{what}: {max} armed");
        assert_eq!(planned, Some(max), "{what}: the estimate is what was armed");
        // The gdbstub has no limit: everything armed, more than a board has.
        let (gmax, gcapacity, _) = armed(&gdb);
        assert_eq!(gcapacity, None);
        assert!(gmax > 6, "{what}: {gmax}");
        assert!(!gdb["events"].as_array().unwrap().is_empty(), "{what}");
        let (g, p) = if alloc == "nano" {
            (findings_in_phases(&gdb), findings_in_phases(&probe))
        } else {
            (findings(&gdb), findings(&probe))
        };
        assert_eq!(g["checks"], p["checks"], "{what}");
        assert_eq!(g["phases"], p["phases"], "{what}");
        assert_eq!(g["events"], p["events"], "{what}");
        assert_eq!(g, p, "{what}");
    }
}

/// leak.rhai through probe-rs names the same leak as over gdb-remote: 368 B per switch,
/// allocated at build_graph (engine.c:51).
#[test]
fn the_leak_through_six_comparators_is_the_one_gdb_remote_finds() {
    let elf = elf("heap4", "leak-on-switch");
    let (gcode, gtext, gdb) = audit(
        "leak-on-switch",
        &elf,
        "leak.rhai",
        &["--qemu", "netduinoplus2"],
    );
    let (pcode, ptext, probe) = audit("leak-on-switch", &elf, "leak.rhai", CHIP);
    assert_eq!((gcode, pcode), (1, 1), "{gtext}\n{ptext}");
    let (max, capacity, _) = armed(&probe);
    assert!(max <= 6 && capacity == Some(6), "{max} {capacity:?}");
    let leak = |r: &serde_json::Value| {
        r["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "leak")
            .map(|c| (c["verdict"].clone(), c["message"].clone()))
            .unwrap_or_else(|| panic!("no leak check: {r}"))
    };
    let (verdict, message) = leak(&probe);
    assert_eq!(verdict, "fail");
    let message = message.as_str().unwrap();
    assert!(message.contains("368 B lost per switch"), "{message}");
    assert!(message.contains("build_graph (engine.c:51)"), "{message}");
    assert_eq!(leak(&gdb), leak(&probe));
}

/// `memlife serve` through the virtual probe, and everything it printed so far.
struct Server;

impl Server {
    fn start(elf: &Path) -> serve::Served {
        serve::start(elf, CHIP)
    }
}

fn all_output(o: &Output) -> String {
    format!("{}{}", stdout(o), stderr(o))
}

fn number_after(text: &str, prefix: &str) -> u64 {
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix(prefix))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{text}"))
}

#[test]
fn gdb_drives_serve_through_probe_rs() {
    let elf = elf("heap4", "leak-on-switch");
    let server = Server::start(&elf);
    let out = gdb_batch(
        &elf,
        &server.addr,
        &[
            "break model_release",
            "continue",
            "print xFreeBytesRemaining",
            "monitor heap",
            "delete 1",
            "watch xFreeBytesRemaining",
            "continue",
            "delete 2",
            "info registers pc",
            "stepi",
            "info registers pc",
            "detach",
        ],
    );
    let text = all_output(&out);
    assert!(text.contains("Breakpoint 1, model_release"), "{text}");
    let gdb_free = number_after(&text, "$1 = ");
    let monitor_free = number_after(&text, "free ");
    assert_eq!(gdb_free, monitor_free, "{text}");
    assert!(text.contains("freertos-heap4: "), "{text}");
    // The watchpoint is a DWT comparator; the stop is its MATCHED bit.
    assert!(
        text.contains("Hardware watchpoint 2: xFreeBytesRemaining"),
        "{text}"
    );
    let old = number_after(&text, "Old value = ");
    let new = number_after(&text, "New value = ");
    assert_eq!(old, gdb_free, "{text}");
    assert_ne!(new, old, "{text}");
    // stepi moves the pc by one instruction.
    let pcs: Vec<u64> = text
        .lines()
        // gdb's `info registers pc` lines (monitor heap prints a `pc` line too, without `<`).
        .filter(|l| l.contains('<'))
        .filter_map(|l| l.strip_prefix("pc "))
        .filter_map(|l| l.split_whitespace().next())
        .map(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).unwrap())
        .collect();
    assert_eq!(pcs.len(), 2, "{text}");
    assert_ne!(pcs[0], pcs[1], "{text}");
    assert!(text.contains("detached"), "{text}");
    assert!(
        server.log().contains("detached; the target runs on"),
        "{}",
        server.log()
    );
}

#[test]
fn a_seventh_breakpoint_is_refused_as_on_a_real_stm32f4() {
    let elf = elf("heap4", "healthy");
    let server = Server::start(&elf);
    let out = gdb_batch(
        &elf,
        &server.addr,
        &[
            "break model_release",
            "break model_load",
            "break pvPortMalloc",
            "break graph_build",
            "break inference_run",
            "break prvInsertBlockIntoFreeList",
            "break vPortFree",
            "continue",
            "detach",
        ],
    );
    let text = all_output(&out);
    assert!(text.contains("Cannot insert breakpoint"), "{text}");
    let log = server.log();
    assert!(
        log.contains("refused: all 6 hardware breakpoints are in use"),
        "{log}"
    );
}

#[test]
fn memory_that_is_not_there_is_a_bus_fault_gdb_survives() {
    // 0x30000000 is nothing on QEMU's netduinoplus2: its gdbstub refuses the read, the virtual
    // probe answers FAULT as a real AHB-AP does, and gdb hears "cannot access memory" as it does
    // from QEMU's own gdbstub, instead of the session ending on a "dead link".
    let elf = elf("heap4", "healthy");
    let server = Server::start(&elf);
    let out = gdb_batch(
        &elf,
        &server.addr,
        &["x/x 0x30000000", "print xFreeBytesRemaining", "detach"],
    );
    let text = all_output(&out);
    assert!(
        text.contains("Cannot access memory at address 0x30000000"),
        "{text}"
    );
    assert!(text.contains("$1 = "), "the session went on: {text}");
    assert!(text.contains("detached"), "{text}");
    let log = server.log();
    assert!(!log.contains("error:"), "{log}");
}

/// QEMU's gdbstub under the virtual probe, whose reset fails on the link while `fails` is
/// above 0 (a board that drops the debug connection while it resets).
struct FailingReset {
    inner: memlife_rsp::GdbRemote,
    fails: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

impl Memory for FailingReset {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> memlife_core::Result<()> {
        self.inner.read(addr, buf)
    }
}

impl Registers for FailingReset {
    fn read_register(&mut self, reg: memlife_core::Register) -> memlife_core::Result<u64> {
        self.inner.read_register(reg)
    }
    fn write_register(
        &mut self,
        reg: memlife_core::Register,
        value: u64,
    ) -> memlife_core::Result<()> {
        self.inner.write_register(reg, value)
    }
    fn read_all_registers(&mut self) -> memlife_core::Result<Vec<(String, u64)>> {
        self.inner.read_all_registers()
    }
}

impl Control for FailingReset {
    fn halt(&mut self) -> memlife_core::Result<memlife_core::StopReason> {
        self.inner.control().unwrap().halt()
    }
    fn resume(&mut self) -> memlife_core::Result<()> {
        self.inner.control().unwrap().resume()
    }
    fn step(&mut self) -> memlife_core::Result<memlife_core::StopReason> {
        self.inner.control().unwrap().step()
    }
    fn wait_for_stop(
        &mut self,
        timeout: Duration,
    ) -> memlife_core::Result<Option<memlife_core::StopReason>> {
        self.inner.control().unwrap().wait_for_stop(timeout)
    }
    fn reset(&mut self, halt: bool) -> memlife_core::Result<()> {
        use std::sync::atomic::Ordering;
        if self.fails.load(Ordering::SeqCst) > 0 {
            self.fails.fetch_sub(1, Ordering::SeqCst);
            return Err(memlife_core::TargetError::transport(
                "resetting",
                std::io::Error::from(std::io::ErrorKind::ConnectionReset),
            ));
        }
        self.inner.control().unwrap().reset(halt)
    }
    fn is_halted(&self) -> bool {
        Control::is_halted(&self.inner)
    }
}

impl Target for FailingReset {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn control(&mut self) -> Option<&mut dyn Control> {
        Some(self)
    }
    fn breakpoints(&mut self) -> Option<&mut dyn memlife_core::Breakpoints> {
        self.inner.breakpoints()
    }
    fn watchpoints(&mut self) -> Option<&mut dyn memlife_core::Watchpoints> {
        self.inner.watchpoints()
    }
    fn memory_write(&mut self) -> Option<&mut dyn memlife_core::MemoryWrite> {
        self.inner.memory_write()
    }
    fn as_memory(&mut self) -> &mut dyn Memory {
        self
    }
}

/// A probe-rs board whose reset fails on the link: without a way to open its probe again the
/// reset's error is the link's; with one (as `memlife` gives the virtual probe and a USB probe)
/// the session is attached again, once, the breakpoints programmed again and the reset retried:
/// the core is at the reset vector and stops at the breakpoint set before.
#[test]
fn a_reset_that_fails_on_the_link_attaches_again_and_resets() {
    use memlife_core::{ErrorKind, Register, StopReason};
    use std::sync::atomic::{AtomicU32, Ordering};
    let elf = elf("heap4", "healthy");
    let release = memlife_dwarf::Symbols::load(&elf)
        .unwrap()
        .function("model_release")
        .unwrap()
        .entry;
    let qemu = memlife_rsp::QemuProcess::start("netduinoplus2", &elf, &[]).unwrap();
    let remote = qemu.connect().unwrap();
    let regs = memlife_vprobe::regsel::RegMap::new(remote.layout().registers());
    let fails = std::sync::Arc::new(AtomicU32::new(1));
    let failing = FailingReset {
        inner: remote,
        fails: std::sync::Arc::clone(&fails),
    };
    let probe = memlife_vprobe::VirtualProbe::new(
        Box::new(failing),
        regs,
        memlife_vprobe::Chip::stm32f405(),
    );
    let opts = memlife_probe::ProbeOptions::new("STM32F405RGTx");
    let mut target =
        memlife_probe::ProbeTarget::attach(probe.into_probe(), "vprobe".into(), &opts).unwrap();

    let e = target.control().unwrap().reset(true).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Transport, "{e}");
    assert_eq!(fails.load(Ordering::SeqCst), 0);

    fails.store(1, Ordering::SeqCst);
    let addr = qemu.addr().to_string();
    let reopened = std::sync::Arc::new(AtomicU32::new(0));
    let count = std::sync::Arc::clone(&reopened);
    target.set_reopen(Box::new(move || {
        count.fetch_add(1, Ordering::SeqCst);
        let remote = memlife_rsp::GdbRemote::connect(&addr).unwrap();
        Ok(memlife_vprobe::VirtualProbe::over_qemu(remote)
            .unwrap()
            .into_probe())
    }));
    target
        .breakpoints()
        .unwrap()
        .add_breakpoint(release, memlife_core::BreakpointKind::Hardware)
        .unwrap();
    target.control().unwrap().reset(true).unwrap();
    assert_eq!(reopened.load(Ordering::SeqCst), 1, "attached again once");
    assert_eq!(fails.load(Ordering::SeqCst), 0);
    let mut vector = [0u8; 4];
    target.read(0x0800_0004, &mut vector).unwrap();
    let reset_vector = u64::from(u32::from_le_bytes(vector) & !1);
    assert_eq!(
        target.read_register(Register::ProgramCounter).unwrap(),
        reset_vector
    );
    let c = target.control().unwrap();
    c.resume().unwrap();
    assert_eq!(
        c.wait_for_stop(Duration::from_secs(30)).unwrap(),
        Some(StopReason::Breakpoint(release))
    );
    let _ = target.disconnect(true);
    drop(target);
    drop(qemu);
}
