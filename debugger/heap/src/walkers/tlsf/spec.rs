//! [`PoolSpec`], where one heap lives and how its structures are laid out, and TLSF's fixed
//! sizes: what both the pool walk and the recognition of a heap's parameters start from.

use super::layout::{BlockLayout, ControlLayout, InfoLayout};
use super::poison::Poisoning;

/// Smallest TLSF block payload (`block_size_min`).
pub(super) const BLOCK_SIZE_MIN: u64 = 12;
/// Bytes a pool spends outside its blocks' footprints: the first block's `prev_phys_block`
/// (outside the pool) is not counted, the sentinel's size word is, and so is the first size word
/// — `tlsf_pool_overhead()`.
pub(super) const POOL_OVERHEAD: u64 = 8;

/// Where one heap lives and how its structures are laid out.
#[derive(Debug, Clone, Copy)]
pub struct PoolSpec<'a> {
    /// `heap_t_.start`.
    pub start: u64,
    /// `heap_t_.end`.
    pub end: u64,
    /// The `struct multi_heap_info *`.
    pub info: u64,
    /// Its layout.
    pub info_layout: &'a InfoLayout,
    /// `control_t`'s layout.
    pub control: &'a ControlLayout,
    /// `block_header_t`'s layout.
    pub block: &'a BlockLayout,
    /// Heap poisoning built in (canaries checked at every walk).
    pub poisoning: Poisoning,
}
