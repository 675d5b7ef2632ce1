//! The blocks the trace saw allocated and not yet freed, by block address and by user pointer,
//! each with its allocation site: what names a leaked or damaged block's origin.

use std::collections::{BTreeMap, HashMap};

use memlife_heap::{BlockRef, HeapState};

use crate::model::{Damage, Site};

/// A block the trace saw allocated and not yet freed.
#[derive(Debug, Clone)]
pub struct LiveAlloc {
    /// Block size.
    pub size: u64,
    /// Event sequence number.
    pub seq: u64,
    /// Allocation site.
    pub site: Site,
}

/// The live blocks.
#[derive(Debug, Default)]
pub struct LiveBlocks {
    /// By block address.
    by_addr: BTreeMap<u64, LiveAlloc>,
    /// User pointer → block address.
    by_ptr: HashMap<u64, u64>,
}

impl LiveBlocks {
    /// By block address.
    pub fn map(&self) -> &BTreeMap<u64, LiveAlloc> {
        &self.by_addr
    }

    /// Forgets them all (the target was reset).
    pub fn forget(&mut self) {
        self.by_addr.clear();
        self.by_ptr.clear();
    }

    /// A block allocated at `ptr`.
    pub fn allocated(&mut self, ptr: u64, block: BlockRef, seq: u64, site: Site) {
        self.by_addr.insert(
            block.addr,
            LiveAlloc {
                size: block.size,
                seq,
                site,
            },
        );
        self.by_ptr.insert(ptr, block.addr);
    }

    /// The block of `ptr` when the trace saw it allocated (no header read needed).
    pub fn known(&self, ptr: u64) -> Option<BlockRef> {
        let addr = *self.by_ptr.get(&ptr)?;
        let size = self.by_addr.get(&addr)?.size;
        Some(BlockRef { addr, size })
    }

    /// A block freed through `ptr`.
    pub fn freed(&mut self, ptr: u64, block: BlockRef) {
        self.by_addr.remove(&block.addr);
        self.by_ptr.remove(&ptr);
    }

    /// The blocks whose contents `state` found damaged, with the allocation site recorded for
    /// each.
    pub fn damage(&self, state: &HeapState) -> Vec<Damage> {
        state
            .anomalies
            .iter()
            .filter(|a| a.kind.is_integrity())
            .filter_map(|a| {
                let block = a.addr?;
                Some(Damage {
                    kind: a.kind.name(),
                    block,
                    alloc_size: state
                        .blocks
                        .iter()
                        .find(|b| b.addr == block)
                        .and_then(|b| b.alloc_size),
                    site: self.by_addr.get(&block).map(|l| l.site.to_string()),
                    message: a.message.clone(),
                })
            })
            .collect()
    }
}
