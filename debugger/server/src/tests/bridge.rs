//! The bridge: dump-on stops continued transparently, their limit and their end with the
//! client, what a departing client leaves behind, the firmware's end, stops as gdb hears them.

use gdbstub::stub::SingleThreadStopReason;

use crate::bridge::StopReport;
use gdbstub::target::ext::breakpoints::WatchKind as GdbWatchKind;
use memlife_core::{BreakpointKind, StopReason, WatchKind};
use memlife_testkit::live::Run;

use super::{Bench, entry};
use crate::bridge::GdbWatchpoint;

/// Resumes the fake core and handles its stops as the event loop does, until one is for gdb
/// or the script runs out.
fn run(b: &mut Bench) -> Option<StopReport> {
    b.bridge.target.control().unwrap().resume().unwrap();
    for _ in 0..1000 {
        let stop = b
            .bridge
            .target
            .control()
            .unwrap()
            .wait_for_stop(std::time::Duration::ZERO)
            .unwrap()?;
        if let Some(report) = b.bridge.on_backend_stop(stop).unwrap() {
            return Some(report);
        }
    }
    panic!("the stops never ended");
}

#[test]
fn a_dump_on_without_a_gdb_breakpoint_dumps_and_continues() {
    let mut b = Bench::new("dump-on-continues", |_| {});
    let release = entry("model_release");
    let out = b.monitor("dump-on model_release rel-{n}.json").unwrap();
    assert!(out.contains("dumping the heap to rel-{n}.json"), "{out}");
    assert!(
        b.probe
            .state()
            .breakpoints
            .contains(&(release, BreakpointKind::Software))
    );
    b.probe.script([
        Run::Pass(release),
        Run::Pass(0x0800_0100),
        Run::Pass(release),
    ]);
    assert_eq!(run(&mut b), None, "gdb hears of no stop");
    assert_eq!(b.files(), ["rel-1.json", "rel-2.json"]);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(b.dir.join("rel-2.json")).unwrap()).unwrap();
    assert!(json["total_free"].as_u64().is_some(), "{json}");
    let out = b.monitor("dump-off model_release").unwrap();
    assert_eq!(out, "no more dumps at model_release (2 written)\n");
    assert!(b.probe.state().breakpoints.is_empty());
}

/// With gdb's own breakpoint at the same place, the dump is written and gdb hears of the stop;
/// removing gdb's breakpoint keeps memlife's.
#[test]
fn a_dump_on_under_a_gdb_breakpoint_dumps_and_reports_the_stop() {
    let mut b = Bench::new("dump-on-reports", |_| {});
    let release = entry("model_release");
    b.bridge
        .gdb_breakpoints
        .push((release, BreakpointKind::Software));
    b.monitor("dump-on model_release d-{n}.json").unwrap();
    b.probe.script([Run::Pass(release)]);
    assert_eq!(
        run(&mut b),
        Some(SingleThreadStopReason::SwBreak(()).into())
    );
    assert_eq!(b.files(), ["d-1.json"]);
}

/// The red team's 384 files in 15 s: a dump-on ends by itself after --max-dumps dumps.
#[test]
fn a_dump_on_ends_after_its_limit() {
    let mut b = Bench::new("dump-on-limit", |o| o.max_dumps = 3);
    let release = entry("model_release");
    b.monitor("dump-on model_release x-{n}.json").unwrap();
    b.probe.script(std::iter::repeat_n(Run::Pass(release), 10));
    assert_eq!(run(&mut b), None);
    assert_eq!(b.files(), ["x-1.json", "x-2.json", "x-3.json"]);
    assert!(b.bridge.dump_on.is_empty());
    assert!(
        b.probe.state().breakpoints.is_empty(),
        "its breakpoint went"
    );
    let told = b.told();
    assert!(
        told.iter()
            .any(|t| t.contains("no more dumps at model_release (3 written)")
                && t.contains("--max-dumps")),
        "{told:?}"
    );
}

