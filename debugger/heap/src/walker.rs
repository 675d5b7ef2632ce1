//! [`HeapWalker`]: the trait every allocator's walker implements.

use memlife_core::Memory;

use crate::{
    AllocatorKind, BlockRef, EntryPoint, HeaderRange, HeapError, HeapState, LowWaterMark,
    ResolvedSymbol, WalkContext,
};

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
    /// front of it), so a caller can fetch them together with other reads at the same stop.
    /// `None` when `ptr` cannot be a block's.
    fn header_range(&self, ptr: u64) -> Option<HeaderRange>;

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
