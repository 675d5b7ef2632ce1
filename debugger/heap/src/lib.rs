//! Heap walkers: rebuild an allocator's state from target RAM.
//!
//! A walker is built once from the ELF's symbols ([`detect()`]), which resolves every address,
//! member offset and constant it needs; [`HeapWalker::walk`] then bulk-reads the allocator's
//! globals and its arena (a handful of large reads, see [`image`]) and parses on the host.
//!
//! Corruption is data, not an error: every pointer is bounds-checked and every loop is bounded,
//! so a damaged heap yields a [`HeapState`] with [`Anomaly`]s (cycle, out of range, overlap, size
//! overflow, counter mismatch). A core halted inside malloc/free is reported as
//! [`HeapStatus::Busy`], not as corrupt. Only failures to read memory are errors.
//!
//! # Layout
//! - [`state`]: [`HeapState`], [`Block`], [`Anomaly`] and the metrics of DESIGN.md §3.
//! - [`image`]: [`image::MemImage`], the bulk-read snapshot of a few address ranges.
//! - [`halted`]: [`walk_halted`], the walk of a halted core with busy detection from its pc.
//! - [`mod@detect`]: choosing the walker from the symbols, or from `--allocator`.
//! - [`walkers`]: one module per allocator (`freertos` covers heap_4 and heap_5, `nano`,
//!   `dlmalloc`, `tlsf` the ESP-IDF heap with its several regions, see [`HeapRegion`]).

pub mod detect;
pub mod error;
pub mod halted;
pub mod image;
pub mod state;
pub mod walkers;

pub use detect::{AllocatorKind, WalkerOptions, detect};
pub use error::HeapError;
pub use halted::{HaltedWalk, allocator_function_at, walk_at, walk_halted};
pub use state::{Anomaly, AnomalyKind, Block, HeapRegion, HeapState, HeapStatus};

use memlife_core::Memory;

/// Context of one walk that the walker cannot learn from memory.
#[derive(Debug, Clone, Copy, Default)]
pub struct WalkContext {
    /// The core was halted inside an allocator function (pc lookup done by the caller).
    pub inside_allocator: Option<&'static str>,
}

/// One allocator's walker, with every symbol already resolved.
pub trait HeapWalker: std::fmt::Debug + Send {
    /// Allocator name as reported (`freertos-heap4`, `newlib-nano`...).
    fn name(&self) -> &'static str;

    /// Reads the allocator's state from memory.
    fn walk(&self, mem: &mut dyn Memory, ctx: WalkContext) -> Result<HeapState, HeapError>;

    /// Functions that modify the heap (for busy detection and tracing): (malloc-like, free-like).
    fn entry_points(&self) -> (&'static [&'static str], &'static [&'static str]);

    /// The block holding the user pointer `ptr` (as malloc returned it): `(block address, size in
    /// the allocator's accounting)`, or `None` when `ptr` does not look like one of its blocks.
    /// One small read; used by allocation tracing at every malloc and free.
    fn block_of(&self, mem: &mut dyn Memory, ptr: u64) -> Result<Option<(u64, u64)>, HeapError>;

    /// Resolved globals as `(name, address, size, type)` (for `memlife symbols`).
    fn resolved(&self) -> Vec<(String, u64, u64, String)>;
}
