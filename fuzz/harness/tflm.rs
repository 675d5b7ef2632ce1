//! The `tflm` harness: TensorFlow Lite Micro's arena scan, arena view and tensor plan
//! (`memlife-tflm`) over arbitrary RAM, with the DWARF of the real TFLM firmware
//! (`firmware/build/tflm-healthy.elf`, built by `make -C firmware`: its 3.6 MB of DWARF are too
//! big to commit) and a snapshot of it (`debugger/tflm/testdata/tflm-healthy.mlsnap`). The input is a RAM image over the fixture's
//! snapshot ([`super::image::overlay`]); the model flatbuffer is part of it, as the firmware
//! reads its model into a heap block, so the fuzzer changes the model and the objects around it
//! alike. Each input goes the way `memlife heap` goes: a heap walk for the blocks in use, the
//! containers, the arenas, their text, JSON and firmware view.

use std::path::Path;

use memlife_core::Snapshot;
use memlife_core::cortex_m::CoreRegisters;
use memlife_dwarf::Symbols;
use memlife_heap::{HeapWalker, WalkContext};
use memlife_tflm::{Arena, Tflm};

use super::image;

/// What every input is read with: the firmware's symbols, its TFLM layout and heap walker, and
/// the snapshot whose regions and registers the input's RAM goes into.
pub struct TflmFixture {
    /// The firmware's symbols.
    pub symbols: Symbols,
    tflm: Tflm,
    walker: Box<dyn HeapWalker>,
    /// The snapshot the inputs overlay.
    pub template: Snapshot,
}

/// The symbol the fixture snapshot stops at (its third call, see `debugger/tflm/testdata`).
const TFLM_STOP: &str = "app::RunInference";

/// The fixture: the firmware's `elf` and `snapshot`, a stop of that very build (panics on a
/// broken fixture: it is ours; and on a snapshot of another build, whose addresses would not
/// match the DWARF: then the snapshot needs taking again, as the testdata README says).
pub fn tflm_fixture(elf: &Path, snapshot: &Path) -> TflmFixture {
    let symbols = Symbols::load(elf).expect("the TFLM firmware ELF loads");
    let tflm = Tflm::detect(&symbols).expect("the TFLM firmware ELF has TFLM");
    let walker = memlife_heap::detect(
        &symbols,
        None,
        &memlife_heap::WalkerOptions::default(),
        None,
    )
    .expect("the TFLM firmware ELF has a heap memlife walks");
    let template = Snapshot::load(snapshot).expect("the TFLM fixture snapshot loads");
    let pc = CoreRegisters::from_named(&template.registers).map(|c| u64::from(c.r[15]));
    let stop = symbols.function(TFLM_STOP);
    assert!(
        matches!((pc, stop), (Some(pc), Some(f)) if (f.entry..f.entry + f.size.max(2)).contains(&(pc & !1))),
        "{} is not a stop at {TFLM_STOP} of {} (pc {pc:x?}, {TFLM_STOP} at {stop:x?}): \
         the firmware changed, take the snapshot again (debugger/tflm/testdata/README.md)",
        snapshot.display(),
        elf.display(),
    );
    TflmFixture {
        symbols,
        tflm,
        walker,
        template,
    }
}

/// How far one input went, for the bounded run's checks.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TflmReach {
    /// Arenas found.
    pub arenas: usize,
    /// Arenas with a tensor plan.
    pub plans: usize,
    /// Tensors in those plans.
    pub tensors: usize,
}

/// The arenas of `snap` as `memlife heap` finds them: the heap walk's blocks in use and the
/// image's statics as containers. `None` when the reading failed (a lost link: never, offline).
pub fn tflm_arenas(f: &TflmFixture, snap: &mut Snapshot) -> Option<Vec<Arena>> {
    let (used, heap) = match f.walker.walk(snap, WalkContext::default()) {
        Ok(state) => (
            state
                .blocks
                .iter()
                .filter(|b| !b.free && !b.unclaimed)
                .map(|b| (b.addr, b.size))
                .collect(),
            Some((state.heap_start, state.heap_size)),
        ),
        // A heap the walker cannot read leaves the statics to look in, as in `memlife heap`
        // when the walk fails.
        Err(_) => (Vec::new(), None),
    };
    let containers = memlife_tflm::containers(&f.symbols, &used, heap);
    memlife_tflm::read_arenas(snap, &f.symbols, &f.tflm, &containers).ok()
}

/// One input: `data` is a RAM image over the fixture's snapshot.
pub fn tflm(f: &TflmFixture, data: &[u8]) -> TflmReach {
    let mut snap = image::overlay(&f.template, data);
    let Some(arenas) = tflm_arenas(f, &mut snap) else {
        return TflmReach::default();
    };
    let _ = memlife_tflm::render::text(&arenas);
    let _ = memlife_tflm::render::json(&arenas);
    let _ = memlife_tflm::render::firmware_view(&arenas);
    let plans: Vec<_> = arenas.iter().filter_map(|a| a.plan.as_ref()).collect();
    TflmReach {
        arenas: arenas.len(),
        plans: plans.len(),
        tensors: plans.iter().map(|p| p.tensors.len()).sum(),
    }
}
