//! The heap as the report keeps it: figures at phase boundaries ([`HeapSummary`]) and, once, the
//! whole arena block by block after the last release ([`HeapMap`]).

use serde::{Deserialize, Serialize};

use memlife_heap::{HeapState, HeapStatus};

use super::Site;

/// A heap state without its block list, for phase records (the full state is kept in memory for
/// diffs and dumps; the JSON would be large with every block of every phase).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct HeapSummary {
    /// Free bytes.
    pub free: u64,
    /// Used bytes.
    pub used: u64,
    /// Largest free block.
    pub largest_free: u64,
    /// largest_free / free.
    pub largest_free_ratio: Option<f64>,
    /// Free blocks.
    pub free_blocks: u64,
    /// Used blocks.
    pub used_blocks: u64,
    /// The allocator's low-water mark.
    pub min_ever_free: Option<u64>,
    /// ok / busy / corrupt / uninitialised.
    pub status: HeapStatus,
}

impl Default for HeapSummary {
    /// An empty heap that walked fine: what a report that leaves the figures out reads as.
    fn default() -> Self {
        HeapSummary {
            free: 0,
            used: 0,
            largest_free: 0,
            largest_free_ratio: None,
            free_blocks: 0,
            used_blocks: 0,
            min_ever_free: None,
            status: HeapStatus::Ok,
        }
    }
}

impl From<&HeapState> for HeapSummary {
    fn from(s: &HeapState) -> Self {
        HeapSummary {
            free: s.total_free,
            used: s.used,
            largest_free: s.largest_free,
            largest_free_ratio: s.largest_free_ratio(),
            free_blocks: s.free_blocks,
            used_blocks: s.used_blocks,
            min_ever_free: s.min_ever_free,
            status: s.status,
        }
    }
}

/// One block of a [`HeapMap`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct MapBlock {
    /// Address of the block header.
    pub addr: u64,
    /// Size in the allocator's accounting.
    pub size: u64,
    /// On the free list.
    pub free: bool,
    /// newlib: not yet handed out by sbrk.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unclaimed: bool,
    /// Used now and not used at the audit's baseline: a block the lifecycle left behind.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub leaked: bool,
    /// Used now, allocated at the site of a block a later cycle freed: a late free, not a leak
    /// (see [`super::DeferredBlock`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deferred: bool,
    /// Where the trace saw it allocated, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site: Option<Site>,
    /// On an RTOS firmware, the task it belongs to: the one that allocated it (traced), else
    /// the task whose TCB or stack it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

/// The heap after the last release, block by block, for the report's heap map.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct HeapMap {
    /// The phase call it was walked at the return of (`model_release#3`).
    pub at: String,
    /// First address of the arena.
    pub heap_start: u64,
    /// Arena size.
    pub heap_size: u64,
    /// The heap's figures.
    pub summary: HeapSummary,
    /// Leaked blocks: used here and not used at the baseline (the heap at the first release
    /// when the audit released more than once, else at the first phase's entry), and the
    /// baseline's blocks allocated at the same site as one of those.
    pub leaked_blocks: u64,
    /// Their bytes.
    pub leaked_bytes: u64,
    /// Every block in address order.
    pub blocks: Vec<MapBlock>,
}

impl HeapMap {
    /// Builds the map of `state`; `baseline` says which used blocks are not leaks, `site` names
    /// where a block was allocated.
    pub fn new(
        at: String,
        state: &HeapState,
        baseline: Option<&HeapState>,
        site: impl Fn(u64) -> Option<Site>,
    ) -> Self {
        let kept: std::collections::BTreeSet<(u64, u64)> = baseline
            .map(|b| {
                b.blocks
                    .iter()
                    .filter(|x| !x.free && !x.unclaimed)
                    .map(|x| (x.addr, x.size))
                    .collect()
            })
            .unwrap_or_default();
        let mut blocks: Vec<MapBlock> = state
            .blocks
            .iter()
            .map(|b| {
                let used = !b.free && !b.unclaimed;
                MapBlock {
                    addr: b.addr,
                    size: b.size,
                    free: b.free,
                    unclaimed: b.unclaimed,
                    leaked: used && baseline.is_some() && !kept.contains(&(b.addr, b.size)),
                    deferred: false,
                    site: if used { site(b.addr) } else { None },
                    task: None,
                }
            })
            .collect();
        // A block the baseline already held is a leak too when a later lifecycle left another
        // behind from the same allocation site: the first step of the staircase.
        let leaking_sites: Vec<Site> = blocks
            .iter()
            .filter(|b| b.leaked)
            .filter_map(|b| b.site.clone())
            .collect();
        for b in &mut blocks {
            if !b.leaked && b.site.as_ref().is_some_and(|s| leaking_sites.contains(s)) {
                b.leaked = true;
            }
        }
        let leaked: Vec<&MapBlock> = blocks.iter().filter(|b| b.leaked).collect();
        HeapMap {
            at,
            heap_start: state.heap_start,
            heap_size: state.heap_size,
            summary: state.into(),
            leaked_blocks: leaked.len() as u64,
            leaked_bytes: leaked.iter().map(|b| b.size).sum(),
            blocks,
        }
    }
}
