//! The two walks over an arena already read: the physical one (blocks tile each region from its
//! start to its end marker) and the free list (address-ordered from `xStart` to `pxEnd`).
//! No target access here: everything comes from the [`MemImage`].

use super::protector::Protector;
use super::regions::ALIGN;
use crate::image::MemImage;
use crate::state::{AnomalyKind, Block, HeapState};

/// The allocated flag: the most significant bit of a 32-bit `xBlockSize`.
pub(super) const ALLOCATED: u64 = 1 << 31;

/// An arena image with the header layout to read it.
pub(super) struct Arena<'a> {
    /// The globals and every region, read.
    pub img: &'a MemImage<'a>,
    /// `BlockLink_t.pxNextFreeBlock` offset.
    pub off_next: u64,
    /// `BlockLink_t.xBlockSize` offset.
    pub off_size: u64,
    /// Regions as `[first block, end marker)`.
    pub regions: &'a [(u64, u64)],
    /// How stored links decode.
    pub protector: Protector,
}

impl Arena<'_> {
    fn word(&self, addr: u64) -> Option<u64> {
        self.img.u32(addr).map(u64::from)
    }

    fn size_at(&self, block: u64) -> Option<u64> {
        self.word(block + self.off_size)
    }

    fn next_at(&self, block: u64) -> Option<u64> {
        self.word(block + self.off_next)
    }

    fn in_arena(&self, p: u64) -> bool {
        self.regions.iter().any(|&(s, e)| p >= s && p <= e)
    }

    /// Walks one region block by block from `start` to its end marker at `end`, pushing each
    /// block to `st.blocks`; damage ends the region's walk with an anomaly.
    pub(super) fn walk_region(&self, start: u64, end: u64, st: &mut HeapState) {
        let mut b = start;
        let bound = (end.saturating_sub(start)) / ALIGN + 2;
        let mut steps = 0;
        while b < end {
            steps += 1;
            if steps > bound {
                st.anomaly(
                    AnomalyKind::TooManyBlocks,
                    Some(b),
                    "physical walk exceeded its bound".into(),
                );
                break;
            }
            let Some(raw) = self.size_at(b) else {
                st.anomaly(
                    AnomalyKind::OutOfRange,
                    Some(b),
                    format!("block at {b:#010x} is outside the arena read"),
                );
                break;
            };
            let size = raw & !ALLOCATED;
            let used = raw & ALLOCATED != 0;
            if size == 0 || !size.is_multiple_of(ALIGN) || b + size > end {
                st.anomaly(
                    AnomalyKind::SizeOverflow,
                    Some(b),
                    format!("block at {b:#010x} has size {size} (raw {raw:#010x}), past the end marker {end:#010x} or misaligned"),
                );
                break;
            }
            if used {
                let link = self.next_at(b).unwrap_or(0);
                if !self.protector.is_allocated_link(link) {
                    st.anomaly(
                        AnomalyKind::BadHeader,
                        Some(b),
                        format!("allocated block at {b:#010x} has pxNextFreeBlock = {link:#010x} (header overwritten?)"),
                    );
                }
            }
            st.blocks.push(Block {
                addr: b,
                size,
                free: !used,
                unclaimed: false,
                alloc_size: None,
            });
            b += size;
        }
        if b != end && st.anomalies.is_empty() {
            st.anomaly(
                AnomalyKind::Overlap,
                Some(b),
                format!(
                    "blocks do not tile the region: walk ended at {b:#010x}, marker at {end:#010x}"
                ),
            );
        }
        match self.size_at(end) {
            Some(0) => {}
            Some(v) => st.anomaly(
                AnomalyKind::BadHeader,
                Some(end),
                format!("end marker at {end:#010x} has size {v}, expected 0"),
            ),
            None => st.anomaly(
                AnomalyKind::OutOfRange,
                Some(end),
                "end marker outside the arena".into(),
            ),
        }
        // The last marker (`pxEnd`) links nowhere: NULL, protected or not. heap_5's other
        // markers link to the next region or hold a stale link once absorbed.
        if self.regions.last().is_some_and(|r| r.1 == end)
            && let Some(link) = self.next_at(end)
            && !self.protector.is_allocated_link(link)
        {
            st.anomaly(
                AnomalyKind::BadHeader,
                Some(end),
                format!(
                    "end marker at {end:#010x} has pxNextFreeBlock = {link:#010x}, expected NULL"
                ),
            );
        }
    }

    /// Follows the free list from the block `xStart` (at `x_start`) links to, up to `px_end`:
    /// strictly increasing addresses inside the arena, each a free block of the physical walk
    /// (heap_5's zero-size region markers may sit in it as links). Pushes each block to
    /// `st.free_list` and returns what `vPortGetHeapStats` sees of the list.
    pub(super) fn walk_free_list(
        &self,
        x_start: u64,
        px_end: u64,
        st: &mut HeapState,
    ) -> FreeListWalk {
        let markers: Vec<u64> = self.regions.iter().map(|r| r.1).collect();
        let mut p = self
            .next_at(x_start)
            .map_or(0, |stored| self.protector.link(stored));
        let mut prev = 0u64;
        let bound = st.heap_size / ALIGN + self.regions.len() as u64 + 2;
        let mut list = FreeListWalk::default();
        for step in 0.. {
            if p == px_end {
                break;
            }
            if step > bound {
                st.anomaly(
                    AnomalyKind::Cycle,
                    Some(p),
                    "free list does not reach pxEnd within its bound".into(),
                );
                break;
            }
            if p == 0 || !self.in_arena(p) || !p.is_multiple_of(ALIGN) {
                st.anomaly(
                    AnomalyKind::OutOfRange,
                    Some(p),
                    format!("free list points to {p:#010x}, outside the heap (after {prev:#010x})"),
                );
                break;
            }
            if p <= prev {
                st.anomaly(
                    AnomalyKind::Cycle,
                    Some(p),
                    format!("free list goes back from {prev:#010x} to {p:#010x}"),
                );
                break;
            }
            let raw = self.size_at(p).unwrap_or(0);
            if raw == 0 && markers.contains(&p) {
                // heap_5 region link: a zero-size marker still in the list.
                list.markers += 1;
            } else if raw & ALLOCATED != 0 {
                st.anomaly(
                    AnomalyKind::ListMismatch,
                    Some(p),
                    format!("free-list entry {p:#010x} is marked allocated"),
                );
            } else {
                if !st.blocks.iter().any(|b| b.addr == p && b.free) {
                    st.anomaly(
                        AnomalyKind::ListMismatch,
                        Some(p),
                        format!(
                            "free-list entry {p:#010x} is not a free block of the physical walk"
                        ),
                    );
                }
                st.free_list.push(p);
                list.sum += raw;
                list.count += 1;
                list.largest = list.largest.max(raw);
                list.smallest = Some(list.smallest.map_or(raw, |m: u64| m.min(raw)));
            }
            prev = p;
            p = self
                .next_at(p)
                .map_or(0, |stored| self.protector.link(stored));
        }
        list
    }
}

/// The free list as `vPortGetHeapStats` walks it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct FreeListWalk {
    /// Σ sizes of the free blocks.
    pub sum: u64,
    /// heap_5 region markers still linked (zero-size entries other than `pxEnd`).
    pub markers: u64,
    /// Largest free block.
    pub largest: u64,
    /// Free blocks on the list (markers excluded).
    pub count: u64,
    /// Smallest free block (markers excluded), `None` when there is none.
    pub smallest: Option<u64>,
}
