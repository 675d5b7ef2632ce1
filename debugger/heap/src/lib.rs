//! Heap walkers: rebuild an allocator's state from target RAM. The layout facts each walker
//! relies on, with the upstream versions they hold for, are in docs/allocators/.
//!
//! A walker is built once from the ELF's symbols ([`detect()`]), which resolves every address,
//! member offset and constant it needs; [`HeapWalker::walk`] then reads the allocator's
//! globals and its arena (a handful of large reads, or chunks as the walk follows the headers:
//! see [`image`] and [`sparse`]) and parses on the host.
//!
//! Corruption is data, not an error: every pointer is bounds-checked and every loop is bounded,
//! so a damaged heap yields a [`HeapState`] with [`Anomaly`]s (cycle, out of range, overlap, size
//! overflow, counter mismatch). A core halted inside malloc/free is reported as
//! [`HeapStatus::Busy`], not as corrupt. Only failures to read memory are errors.
//!
//! # Layout
//! - [`api`]: what a walker says about its allocator's API: [`EntryPoint`]s, [`BlockRef`],
//!   [`LowWaterMark`], [`ResolvedSymbol`].
//! - [`state`]: [`HeapState`], [`Block`], [`Anomaly`] and the metrics of docs/heap-json.md.
//! - [`firmware_view`]: what the firmware's own heap API would return, computed from a walk.
//! - [`image`]: [`image::MemImage`], the memory a walker parses: a few address ranges read
//!   whole (bulk) or on demand ([`sparse`], small chunks cached across the walk).
//! - [`link_model`]: `--walk bulk|sparse|auto`, the link's cost model that decides `auto`, and
//!   the [`LinkState`] a caller keeps between the walks of one target.
//! - [`halted`]: [`walk_halted`], the walk of a halted core with busy detection from its pc.
//! - [`mod@detect`]: choosing the walker from the symbols, or from `--allocator`.
//! - [`render`]: a heap state as the text table, block list, summary line and JSON every
//!   command and monitor command prints.
//! - `walkers`: one module per allocator (`freertos` covers heap_4 and heap_5, `nano`,
//!   `dlmalloc`, `tlsf` the ESP-IDF heap with its several regions, see [`HeapRegion`]).

pub mod api;
pub mod detect;
pub mod error;
pub mod firmware_view;
pub mod halted;
pub mod image;
pub mod link_model;
pub mod render;
pub mod sparse;
pub mod state;
#[cfg(test)]
mod testing;
mod walkers;

pub use api::{BlockRef, EntryPoint, EntryRole, LowWaterMark, ResolvedSymbol};
pub use detect::{AllocatorKind, WalkerOptions, detect};
pub use error::HeapError;
pub use firmware_view::{FirmwareView, parse_caps};
pub use halted::{HaltedWalk, allocator_function_at, walk_at, walk_halted};
pub use link_model::{LinkModel, LinkState, ReadPlan, ReadReport, WalkStrategy};
pub use state::{Anomaly, AnomalyKind, Block, HeapRegion, HeapState, HeapStatus};
pub use walkers::tlsf::Poisoning;

use memlife_core::Memory;

/// Context of one walk that the walker cannot learn from memory.
#[derive(Debug, Clone, Copy, Default)]
pub struct WalkContext {
    /// The core was halted inside an allocator function (pc lookup done by the caller).
    pub inside_allocator: Option<&'static str>,
    /// How to read the arena (bulk by default: offline memory costs nothing to read whole).
    pub read: ReadPlan,
}

/// One allocator's walker, with every symbol already resolved.
pub trait HeapWalker: std::fmt::Debug + Send {
    /// Which allocator this walker reads.
    fn kind(&self) -> AllocatorKind;

    /// Allocator name as reported (`freertos-heap4`, `newlib-nano`...): the kind's.
    fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Reads the allocator's state from memory.
    fn walk(&self, mem: &mut dyn Memory, ctx: WalkContext) -> Result<HeapState, HeapError>;

    /// The functions that change the heap: the traced malloc and free entries and the others
    /// (busy detection, tracing, allocation sites), allocating ones first.
    fn entry_points(&self) -> &'static [EntryPoint];

    /// The bytes [`HeapWalker::block_of`] reads first for the user pointer `ptr` (the header in
    /// front of it), as `(address, length)`, so a caller can fetch them together with other reads
    /// at the same stop. `None` when `ptr` cannot be a block's.
    fn header_range(&self, ptr: u64) -> Option<(u64, usize)>;

    /// The block holding the user pointer `ptr` (as malloc returned it), or `None` when `ptr`
    /// does not look like one of its blocks. One small read; used by allocation tracing at
    /// every malloc and free.
    fn block_of(&self, mem: &mut dyn Memory, ptr: u64) -> Result<Option<BlockRef>, HeapError>;

    /// For an allocator that keeps no header on its blocks (linked_list_allocator): the block a
    /// traced allocation of `request` bytes returning `ptr` occupies, as the allocator rounds
    /// it. `None` (the default) where [`HeapWalker::block_of`] reads the header instead.
    fn block_from_request(&self, _ptr: u64, _request: u64) -> Option<BlockRef> {
        None
    }

    /// Where the allocator keeps its low-water mark, if it keeps one.
    fn low_water_mark(&self) -> LowWaterMark {
        LowWaterMark::None
    }

    /// The globals resolved from the ELF (for `memlife symbols`).
    fn resolved(&self) -> Vec<ResolvedSymbol>;

    /// Whether a walk checks the blocks' contents (ESP-IDF heap poisoning canaries), so that a
    /// walk after each step of a program can tell which step damaged a block.
    fn checks_integrity(&self) -> bool {
        false
    }
}
