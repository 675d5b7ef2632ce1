//! The fuzz harnesses, shared by the `cargo fuzz` targets (nightly, run by hand: `fuzz/README.md`)
//! and the bounded, deterministic run in `make test` (`debugger/cli/tests/fuzz_stable.rs`), so
//! both exercise the same code. Each takes arbitrary bytes and must return without panicking,
//! hanging or allocating without bound; what it returns does not matter.

#![allow(dead_code)] // each target uses one harness

pub mod image;
mod rtos;
mod tflm;

use std::path::Path;

#[allow(unused_imports)] // each target uses a part
pub use rtos::{
    REGISTER_BYTES, RTOS_BOARDS, RtosFixture, rtos, rtos_fixtures, rtos_seed, rtos_tasks,
    snapshot_registers,
};
#[allow(unused_imports)]
pub use tflm::{TflmFixture, TflmReach, tflm, tflm_arenas, tflm_fixture};

use memlife_core::{Memory, Snapshot};
use memlife_heap::{HeapWalker, WalkContext};

/// The GDB remote client's packet decoder: framing, checksum, escapes, run-length encoding,
/// reply classification and hex.
pub fn rsp_packet(data: &[u8]) {
    if let Some((start, end)) = memlife_rsp::packet::find_frame(data)
        && let Ok(payload) = memlife_rsp::packet::decode_frame(&data[start..end])
    {
        let _ = memlife_rsp::packet::from_hex(&payload);
        let _ = memlife_rsp::packet::Reply::parse(payload);
    }
    let _ = memlife_rsp::packet::unpack(data);
    let _ = memlife_rsp::packet::parse_hex_u64(&data[..data.len().min(20)]);
}

/// The snapshot reader, then a read of every region it accepted.
pub fn snapshot(data: &[u8]) {
    if let Ok(mut snap) = Snapshot::read_from(data) {
        let ranges: Vec<(u64, usize)> = snap
            .regions
            .iter()
            .map(|r| (r.start, r.data.len().min(64)))
            .collect();
        for (addr, len) in ranges {
            let _ = snap.read_vec(addr, len);
        }
    }
}

/// ELF and DWARF loading, then the lookups the walkers and the unwinder make.
pub fn elf(data: &[u8]) {
    if let Ok(symbols) = memlife_dwarf::Symbols::parse(data.to_vec(), "fuzz.elf") {
        let _ = symbols.function("main");
        let _ = symbols.static_location("xStart", &[]);
        let _ = symbols.locate(0x0800_0100);
        let _ = memlife_heap::detect(
            &symbols,
            None,
            &memlife_heap::WalkerOptions::default(),
            None,
        );
    }
}

/// A walker over an arbitrary memory image: `data` replaces the bytes of `template`'s regions
/// (cycled when shorter).
pub fn walk(walker: &dyn HeapWalker, template: &Snapshot, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    let mut snap = template.clone();
    let mut i = 0;
    for region in &mut snap.regions {
        for b in region.data.iter_mut() {
            *b = data[i % data.len()];
            i += 1;
        }
    }
    let _ = walker.walk(&mut snap, WalkContext::default());
}

/// `memlife serve`'s options for a fuzzed bridge: everything a command may write (dumps,
/// reports) and read (scripts) is under `dir`, and an audit ends within seconds.
fn options(dir: &Path) -> memlife_server::ServeOptions {
    memlife_server::ServeOptions {
        places: memlife_server::places::Places {
            dump_dir: dir.to_path_buf(),
            script_dirs: vec![dir.to_path_buf()],
        },
        audit_deadline: std::time::Duration::from_secs(2),
        ..memlife_server::ServeOptions::default()
    }
}

/// A `memlife serve` bridge over a snapshot (no run control), for [`monitor`].
pub fn monitor_bridge(elf: &Path, snapshot: &Path, dir: &Path) -> memlife_server::Bridge {
    let symbols = memlife_dwarf::Symbols::load(elf).expect("the fixture ELF loads");
    let snap = Snapshot::load(snapshot).expect("the fixture snapshot loads");
    memlife_server::Bridge::new(Box::new(snap), symbols, options(dir))
}

