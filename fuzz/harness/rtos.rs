//! The `rtos` harness: FreeRTOS's task walk, list walks, saved-context decode and stack marks
//! (`memlife-rtos`) over arbitrary RAM, with the DWARF of the real RTOS firmware on both ports
//! (`debugger/rtos/testdata`: ARM_CM4F on netduinoplus2, ARM_CM3 on mps2-an385). Each input goes
//! the way `memlife tasks` goes: the tasks read with or without the core's registers, the heap
//! walked for their blocks, their locations from DWARF, the table and the JSON; then who runs
//! now, as `memlife serve` asks it.
//!
//! The input: byte 0 picks the fixture (bit 0) and whether the core's registers are known
//! (bit 1); bytes 1..69 are r0..r15 and xPSR (little-endian words), used when known; the rest is
//! a RAM image over the fixture's snapshot ([`super::image::overlay`]).

use std::path::Path;

use memlife_core::Snapshot;
use memlife_core::cortex_m::CoreRegisters;
use memlife_dwarf::Symbols;
use memlife_heap::{HeapWalker, WalkContext};
use memlife_rtos::{FreeRtos, TaskSnapshot};

use super::image;

/// r0..r15 and xPSR, four bytes each.
pub const REGISTER_BYTES: usize = 17 * 4;
/// Byte 0's bit: the core's registers are known.
const REGISTERS_KNOWN: u8 = 2;

/// What every input for one firmware is read with.
pub struct RtosFixture {
    /// The firmware's symbols.
    pub symbols: Symbols,
    /// Its kernel, resolved.
    pub kernel: FreeRtos,
    walker: Box<dyn HeapWalker>,
    /// The snapshot the inputs overlay.
    pub template: Snapshot,
}

/// The boards of the fixtures, in the order byte 0's bit 0 picks them: the ARM_CM4F port, then
/// the ARM_CM3 one.
pub const RTOS_BOARDS: [&str; 2] = ["netduinoplus2", "mps2-an385"];

/// The fixtures in `testdata` (`debugger/rtos/testdata`): `rtos-BOARD-healthy.elf` and its
/// snapshot for each of [`RTOS_BOARDS`].
pub fn rtos_fixtures(testdata: &Path) -> Vec<RtosFixture> {
    RTOS_BOARDS
        .iter()
        .map(|board| {
            let name = format!("rtos-{board}-healthy");
            rtos_fixture(
                &testdata.join(format!("{name}.elf")),
                &testdata.join(format!("{name}.mlsnap")),
            )
        })
        .collect()
}

/// The fixture over `elf` and `snapshot` (panics on a broken fixture: it is ours).
fn rtos_fixture(elf: &Path, snapshot: &Path) -> RtosFixture {
    let symbols = Symbols::load(elf).expect("the RTOS fixture ELF loads");
    let kernel = FreeRtos::from_symbols(&symbols).expect("the RTOS fixture ELF has FreeRTOS");
    let walker = memlife_heap::detect(
        &symbols,
        None,
        &memlife_heap::WalkerOptions::default(),
        None,
    )
    .expect("the RTOS fixture ELF has a heap memlife walks");
    let template = Snapshot::load(snapshot).expect("the RTOS fixture snapshot loads");
    RtosFixture {
        symbols,
        kernel,
        walker,
        template,
    }
}

/// The core's registers as `memlife tasks` takes them from a snapshot.
pub fn snapshot_registers(snap: &Snapshot) -> Option<CoreRegisters> {
    CoreRegisters::from_named(&snap.registers)
}

/// The tasks of `snap` as `memlife tasks` reads them; `None` when the read failed.
pub fn rtos_tasks(
    f: &RtosFixture,
    snap: &mut Snapshot,
    core: Option<&CoreRegisters>,
) -> Option<TaskSnapshot> {
    let mut tasks = f.kernel.read_tasks(snap, core).ok()?;
    if let Ok(heap) = f.walker.walk(snap, WalkContext::default()) {
        tasks.attribute_heap(&heap);
    }
    tasks.annotate(&f.symbols);
    Some(tasks)
}

/// One input (see the module doc). How many tasks were read.
pub fn rtos(fixtures: &[RtosFixture], data: &[u8]) -> usize {
    let Some((&flags, rest)) = data.split_first() else {
        return 0;
    };
    let Some(f) = fixtures.get(usize::from(flags & 1) % fixtures.len().max(1)) else {
        return 0;
    };
    let (regs, ram) = rest.split_at(rest.len().min(REGISTER_BYTES));
    let core = (flags & REGISTERS_KNOWN != 0 && regs.len() == REGISTER_BYTES).then(|| {
        let word = |i: usize| u32::from_le_bytes([regs[i], regs[i + 1], regs[i + 2], regs[i + 3]]);
        CoreRegisters::new(std::array::from_fn(|n| word(4 * n)), word(64))
    });
    let mut snap = image::overlay(&f.template, ram);
    let Some(tasks) = rtos_tasks(f, &mut snap, core.as_ref()) else {
        return 0;
    };
    let _ = memlife_rtos::render::text(&tasks);
    let _ = memlife_rtos::render::json(&tasks);
    let _ = tasks.task_blocks();
    let _ = tasks.running().label();
    let _ = f.kernel.running(&mut snap, core.map_or(0, |c| c.xpsr));
    tasks.tasks.len()
}

/// The input that replays `snap` (a stop of fixture `index`'s firmware) over that fixture: its
/// registers, when it has them, and its RAM.
pub fn rtos_seed(index: u8, f: &RtosFixture, snap: &Snapshot) -> Vec<u8> {
    let core = snapshot_registers(snap);
    let mut out = vec![(index & 1) | if core.is_some() { REGISTERS_KNOWN } else { 0 }];
    let core = core.unwrap_or_default();
    for r in core.r.iter().chain([&core.xpsr]) {
        out.extend(r.to_le_bytes());
    }
    out.extend(image::image_of(&f.template, snap));
    out
}
