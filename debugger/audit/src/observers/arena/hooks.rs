//! Where the arena observer breaks: TFLM's functions that bound a build and move the arena's
//! cursors, found by their names in the ELF. `AllocateFromTail` is a real call at every site
//! but one (the arena allocator's own placement in `CreateInPlaceSimpleMemoryAllocator`,
//! inlined): that one is seen as a tail move between stops (`super::build`).

use memlife_dwarf::Symbols;

/// The entry addresses of the functions the observer breaks on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hooks {
    /// `MicroInterpreter::MicroInterpreter` (this, model, resolver, arena, ...): the arena as
    /// handed over, and the persistent allocations the construction makes.
    pub construct: u64,
    /// `MicroInterpreter::~MicroInterpreter`: the interpreter (and its arena) is gone.
    pub destroy: Option<u64>,
    /// `MicroInterpreter::AllocateTensors`.
    pub allocate_tensors: u64,
    /// `MicroInterpreter::Invoke`.
    pub invoke: Option<u64>,
    /// `SimpleMemoryAllocator::AllocateFromTail` (this, size, alignment).
    pub allocate_from_tail: u64,
    /// `GreedyMemoryPlanner::GetMaximumMemorySize` (this): the plan while its arrays exist.
    pub plan_size: Option<u64>,
}

impl Hooks {
    /// The functions of 2020's TFLM in this ELF; `None` when one the observer cannot do
    /// without is missing (the constructor, `AllocateTensors`, `AllocateFromTail`).
    pub fn of(symbols: &Symbols) -> Option<Hooks> {
        let f = |name: &str| symbols.function(name).map(|f| f.entry);
        Some(Hooks {
            construct: f("tflite::MicroInterpreter::MicroInterpreter")?,
            destroy: f("tflite::MicroInterpreter::~MicroInterpreter"),
            allocate_tensors: f("tflite::MicroInterpreter::AllocateTensors")?,
            invoke: f("tflite::MicroInterpreter::Invoke"),
            allocate_from_tail: f("tflite::SimpleMemoryAllocator::AllocateFromTail")?,
            plan_size: f("tflite::GreedyMemoryPlanner::GetMaximumMemorySize"),
        })
    }
}