/// The server's monitor-command parser and the commands it runs: `data` is one `monitor` line
/// as a gdb client sends it (the `qRcmd` payload, decoded), run on a bridge that keeps its
/// state from line to line (`dump-on` then `dump-off`, `shutdown`, ...). Whether the command
/// succeeded, so a bounded run can check it reached the commands and not only their errors.
pub fn monitor(bridge: &mut memlife_server::Bridge, data: &[u8]) -> bool {
    let r = bridge.monitor(data);
    if std::env::var_os("MEMLIFE_FUZZ_SHOW").is_some() {
        eprintln!(
            "{:?} -> {:?}",
            String::from_utf8_lossy(data),
            r.as_ref().map(|t| t.len())
        );
    }
    r.is_ok()
}

/// A `memlife serve` bridge over a live fake target (`memlife_testkit::live`: run control,
/// breakpoints, watchpoints, memory and register writes) on a snapshot's memory, for
/// [`server_packets`]. The bridge keeps its state from input to input, as the server does from
/// one client to the next; the target's memory and registers start from the snapshot again at
/// each input.
pub struct LiveBridge {
    /// The bridge.
    pub bridge: memlife_server::Bridge,
    probe: memlife_testkit::live::Probe,
    pristine: Snapshot,
    /// Where the fake core passes when it runs: the allocator's entry points, so that gdb's
    /// breakpoints and memlife's dump-ons there are hit.
    route: Vec<memlife_testkit::live::Run>,
}

/// The [`LiveBridge`] over `elf` and `snapshot`, its files under `dir`.
pub fn live_bridge(elf: &Path, snapshot: &Path, dir: &Path) -> LiveBridge {
    use memlife_testkit::live::{LiveTarget, Run};
    let symbols = memlife_dwarf::Symbols::load(elf).expect("the fixture ELF loads");
    let pristine = Snapshot::load(snapshot).expect("the fixture snapshot loads");
    let mut route = Vec::new();
    for _ in 0..4 {
        for f in ["pvPortMalloc", "vPortFree"] {
            if let Some(function) = symbols.function(f) {
                route.push(Run::Pass(function.entry));
            }
        }
    }
    route.push(Run::Stop(memlife_core::StopReason::Watchpoint {
        addr: 0x2000_0000,
        kind: memlife_core::WatchKind::Write,
    }));
    let (target, probe) = LiveTarget::new(pristine.clone());
    let bridge = memlife_server::Bridge::new(Box::new(target), symbols, options(dir));
    LiveBridge {
        bridge,
        probe,
        pristine,
        route,
    }
}

/// `memlife serve`'s packet path behind gdbstub (framing, the packet handlers, `qXfer`, memory,
/// registers, run control, breakpoints, watchpoints, `qRcmd` monitor commands), as one client's
/// bytes replayed on `live` ([`memlife_server::replay`]) over the live fake target. With
/// `data[0]` odd the rest goes as it is; else it is split at NUL bytes into packet payloads,
/// each framed with a correct checksum and acked, so the fuzzer reaches the handlers and not
/// only the checksum check. How many bytes the server answered.
pub fn server_packets(live: &mut LiveBridge, data: &[u8]) -> usize {
    let Some((&mode, rest)) = data.split_first() else {
        return 0;
    };
    live.probe.restore(&live.pristine);
    {
        let mut state = live.probe.0.borrow_mut();
        state.script.clear();
        state.script.extend(live.route.iter().copied());
    }
    let input = if mode & 1 == 1 {
        rest.to_vec()
    } else {
        let mut framed = Vec::with_capacity(rest.len() + 8);
        for payload in rest.split(|&b| b == 0) {
            let sum = payload.iter().fold(0u8, |a, b| a.wrapping_add(*b));
            framed.push(b'$');
            framed.extend_from_slice(payload);
            framed.extend_from_slice(format!("#{sum:02x}+").as_bytes());
        }
        framed
    };
    let answer = memlife_server::replay::replay(&mut live.bridge, &input);
    if std::env::var_os("MEMLIFE_FUZZ_SHOW").is_some() {
        eprintln!(
            "{:?} -> {:?}",
            String::from_utf8_lossy(&input),
            String::from_utf8_lossy(&answer)
        );
    }
    answer.len()
}
