//! Cross-checks after both walks: blocks lost from the free list, free neighbours the allocator
//! would have merged, and the allocator's own counters against what the walks found.

use super::counters::Counters;
use crate::state::{AnomalyKind, Block, HeapState};

/// Free blocks of the physical walk that the free list does not link.
pub(super) fn lost_blocks(st: &mut HeapState) {
    let free_phys: Vec<Block> = st.blocks.iter().filter(|b| b.free).copied().collect();
    for b in &free_phys {
        if !st.free_list.contains(&b.addr) {
            let addr = b.addr;
            st.anomaly(
                AnomalyKind::ListMismatch,
                Some(addr),
                format!("free block at {addr:#010x} is not on the free list (lost)"),
            );
        }
    }
}

/// Two free blocks side by side: heap_4/5 always merge them on free.
pub(super) fn coalescing(st: &mut HeapState) {
    for pair in st.blocks.clone().windows(2) {
        if pair[0].free && pair[1].free && pair[0].addr + pair[0].size == pair[1].addr {
            st.anomaly(
                AnomalyKind::NotCoalesced,
                Some(pair[0].addr),
                format!(
                    "free blocks at {:#010x} and {:#010x} are adjacent",
                    pair[0].addr, pair[1].addr
                ),
            );
        }
    }
}

/// The counters the allocator keeps against the free list's sum (`list_sum`) and the walk's
/// totals (`st.total_free`, the allocated blocks).
pub(super) fn counters(st: &mut HeapState, c: &Counters, list_sum: u64) {
    let free_counter = c.free_bytes;
    if list_sum != free_counter || st.total_free != free_counter {
        st.anomaly(
            AnomalyKind::CounterMismatch,
            None,
            format!("xFreeBytesRemaining is {free_counter} but the free list holds {list_sum} and the physical walk {} bytes", st.total_free),
        );
    }
    let used_blocks = st.blocks.iter().filter(|b| !b.free).count() as u64;
    if let (Some(a), Some(f)) = (c.allocs, c.frees)
        && a.wrapping_sub(f) != used_blocks
    {
        st.anomaly(
                AnomalyKind::CounterMismatch,
                None,
                format!("{a} allocations - {f} frees = {} live, but the walk found {used_blocks} allocated blocks", a.wrapping_sub(f)),
            );
    }
    if let Some(m) = st.min_ever_free
        && m > free_counter
    {
        st.anomaly(
            AnomalyKind::CounterMismatch,
            None,
            format!(
                "xMinimumEverFreeBytesRemaining {m} exceeds xFreeBytesRemaining {free_counter}"
            ),
        );
    }
}
