//! ESP-IDF's heap: `registered_heaps`, one `multi_heap_info` and TLSF pool per region
//! (docs/allocators/esp-idf-tlsf.md).
//!
//! The walk costs one read for `registered_heaps`, one per `heap_t_` list node (a handful), and
//! one batch for every region read whole (each region holds its `multi_heap_info`, its TLSF
//! control structure and its pool); everything else is parsed on the host ([`pool`]).
//!
//! Both generations of TLSF control structure are handled ([`layout::ControlLayout`], and
//! [`params`] for the parameters each heap's structure holds): the
//! dynamic one (a `size` member, parameters in bit fields, pointers to the bitmap and list
//! arrays) and the older fixed one (arrays sized at build time, read from the DWARF array
//! bounds). A heap whose spinlock (`heap_t_.heap_mux.owner`) is taken is reported busy.
//!
//! Sizes follow `multi_heap_info.free_bytes`: see [`pool`] for how blocks are counted, and why
//! `total_free` equals Σ `free_bytes` over the heaps.

pub(crate) mod caps;
mod layout;
mod params;
pub(crate) mod poison;
mod pool;
mod spec;

use memlife_core::Memory;
use memlife_dwarf::Symbols;

use super::{require_static, resolved_statics};
use crate::firmware_view::{EspIdfHeap, EspIdfView, FirmwareView, MultiHeapInfo, less_poison};
use crate::image::MemImage;
use crate::state::{AnomalyKind, HeapRegion, HeapState, HeapStatus};
use crate::{
    AllocatorKind, BlockRef, EntryPoint, HeaderRange, HeapError, HeapWalker, LowWaterMark,
    ResolvedSymbol, WalkContext,
};
use layout::Layouts;
pub use poison::Poisoning;
use pool::walk_pool;
use spec::PoolSpec;

const NAME: &str = AllocatorKind::EspIdfTlsf.name();
const CU: &[&str] = &["heap_caps_init.c", "heap_caps.c"];
/// `heap_caps_malloc(size, caps)` / `heap_caps_free(ptr)`: the public entries every ESP-IDF
/// allocation goes through (`malloc` and `pvPortMalloc` end there too).
const ENTRY_POINTS: &[EntryPoint] = &[
    EntryPoint::malloc("heap_caps_malloc", 0),
    EntryPoint::other_alloc("heap_caps_calloc"),
    EntryPoint::other_alloc("heap_caps_realloc"),
    EntryPoint::other_alloc("heap_caps_aligned_alloc"),
    EntryPoint::other_alloc("heap_caps_malloc_default"),
    EntryPoint::other_alloc("multi_heap_malloc"),
    EntryPoint::other_alloc("multi_heap_malloc_impl"),
    EntryPoint::other_alloc("tlsf_malloc"),
    EntryPoint::free("heap_caps_free", 0),
    EntryPoint::other_free("multi_heap_free"),
    EntryPoint::other_free("multi_heap_free_impl"),
    EntryPoint::other_free("tlsf_free"),
];
/// `SPINLOCK_FREE`: the owner word of a spinlock nobody holds.
const SPINLOCK_FREE: u64 = 0xB33F_FFFF;
/// More registered heaps than any chip has; a longer list is a cycle or garbage.
const MAX_HEAPS: usize = 32;
/// Never read more than this as one region (a wild `end` must not make us read gigabytes).
const MAX_REGION: u64 = 16 << 20;

/// Walker for the ESP-IDF multi-heap TLSF allocator.
#[derive(Debug, Clone)]
pub struct TlsfWalker {
    registered_heaps: u64,
    poisoning: Poisoning,
    layouts: Layouts,
    resolved: Vec<ResolvedSymbol>,
}

/// One `registered_heaps` entry as read.
#[derive(Debug, Clone)]
struct Node {
    addr: u64,
    caps: Vec<u64>,
    start: u64,
    end: u64,
    owner: u64,
    info: u64,
}

