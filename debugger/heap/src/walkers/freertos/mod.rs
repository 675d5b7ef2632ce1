//! FreeRTOS heap_4 and heap_5 (docs/allocators/freertos-heap4-heap5.md).
//!
//! Both keep `BlockLink_t { pxNextFreeBlock; xBlockSize }` headers, an address-ordered free list
//! from `xStart` to the end marker `pxEnd`, and the allocated flag in the most significant bit of
//! `xBlockSize` (in every version; only where the mask lives changed). heap_5 spans several
//! regions, each closed by a zero-size marker that may sit in the free list as a region link.
//!
//! A walk is one bulk read of the globals and the arena, then, on the host:
//! - [`regions`]: where the arena is (heap_4's `ucHeap`, heap_5's regions) and where each
//!   region's first block and end marker sit;
//! - `protector`: how stored links decode under the V11 heap protector (the one place that
//!   knows about `xHeapCanary`);
//! - `arena`: the physical walk of each region and the free-list walk;
//! - `counters`: the allocator's counters and the scheduler lock as read, and what the
//!   firmware's own heap API would return from them;
//! - `checks`: lost blocks, missed coalescing and the allocator's counters cross-checked.

mod arena;
mod checks;
mod counters;
mod protector;
mod regions;

use memlife_core::Memory;
use memlife_dwarf::Symbols;

use super::{optional_static, require_static, resolved_statics};
use crate::image::MemImage;
use crate::state::{Block, HeapState, HeapStatus};
use crate::{
    AllocatorKind, BlockRef, EntryPoint, HeaderRange, HeapError, HeapWalker, LowWaterMark,
    ResolvedSymbol, WalkContext,
};
use arena::Arena;
use counters::Counters;
use protector::Protector;
pub use regions::Variant;

const CU: &[&str] = &["heap_4.c", "heap4.c", "heap_5.c", "heap5.c"];
const ENTRY_POINTS: &[EntryPoint] = &[
    EntryPoint::malloc("pvPortMalloc", 0),
    EntryPoint::other_alloc("pvPortCalloc"),
    EntryPoint::other_alloc("pvPortRealloc"),
    EntryPoint::free("vPortFree", 0),
];

/// Walker for heap_4 and heap_5.
#[derive(Debug, Clone)]
pub struct FreeRtosWalker {
    variant: Variant,
    x_start: u64,
    px_end: u64,
    off_next: u64,
    off_size: u64,
    struct_size: u64,
    free_bytes: u64,
    min_ever: Option<u64>,
    allocs: Option<u64>,
    frees: Option<u64>,
    canary: Option<u64>,
    suspended: Option<u64>,
    resolved: Vec<ResolvedSymbol>,
}

impl FreeRtosWalker {
    /// Resolves heap_4 (`ucHeap` present) from the symbols.
    pub fn heap4(symbols: &Symbols) -> Result<Self, HeapError> {
        let (uc_heap, size) = require_static(symbols, AllocatorKind::Heap4.name(), "ucHeap", CU)?;
        let size = size.ok_or_else(|| {
            HeapError::Config("ucHeap has no size in DWARF or the symbol table".into())
        })?;
        Self::common(
            symbols,
            Variant::Heap4 { uc_heap, size },
            AllocatorKind::Heap4.name(),
        )
    }

    /// Resolves heap_5; regions come from `regions` if given, else from an application
    /// `HeapRegion_t[]` variable found through DWARF.
    pub fn heap5(
        symbols: &Symbols,
        regions: &[(u64, u64)],
        mem: Option<&mut dyn Memory>,
    ) -> Result<Self, HeapError> {
        let mut regions = regions.to_vec();
        if regions.is_empty() {
            regions = regions::find_region_table(symbols, mem)?;
        }
        regions.sort_unstable();
        regions::check_regions(&regions)?;
        Self::common(
            symbols,
            Variant::Heap5 { regions },
            AllocatorKind::Heap5.name(),
        )
    }

