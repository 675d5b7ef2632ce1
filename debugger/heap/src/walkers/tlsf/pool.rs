//! One registered heap: its `multi_heap_info`, TLSF control structure, physical block walk and
//! segregated free lists, parsed from a [`MemImage`] already read (no target access here).
//!
//! Units. A TLSF block's `size` field counts payload bytes only; the block also owns its 4-byte
//! size word, and `multi_heap_malloc` subtracts `size + 4` from `free_bytes`. memlife reports
//! every block with that footprint (`size + 4`), starting at its `block_header_t` address, so
//! blocks tile the pool: `next = addr + footprint`. A heap's free bytes are then
//! `Σ free footprints + 4 + slack`: the end sentinel's size word and the up-to-3 bytes the pool
//! loses to alignment are counted as free by ESP-IDF too (they are never allocated). That is
//! exactly `multi_heap_info.free_bytes` when the heap is consistent, and the capacity
//! (`pool_size - tlsf_size`) is what `free_bytes` was before the first allocation.

use std::collections::{HashMap, HashSet};

use super::params::params_of;
use super::poison::check_block;
use super::spec::{BLOCK_SIZE_MIN, POOL_OVERHEAD, PoolSpec};
use crate::image::MemImage;
use crate::state::{AnomalyKind, Block, HeapState};

/// What one heap's walk found, besides the blocks and anomalies it added to the state.
#[derive(Debug, Clone, Default)]
pub struct PoolSummary {
    /// `pool_size - tlsf_size`.
    pub capacity: u64,
    /// Free bytes in `free_bytes` units, from the walk.
    pub free: u64,
    /// Largest free footprint.
    pub largest_free: u64,
    /// `tlsf_fit_size` of the largest free payload.
    pub largest_allocatable: u64,
    /// Free-list entries, in list order (first level, second level, then list).
    pub free_list: Vec<u64>,
    /// Blocks in use.
    pub used_blocks: u64,
    /// Free blocks of the physical walk.
    pub free_phys_blocks: u64,
    /// The counters as read: `free_bytes`, `minimum_free_bytes`, `pool_size`, `tlsf_size`.
    pub counters: Vec<(String, u64)>,
    /// `minimum_free_bytes`.
    pub minimum_free_bytes: Option<u64>,
    /// `free_bytes`.
    pub free_bytes: Option<u64>,
}