impl TlsfWalker {
    /// Resolves `registered_heaps` and the layouts from the symbols; the poisoning mode from
    /// them too unless `poisoning` says it.
    pub fn from_symbols(
        symbols: &Symbols,
        poisoning: Option<Poisoning>,
    ) -> Result<Self, HeapError> {
        let (registered_heaps, _) = require_static(symbols, NAME, "registered_heaps", CU)?;
        let layouts = Layouts::resolve(symbols);
        let mut resolved = resolved_statics(symbols, ["registered_heaps"], CU);
        let control = layouts
            .control
            .as_ref()
            .map_or("unknown", layout::ControlLayout::variant);
        resolved.push(ResolvedSymbol {
            name: "control_t (layout)".into(),
            address: 0,
            size: match &layouts.control {
                Some(layout::ControlLayout::Dynamic { struct_size, .. })
                | Some(layout::ControlLayout::Fixed { struct_size, .. }) => *struct_size,
                _ => 0,
            },
            type_name: format!(
                "{control}; from DWARF: {}",
                if layouts.from_dwarf.is_empty() {
                    "nothing (documented v5.x layouts)".to_string()
                } else {
                    layouts.from_dwarf.join(", ")
                }
            ),
        });
        let poisoning = poisoning.unwrap_or_else(|| Poisoning::detect(symbols));
        resolved.push(ResolvedSymbol {
            name: "heap poisoning".into(),
            address: 0,
            size: if poisoning == Poisoning::None {
                0
            } else {
                poison::POISON_OVERHEAD
            },
            type_name: poisoning.name().into(),
        });
        Ok(TlsfWalker {
            registered_heaps,
            poisoning,
            layouts,
            resolved,
        })
    }

    /// Follows `registered_heaps` through its `heap_t_` nodes, one small read each.
    fn nodes(&self, mem: &mut dyn Memory, st: &mut HeapState) -> Result<Vec<Node>, HeapError> {
        let head = mem.read_u32(self.registered_heaps)?;
        let l = &self.layouts.heap_t;
        let mut nodes: Vec<Node> = Vec::new();
        let mut p = u64::from(head);
        while p != 0 {
            if nodes.iter().any(|n| n.addr == p) {
                st.anomaly(
                    AnomalyKind::Cycle,
                    Some(p),
                    format!("registered_heaps comes back to {p:#010x}"),
                );
                break;
            }
            if nodes.len() >= MAX_HEAPS {
                st.anomaly(
                    AnomalyKind::TooManyBlocks,
                    Some(p),
                    format!("registered_heaps has more than {MAX_HEAPS} entries"),
                );
                break;
            }
            let len = usize::try_from(l.size).unwrap_or(36);
            let Ok(bytes) = mem.read_vec(p, len) else {
                st.anomaly(
                    AnomalyKind::OutOfRange,
                    Some(p),
                    format!("registered_heaps entry {p:#010x} cannot be read"),
                );
                break;
            };
            let img = MemImage::from_spans(vec![(p, bytes)]);
            let word = |off: u64| img.u32(p + off).map_or(0, u64::from);
            let caps = (0..l.caps.1.min(8))
                .map(|i| word(l.caps.0 + 4 * i))
                .collect();
            nodes.push(Node {
                addr: p,
                caps,
                start: word(l.start),
                end: word(l.end),
                owner: word(l.mux_owner),
                info: word(l.heap),
            });
            p = word(l.next);
        }
        Ok(nodes)
    }
}

impl HeapWalker for TlsfWalker {
    fn kind(&self) -> AllocatorKind {
        AllocatorKind::EspIdfTlsf
    }