    fn common(symbols: &Symbols, variant: Variant, name: &'static str) -> Result<Self, HeapError> {
        let (x_start, _) = require_static(symbols, name, "xStart", CU)?;
        let (px_end, _) = require_static(symbols, name, "pxEnd", CU)?;
        let (free_bytes, _) = require_static(symbols, name, "xFreeBytesRemaining", CU)?;
        let types = symbols.types();
        let link = types
            .find_struct("BlockLink_t")
            .or_else(|| types.find_struct("A_BLOCK_LINK"));
        let off_next = link
            .and_then(|t| types.member(t, "pxNextFreeBlock"))
            .map_or(0, |m| m.offset);
        let off_size = link
            .and_then(|t| types.member(t, "xBlockSize"))
            .map_or(4, |m| m.offset);
        let struct_size = symbols
            .const_value("xHeapStructSize", CU)
            .and_then(|v| u64::try_from(v).ok())
            .filter(|v| *v > 0 && *v <= 64)
            .unwrap_or(8);
        let mut walker = FreeRtosWalker {
            variant,
            x_start,
            px_end,
            off_next,
            off_size,
            struct_size,
            free_bytes,
            min_ever: optional_static(symbols, name, "xMinimumEverFreeBytesRemaining", CU)?,
            allocs: optional_static(symbols, name, "xNumberOfSuccessfulAllocations", CU)?,
            frees: optional_static(symbols, name, "xNumberOfSuccessfulFrees", CU)?,
            canary: optional_static(symbols, name, "xHeapCanary", CU)?,
            suspended: optional_static(symbols, name, "uxSchedulerSuspended", &["tasks.c"])?,
            resolved: Vec::new(),
        };
        walker.resolved = resolved_statics(
            symbols,
            [
                "ucHeap",
                "xStart",
                "pxEnd",
                "xFreeBytesRemaining",
                "xMinimumEverFreeBytesRemaining",
                "xNumberOfSuccessfulAllocations",
                "xNumberOfSuccessfulFrees",
                "xHeapCanary",
                "xBlockAllocatedBit",
                "uxSchedulerSuspended",
            ],
            CU,
        );
        walker.resolved.push(ResolvedSymbol {
            name: "xHeapStructSize (constant)".into(),
            address: 0,
            size: walker.struct_size,
            type_name: format!(
                "BlockLink_t: pxNextFreeBlock@{} xBlockSize@{}",
                off_next, off_size
            ),
        });
        Ok(walker)
    }

    /// The counters as `img` holds them.
    fn counters(&self, img: &MemImage) -> Counters {
        let word = |addr: u64| img.u32(addr).map(u64::from);
        Counters {
            free_bytes: word(self.free_bytes).unwrap_or(0),
            min_ever: self.min_ever.and_then(word),
            allocs: self.allocs.and_then(word),
            frees: self.frees.and_then(word),
            suspended: self.suspended.and_then(word),
        }
    }
}

impl HeapWalker for FreeRtosWalker {
    fn kind(&self) -> AllocatorKind {
        match self.variant {
            Variant::Heap4 { .. } => AllocatorKind::Heap4,
            Variant::Heap5 { .. } => AllocatorKind::Heap5,
        }
    }