/// Walks one heap, appending its blocks and anomalies to `st`.
pub fn walk_pool(img: &MemImage, spec: &PoolSpec<'_>, st: &mut HeapState) -> PoolSummary {
    let mut sum = PoolSummary::default();
    let word = |a: u64| img.u32(a).map(u64::from);
    let il = spec.info_layout;
    let (Some(free_bytes), Some(min_free), Some(pool_size), Some(control)) = (
        word(spec.info + il.free_bytes),
        word(spec.info + il.minimum_free_bytes),
        word(spec.info + il.pool_size),
        word(spec.info + il.heap_data),
    ) else {
        st.anomaly(
            AnomalyKind::OutOfRange,
            Some(spec.info),
            format!(
                "multi_heap_info at {:#010x} is outside the memory read",
                spec.info
            ),
        );
        return sum;
    };
    sum.free_bytes = Some(free_bytes);
    sum.minimum_free_bytes = Some(min_free);
    sum.counters.push(("free_bytes".into(), free_bytes));
    sum.counters.push(("minimum_free_bytes".into(), min_free));
    sum.counters.push(("pool_size".into(), pool_size));
    if control < spec.start || control >= spec.end || control % 4 != 0 {
        st.anomaly(
            AnomalyKind::OutOfRange,
            Some(spec.info),
            format!(
                "heap_data {control:#010x} of the heap at {:#010x} is outside its region {:#010x}..{:#010x}",
                spec.start, spec.start, spec.end
            ),
        );
        return sum;
    }
    let Some(params) = params_of(img, spec, control, pool_size, st) else {
        return sum;
    };
    sum.counters.push(("tlsf_size".into(), params.tlsf_size));
    let pool = control + params.tlsf_size;
    let pool_len = pool_size.saturating_sub(params.tlsf_size);
    sum.capacity = pool_len;
    let mut limit = pool + pool_len;
    if limit > spec.end || pool_len < POOL_OVERHEAD + BLOCK_SIZE_MIN {
        st.anomaly(
            AnomalyKind::SizeOverflow,
            Some(spec.info),
            format!(
                "pool {pool:#010x} + {pool_len} bytes (pool_size {pool_size} - tlsf_size {}) does not fit the region ending at {:#010x}",
                params.tlsf_size, spec.end
            ),
        );
        limit = limit.min(spec.end);
    }
    let first_size = (pool_len.saturating_sub(POOL_OVERHEAD)) & !3;
    let slack = pool_len.saturating_sub(POOL_OVERHEAD + first_size);
    let sentinel = pool + first_size;

    // Physical walk: blocks tile the pool from `pool - 4` to the zero-size sentinel.
    let bl = spec.block;
    let mut phys: HashMap<u64, (u64, bool)> = HashMap::new();
    // control >= the region's start may be 0 and tlsf_size comes from DWARF: no block header
    // below address 0.
    let Some(mut b) = pool.checked_sub(4) else {
        return sum;
    };
    let mut prev: Option<(u64, bool)> = None;
    let bound = pool_len / (BLOCK_SIZE_MIN + 4) + 2;
    let mut ended = false;
    for _ in 0..bound {
        let Some(raw) = word(b + bl.size) else {
            st.anomaly(
                AnomalyKind::OutOfRange,
                Some(b),
                format!("block at {b:#010x} is outside the memory read"),
            );
            ended = true;
            break;
        };
        let size = raw & !3;
        let free = raw & 1 != 0;
        let prev_free = raw & 2 != 0;
        let prev_is_free = prev.is_some_and(|p| p.1);
        if prev_free != prev_is_free {
            st.anomaly(
                AnomalyKind::BadHeader,
                Some(b),
                format!(
                    "block at {b:#010x} says the previous block is {}, but it is {}",
                    if prev_free { "free" } else { "used" },
                    if prev_is_free { "free" } else { "used" }
                ),
            );
        } else if let (true, Some((p, _))) = (prev_free, prev) {
            let link = word(b + bl.prev_phys).unwrap_or(0);
            if link != p {
                st.anomaly(
                    AnomalyKind::BadHeader,
                    Some(b),
                    format!("block at {b:#010x}: prev_phys_block is {link:#010x}, the previous block is {p:#010x}"),
                );
            }
        }
        if size == 0 {
            if free {
                st.anomaly(
                    AnomalyKind::BadHeader,
                    Some(b),
                    format!("the sentinel at {b:#010x} is marked free"),
                );
            }
            if b != sentinel {
                st.anomaly(
                    AnomalyKind::Overlap,
                    Some(b),
                    format!(
                        "the blocks end at a zero-size block at {b:#010x}, the pool's sentinel is at {sentinel:#010x}"
                    ),
                );
            }
            ended = true;
            break;
        }
        let next = b + 4 + size;
        if size < BLOCK_SIZE_MIN || next > sentinel || next + POOL_OVERHEAD > limit {
            st.anomaly(
                AnomalyKind::SizeOverflow,
                Some(b),
                format!(
                    "block at {b:#010x} has size {size}, {}",
                    if size < BLOCK_SIZE_MIN {
                        "below the TLSF minimum of 12".to_string()
                    } else {
                        format!("past the pool's end {limit:#010x}")
                    }
                ),
            );
            ended = true;
            break;
        }
        if free && prev_is_free {
            st.anomaly(
                AnomalyKind::NotCoalesced,
                Some(b),
                format!(
                    "free blocks at {:#010x} and {b:#010x} are adjacent",
                    prev.map_or(0, |p| p.0)
                ),
            );
        }
        let alloc_size = check_block(img, spec.poisoning, b, size, free, st);
        st.blocks.push(Block {
            addr: b,
            size: size + 4,
            free,
            unclaimed: false,
            alloc_size,
        });
        phys.insert(b, (size, free));
        prev = Some((b, free));
        b = next;
    }
    if !ended {
        st.anomaly(
            AnomalyKind::TooManyBlocks,
            Some(b),
            format!("the physical walk of the pool at {pool:#010x} ended without its sentinel"),
        );
    }

    // Free lists: every (fl, sl) head, its bitmap bits, and each list to the null block.
    let null_block = control;
    let fl_bitmap = word(params.fl_bitmap).unwrap_or(0);
    let mut listed: HashSet<u64> = HashSet::new();
    let list_bound = phys.len() + 1;
    for fl in 0..params.fl_count {
        let sl_map = word(params.sl_bitmap + 4 * fl).unwrap_or(0);
        if (fl_bitmap >> fl) & 1 != u64::from(sl_map != 0) {
            st.anomaly(
                AnomalyKind::BitmapMismatch,
                Some(params.sl_bitmap + 4 * fl),
                format!(
                    "fl_bitmap bit {fl} is {} but sl_bitmap[{fl}] is {sl_map:#x}",
                    (fl_bitmap >> fl) & 1
                ),
            );
        }
        for sl in 0..params.sl_count {
            let slot = params.blocks + 4 * (fl * params.sl_count + sl);
            let Some(head) = word(slot) else {
                st.anomaly(
                    AnomalyKind::OutOfRange,
                    Some(slot),
                    format!("free-list head blocks[{fl}][{sl}] is outside the memory read"),
                );
                continue;
            };
            if (sl_map >> sl) & 1 != u64::from(head != null_block) {
                st.anomaly(
                    AnomalyKind::BitmapMismatch,
                    Some(slot),
                    format!(
                        "sl_bitmap[{fl}] bit {sl} is {} but list [{fl}][{sl}] is {}",
                        (sl_map >> sl) & 1,
                        if head == null_block {
                            "empty"
                        } else {
                            "not empty"
                        }
                    ),
                );
            }
            let mut p = head;
            let mut back = null_block;
            let mut steps = 0;
            while p != null_block {
                steps += 1;
                if steps > list_bound {
                    st.anomaly(
                        AnomalyKind::TooManyBlocks,
                        Some(p),
                        format!("free list [{fl}][{sl}] is longer than the pool has blocks"),
                    );
                    break;
                }
                if !listed.insert(p) {
                    st.anomaly(
                        AnomalyKind::Cycle,
                        Some(p),
                        format!("free list [{fl}][{sl}] comes back to {p:#010x}"),
                    );
                    break;
                }
                let Some(&(size, free)) = phys.get(&p) else {
                    let inside = p >= pool.saturating_sub(4) && p < limit && p % 4 == 0;
                    st.anomaly(
                        if inside {
                            AnomalyKind::ListMismatch
                        } else {
                            AnomalyKind::OutOfRange
                        },
                        Some(p),
                        format!(
                            "free list [{fl}][{sl}] points to {p:#010x} (after {back:#010x}), {}",
                            if inside {
                                "which is not a block of the physical walk"
                            } else {
                                "outside the pool"
                            }
                        ),
                    );
                    break;
                };
                if !free {
                    st.anomaly(
                        AnomalyKind::ListMismatch,
                        Some(p),
                        format!("free list [{fl}][{sl}] holds the used block {p:#010x}"),
                    );
                }
                let (mfl, msl) = params.mapping(size);
                if (mfl, msl) != (fl, sl) {
                    st.anomaly(
                        AnomalyKind::ListMismatch,
                        Some(p),
                        format!("free block {p:#010x} of size {size} belongs in list [{mfl}][{msl}], found in [{fl}][{sl}]"),
                    );
                }
                let back_link = word(p + spec.block.prev_free).unwrap_or(0);
                if back_link != back {
                    st.anomaly(
                        AnomalyKind::BadHeader,
                        Some(p),
                        format!("free block {p:#010x}: prev_free is {back_link:#010x}, the list came from {back:#010x}"),
                    );
                }
                sum.free_list.push(p);
                back = p;
                p = word(p + spec.block.next_free).unwrap_or(0);
            }
        }
    }
    let mut free_payload_max = 0;
    let mut free_footprints = 0;
    let mut addrs: Vec<(&u64, &(u64, bool))> = phys.iter().collect();
    addrs.sort_unstable();
    for (&addr, &(size, free)) in addrs {
        if free {
            free_footprints += size + 4;
            free_payload_max = free_payload_max.max(size);
            if !listed.contains(&addr) {
                st.anomaly(
                    AnomalyKind::ListMismatch,
                    Some(addr),
                    format!("free block at {addr:#010x} is on no free list (lost)"),
                );
            }
            sum.free_phys_blocks += 1;
        } else {
            sum.used_blocks += 1;
        }
    }
    sum.free = free_footprints + 4 + slack;
    sum.largest_free = if free_payload_max > 0 {
        free_payload_max + 4
    } else {
        0
    };
    sum.largest_allocatable = params.fit_size(free_payload_max);
    if sum.free != free_bytes {
        st.anomaly(
            AnomalyKind::CounterMismatch,
            Some(spec.info),
            format!(
                "free_bytes of the heap at {:#010x} is {free_bytes}, the walk finds {} (free blocks {} + 4 × ({} + 1){})",
                spec.start,
                sum.free,
                free_footprints - 4 * phys.values().filter(|b| b.1).count() as u64,
                phys.values().filter(|b| b.1).count(),
                if slack > 0 { format!(" + {slack} bytes of alignment slack") } else { String::new() }
            ),
        );
    }
    if min_free > free_bytes {
        st.anomaly(
            AnomalyKind::CounterMismatch,
            Some(spec.info),
            format!("minimum_free_bytes {min_free} exceeds free_bytes {free_bytes} in the heap at {:#010x}", spec.start),
        );
    }
    sum
}