    fn entry_points(&self) -> &'static [EntryPoint] {
        ENTRY_POINTS
    }

    fn resolved(&self) -> Vec<ResolvedSymbol> {
        self.resolved.clone()
    }

    fn checks_integrity(&self) -> bool {
        self.poisoning != Poisoning::None
    }

    fn low_water_mark(&self) -> LowWaterMark {
        LowWaterMark::PerHeap {
            counter: "minimum_free_bytes",
        }
    }

    /// The user pointer is the block + 8 (`prev_phys_block`, then the size word right before
    /// the user data), + 8 more with heap poisoning (the poison head sits in front of the data).
    fn header_range(&self, ptr: u64) -> Option<HeaderRange> {
        let head = if self.poisoning == Poisoning::None {
            0
        } else {
            8
        };
        Some(HeaderRange {
            addr: ptr.checked_sub(8 + head)?,
            len: 8,
        })
    }

    /// A block in use counts `size + 4` (what `multi_heap_malloc` takes from `free_bytes`).
    fn block_of(&self, mem: &mut dyn Memory, ptr: u64) -> Result<Option<BlockRef>, HeapError> {
        let Some(HeaderRange { addr: block, .. }) = self.header_range(ptr) else {
            return Ok(None);
        };
        let mut hdr = [0u8; 8];
        mem.read(block, &mut hdr)?;
        let off = usize::try_from(self.layouts.block.size).unwrap_or(4).min(4);
        let raw = u64::from(u32::from_le_bytes([
            hdr[off],
            hdr[off + 1],
            hdr[off + 2],
            hdr[off + 3],
        ]));
        let size = raw & !3;
        Ok(
            (raw & 1 == 0 && size > 0 && size <= MAX_REGION).then_some(BlockRef {
                addr: block,
                size: size + 4,
            }),
        )
    }

    fn walk(&self, mem: &mut dyn Memory, ctx: WalkContext) -> Result<HeapState, HeapError> {
        let mut st = HeapState::empty(NAME);
        let mut nodes = self.nodes(mem, &mut st)?;
        if nodes.is_empty() && st.anomalies.is_empty() {
            // heap_caps_init has not run yet.
            st.status = HeapStatus::Uninitialised;
            st.finish(ctx, None);
            return Ok(st);
        }
        // A region with no multi_heap_info is not registered yet (ESP-IDF's startup-stack
        // heaps before app_main); a wild one is not read.
        nodes.retain(|n| n.info != 0);
        nodes.retain(|n| {
            let ok = n.start < n.end && n.end - n.start <= MAX_REGION && n.start % 4 == 0;
            if !ok {
                st.anomaly(
                    AnomalyKind::OutOfRange,
                    Some(n.addr),
                    format!(
                        "registered heap {:#010x} has the region {:#010x}..{:#010x}",
                        n.addr, n.start, n.end
                    ),
                );
            }
            ok
        });
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for n in &nodes {
            ranges.push((n.start, n.end - n.start));
            if n.info < n.start || n.info + self.layouts.info.size > n.end {
                ranges.push((n.info, self.layouts.info.size));
            }
        }
        let (img, mut read) = MemImage::for_walk(mem, &ranges, &ctx.read)?;
        let mut by_addr = nodes.clone();
        by_addr.sort_by_key(|n| n.start);
        for pair in by_addr.windows(2) {
            if pair[1].start < pair[0].end {
                st.anomaly(
                    AnomalyKind::Overlap,
                    Some(pair[1].start),
                    format!(
                        "heaps {:#010x}..{:#010x} and {:#010x}..{:#010x} overlap",
                        pair[0].start, pair[0].end, pair[1].start, pair[1].end
                    ),
                );
            }
        }
        let control = self
            .layouts
            .control
            .clone()
            .unwrap_or(layout::ControlLayout::Unknown);
        let mut busy: Option<String> = None;
        let mut min_sum: Option<u64> = None;
        let mut free_bytes_sum = 0;
        let mut views = Vec::new();
        for n in &by_addr {
            let spec = PoolSpec {
                start: n.start,
                end: n.end,
                info: n.info,
                info_layout: &self.layouts.info,
                control: &control,
                block: &self.layouts.block,
                poisoning: self.poisoning,
            };
            let sum = walk_pool(&img, &spec, &mut st);
            let mask = n.caps.iter().fold(0u32, |a, c| a | (*c as u32));
            views.push((n.addr, heap_view(n.start, mask, &sum, self.poisoning)));
            // 0 is a lock nobody initialised (zeroed .bss), not a core id.
            let held = n.owner != SPINLOCK_FREE && n.owner != 0;
            let busy_reason = held.then(|| {
                format!(
                    "the lock of the heap at {:#010x} is held (heap_mux.owner = {:#x}): inside heap_caps_malloc/free",
                    n.start, n.owner
                )
            });
            if busy.is_none() {
                busy.clone_from(&busy_reason);
            }
            let mut counters = sum.counters.clone();
            counters.push(("heap_mux.owner".into(), n.owner));
            if let Some(m) = sum.minimum_free_bytes {
                min_sum = Some(min_sum.unwrap_or(0) + m);
            }
            free_bytes_sum += sum.free_bytes.unwrap_or(0);
            let largest_allocatable = sum.largest_allocatable;
            st.free_list.extend(&sum.free_list);
            st.regions.push(HeapRegion {
                start: n.start,
                end: n.end,
                kind: caps::kind(mask),
                caps: caps::names(mask),
                caps_raw: n.caps.clone(),
                size: sum.capacity,
                free: sum.free,
                used: sum.capacity.saturating_sub(sum.free),
                largest_free: sum.largest_free,
                largest_allocatable,
                free_blocks: sum.free_list.len() as u64,
                used_blocks: sum.used_blocks,
                min_ever_free: sum.minimum_free_bytes,
                counters,
                busy_reason,
            });
        }
        st.blocks.sort_by_key(|b| b.addr);
        st.heap_start = st.regions.first().map_or(0, |r| r.start);
        st.heap_size = st.regions.iter().map(|r| r.size).sum();
        st.total_free = st.regions.iter().map(|r| r.free).sum();
        st.largest_free = st.regions.iter().map(|r| r.largest_free).max().unwrap_or(0);
        st.largest_allocatable = st.regions.iter().map(|r| r.largest_allocatable).max();
        st.free_blocks = st.free_list.len() as u64;
        st.min_ever_free = min_sum;
        st.counters.push(("free_bytes".into(), free_bytes_sum));
        if let Some(m) = min_sum {
            st.counters.push(("minimum_free_bytes".into(), m));
        }
        st.counters
            .push(("registered_heaps".into(), st.regions.len() as u64));
        // The API iterates registered_heaps in list order.
        let heaps = nodes
            .iter()
            .filter_map(|n| views.iter().find(|v| v.0 == n.addr).map(|v| v.1.clone()))
            .collect();
        st.firmware_view = Some(FirmwareView::EspIdf(EspIdfView::new(
            self.poisoning.name(),
            heaps,
        )));
        st.poisoning = Some(self.poisoning.name());
        img.finish(&mut read)?;
        st.read = read;
        st.finish(ctx, busy);
        Ok(st)
    }
}