    fn entry_points(&self) -> &'static [EntryPoint] {
        ENTRY_POINTS
    }

    fn resolved(&self) -> Vec<ResolvedSymbol> {
        self.resolved.clone()
    }

    fn low_water_mark(&self) -> LowWaterMark {
        match self.min_ever {
            Some(minimum) => LowWaterMark::Counters {
                free: self.free_bytes,
                minimum,
            },
            None => LowWaterMark::None,
        }
    }

    /// The `BlockLink_t` header sits `xHeapStructSize` bytes before the user pointer.
    fn header_range(&self, ptr: u64) -> Option<HeaderRange> {
        Some(HeaderRange {
            addr: ptr.checked_sub(self.struct_size)?,
            len: 8,
        })
    }

    fn block_of(&self, mem: &mut dyn Memory, ptr: u64) -> Result<Option<BlockRef>, HeapError> {
        let Some(HeaderRange { addr: block, .. }) = self.header_range(ptr) else {
            return Ok(None);
        };
        let mut hdr = [0u8; 8];
        mem.read(block, &mut hdr)?;
        let off = self.off_size as usize;
        let raw = hdr.get(off..off + 4).map_or(0, |b| {
            u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        });
        let size = raw & !arena::ALLOCATED;
        Ok((raw & arena::ALLOCATED != 0 && size > 0).then_some(BlockRef { addr: block, size }))
    }

    fn walk(&self, mem: &mut dyn Memory, ctx: WalkContext) -> Result<HeapState, HeapError> {
        let mut ranges = vec![(self.x_start, 8), (self.px_end, 4), (self.free_bytes, 4)];
        for a in [
            self.min_ever,
            self.allocs,
            self.frees,
            self.canary,
            self.suspended,
        ]
        .into_iter()
        .flatten()
        {
            ranges.push((a, 4));
        }
        ranges.extend(self.variant.arena_ranges());
        let (img, mut read) = MemImage::for_walk(mem, &ranges, &ctx.read)?;
        let protector = Protector::read(&img, self.canary);
        let px_end = protector.end_marker(img.u32(self.px_end).map_or(0, u64::from));
        let counters = self.counters(&img);
        let mut st = HeapState::empty(self.name());
        counters.record(&mut st);
        let busy_lock = counters.busy_lock();

        let regions = self.variant.region_bounds(px_end, self.struct_size);
        st.heap_start = regions.first().map_or(0, |r| r.0);
        st.heap_size = regions.iter().map(|(s, e)| e.saturating_sub(*s)).sum();

        if px_end == 0 {
            st.firmware_view = Some(counters.firmware_view(&arena::FreeListWalk::default()));
            uninitialised(&mut st, &regions);
            img.finish(&mut read)?;
            st.read = read;
            st.finish(ctx, busy_lock);
            return Ok(st);
        }
        self.variant
            .check_end_marker(px_end, &regions, self.struct_size, &mut st);

        let arena = Arena {
            img: &img,
            off_next: self.off_next,
            off_size: self.off_size,
            regions: &regions,
            protector,
        };
        for &(start, end) in &regions {
            arena.walk_region(start, end, &mut st);
        }
        let list = arena.walk_free_list(self.x_start, px_end, &mut st);

        checks::lost_blocks(&mut st);
        checks::coalescing(&mut st);
        let free = st.blocks.iter().filter(|b| b.free);
        st.total_free = free.clone().map(|b| b.size).sum();
        st.largest_free = free.map(|b| b.size).max().unwrap_or(0);
        st.free_blocks = st.free_list.len() as u64;
        checks::counters(&mut st, &counters, list.sum);
        st.firmware_view = Some(counters.firmware_view(&list));
        img.finish(&mut read)?;
        st.read = read;
        // The scheduler suspended only explains a walk that found something amiss.
        let busy_lock = busy_lock.filter(|_| !st.anomalies.is_empty());
        st.finish(ctx, busy_lock);
        Ok(st)
    }
}

/// heap_4 sets itself up on the first pvPortMalloc: before that, show the layout that call
/// will create, one free block per region.
fn uninitialised(st: &mut HeapState, regions: &[(u64, u64)]) {
    st.status = HeapStatus::Uninitialised;
    for &(s, e) in regions {
        st.blocks.push(Block {
            addr: s,
            size: e.saturating_sub(s),
            free: true,
            unclaimed: false,
            alloc_size: None,
        });
        st.free_list.push(s);
    }
    st.total_free = st.heap_size;
    st.free_blocks = st.blocks.len() as u64;
    st.largest_free = st.blocks.iter().map(|b| b.size).max().unwrap_or(0);
}

#[cfg(test)]
mod tests;