/// A client that leaves takes its dump-ons, its breakpoints and watchpoints with it; the core
/// runs on and nothing more is written.
#[test]
fn a_departing_client_leaves_nothing_behind() {
    let mut b = Bench::new("detach", |_| {});
    let release = entry("model_release");
    let switch = entry("model_switch");
    b.bridge.on_attach();
    b.monitor("dump-on model_release y-{n}.json").unwrap();
    for (addr, kind) in [
        (switch, BreakpointKind::Hardware),
        (release, BreakpointKind::Software),
    ] {
        b.bridge
            .target
            .breakpoints()
            .unwrap()
            .add_breakpoint(addr, kind)
            .unwrap();
        b.bridge.gdb_breakpoints.push((addr, kind));
    }
    b.bridge
        .target
        .watchpoints()
        .unwrap()
        .add_watchpoint(0x2000_0000, 4, WatchKind::Write)
        .unwrap();
    b.bridge.gdb_watchpoints.push(GdbWatchpoint {
        addr: 0x2000_0000,
        len: 4,
        kind: WatchKind::Write,
    });
    b.bridge.on_detach(true);
    let state = b.probe.state();
    assert!(state.breakpoints.is_empty(), "{:?}", state.breakpoints);
    assert!(state.watchpoints.is_empty());
    assert!(state.running, "detach lets the core run on");
    drop(state);
    assert!(b.bridge.dump_on.is_empty());
    assert!(
        b.told()
            .iter()
            .any(|t| t.contains("no more dumps at model_release (0 written)")
                && t.contains("left")),
        "{:?}",
        b.told()
    );
    b.probe.script([Run::Pass(release), Run::Pass(release)]);
    assert_eq!(
        b.bridge
            .target
            .control()
            .unwrap()
            .wait_for_stop(std::time::Duration::ZERO)
            .unwrap(),
        None
    );
    assert!(b.files().is_empty(), "{:?}", b.files());
}

/// The firmware's end: every command but help, reset and shutdown says so; `reset` (no
/// restart given) resets the backend and sets the dump-on breakpoints again.
#[test]
fn after_the_firmware_ends_only_reset_brings_it_back() {
    let mut b = Bench::new("ended", |_| {});
    b.probe.script([Run::Stop(StopReason::Exited(3))]);
    b.bridge.target.control().unwrap().resume().unwrap();
    let stop = b
        .bridge
        .target
        .control()
        .unwrap()
        .wait_for_stop(std::time::Duration::ZERO)
        .unwrap()
        .unwrap();
    b.bridge.firmware_ended(stop);
    assert!(
        b.told()
            .iter()
            .any(|t| t.contains("the firmware exited with status 3")),
        "{:?}",
        b.told()
    );
    let heap = b.monitor("heap").unwrap();
    assert!(
        heap.starts_with("the firmware exited with status 3; `monitor reset` starts it again"),
        "{heap}"
    );
    assert!(b.monitor("help").unwrap().contains("dump-on SYMBOL [PATH]"));
    let out = b.monitor("reset halt").unwrap();
    assert!(
        out.contains("started again, halted at the reset vector"),
        "{out}"
    );
    assert_eq!(b.probe.state().resets, 1);
    assert!(b.monitor("heap").unwrap().contains("freertos-heap4"));
}

#[test]
fn stops_are_told_to_gdb_as_it_names_them() {
    let mut b = Bench::new("translate", |_| {});
    b.bridge
        .gdb_breakpoints
        .push((0x100, BreakpointKind::Hardware));
    // Without threads a stop is what a single-threaded stub reports (gdbstub sends the same
    // bytes for these as for its single-thread stop reasons).
    let t = |b: &mut Bench, r| b.bridge.translate(r);
    let single = |r: SingleThreadStopReason<u32>| -> StopReport { r.into() };
    assert_eq!(
        t(&mut b, StopReason::Breakpoint(0x100)),
        single(SingleThreadStopReason::HwBreak(()))
    );
    assert_eq!(
        t(&mut b, StopReason::Breakpoint(0x200)),
        single(SingleThreadStopReason::SwBreak(()))
    );
    assert_eq!(
        t(
            &mut b,
            StopReason::Watchpoint {
                addr: 0x2000_0010,
                kind: WatchKind::Access
            }
        ),
        single(SingleThreadStopReason::Watch {
            tid: (),
            kind: GdbWatchKind::ReadWrite,
            addr: 0x2000_0010
        })
    );
    assert_eq!(
        t(&mut b, StopReason::Step),
        single(SingleThreadStopReason::DoneStep)
    );
    assert_eq!(
        t(&mut b, StopReason::Exited(7)),
        single(SingleThreadStopReason::Exited(7))
    );
    b.bridge.on_attach();
    assert!(!b.bridge.is_running());
}
