//! Walking the heap of a halted core, with busy detection: the one walk `memlife heap`,
//! `memlife serve` and the audit engine share.
//!
//! A core halted inside one of the allocator's own functions may have its lists half updated:
//! the walk then reports [`HeapStatus::Busy`](crate::HeapStatus::Busy) instead of corruption.
//! Which functions count is the walker's [`HeapWalker::entry_points`]; the function holding the
//! pc comes from the symbols.

use memlife_core::{LinkStats, Memory, Register, Target};
use memlife_dwarf::Symbols;

use crate::link_model::{CountingMemory, LinkState, ReadPlan};
use crate::{HeapError, HeapState, HeapWalker, WalkContext};

/// A walk of a halted target and what it cost on the link.
#[derive(Debug, Clone)]
pub struct HaltedWalk {
    /// The heap.
    pub state: HeapState,
    /// Reads and bytes the walk took (the backend's counters before and after).
    pub link: LinkStats,
}

/// The allocator function that holds `pc`, if the core is inside one.
pub fn allocator_function_at(
    walker: &dyn HeapWalker,
    symbols: &Symbols,
    pc: u64,
) -> Option<&'static str> {
    let function = symbols.function_at(pc)?;
    // Entry points name C and C++ functions by their symbol, Rust ones by their demangled path.
    let demangled = memlife_dwarf::demangle_name(&function.name);
    walker
        .entry_points()
        .iter()
        .map(|e| e.function)
        .find(|name| *name == function.name || demangled.as_deref() == Some(*name))
}

/// Walks the heap in `mem` with the core's `pc` (when known) for busy detection, reading the
/// arena as `read` says.
pub fn walk_at(
    walker: &dyn HeapWalker,
    symbols: &Symbols,
    mem: &mut dyn Memory,
    pc: Option<u64>,
    read: ReadPlan,
) -> Result<HeapState, HeapError> {
    let inside_allocator = pc.and_then(|pc| allocator_function_at(walker, symbols, pc));
    walker.walk(
        mem,
        WalkContext {
            inside_allocator,
            read,
        },
    )
}

/// Walks the heap of a halted target: its pc decides busy, its link counters give the cost.
/// A target whose pc cannot be read (an offline snapshot without registers) is walked without
/// busy detection from the pc; the allocator's own locks still count.
///
/// The arena is read as `link` says (the strategy asked for and the link's model); a model this
/// walk measured is kept in `link` for the next walks.
pub fn walk_halted(
    walker: &dyn HeapWalker,
    symbols: &Symbols,
    target: &mut dyn Target,
    link: &mut LinkState,
) -> Result<HaltedWalk, HeapError> {
    let pc = target.read_register(Register::ProgramCounter).ok();
    let before = target.link_stats();
    // Offline memory (a snapshot) costs nothing to read whole: no strategy to choose.
    let plan: ReadPlan = link.read_plan(target.control().is_some(), before.max_read);
    let started = std::time::Instant::now();
    let mut counted = CountingMemory::new(target.as_memory(), before.max_read);
    let state = walk_at(walker, symbols, &mut counted, pc, plan)?;
    link.learn(&state.read);
    let walk_us = u64::try_from(started.elapsed().as_micros()).ok();
    let round_trips = counted.round_trips;
    let after = target.link_stats();
    let bytes = after.bytes.saturating_sub(before.bytes);
    let model = state.read.model;
    let link = LinkStats {
        reads: after.reads.saturating_sub(before.reads),
        bytes,
        max_read: after.max_read,
        strategy: state.read.strategy,
        rtt_us: model.map(|m| m.rtt_us.round() as u64),
        bytes_per_s: model.map(|m| m.bytes_per_s.round() as u64),
        round_trips,
        bytes_read: bytes,
        walk_us,
    };
    Ok(HaltedWalk { state, link })
}