/// What `multi_heap_get_info`, `multi_heap_free_size` and `multi_heap_minimum_free_size`
/// return for one heap: the raw counters and the walk, less the poisoning overhead where
/// poisoning is built in (once per heap for the byte figures, once per block in use for the
/// allocated bytes).
fn heap_view(start: u64, caps: u32, sum: &pool::PoolSummary, p: Poisoning) -> EspIdfHeap {
    let poisoned = p != Poisoning::None;
    let free_bytes = sum.free_bytes.unwrap_or(0);
    let min_free = sum.minimum_free_bytes.unwrap_or(0);
    let allocated = sum.used_blocks;
    let overhead = 4 + if poisoned { poison::POISON_OVERHEAD } else { 0 };
    let total_allocated = sum
        .capacity
        .wrapping_sub(free_bytes)
        .wrapping_sub(overhead * allocated)
        & 0xffff_ffff;
    EspIdfHeap {
        start,
        caps,
        info: MultiHeapInfo {
            total_free_bytes: less_poison(free_bytes, poisoned),
            total_allocated_bytes: total_allocated,
            largest_free_block: less_poison(sum.largest_allocatable, poisoned),
            minimum_free_bytes: less_poison(min_free, poisoned),
            allocated_blocks: allocated,
            free_blocks: sum.free_phys_blocks,
            total_blocks: allocated + sum.free_phys_blocks,
        },
        free_size: less_poison(free_bytes, poisoned),
        minimum_free_size: less_poison(min_free, poisoned),
    }
}

#[cfg(test)]
mod tests;
