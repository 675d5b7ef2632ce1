//! FreeRTOS heap_4 and heap_5 (ALLOCATORS.md §2).
//!
//! Both keep `BlockLink_t { pxNextFreeBlock; xBlockSize }` headers, an address-ordered free list
//! from `xStart` to the end marker `pxEnd`, and the allocated flag in the most significant bit of
//! `xBlockSize` (in every version; only where the mask lives changed). heap_5 spans several
//! regions, each closed by a zero-size marker that may sit in the free list as a region link.
//! With the V11 heap protector every stored link is XORed with `xHeapCanary`.

use memlife_core::Memory;
use memlife_dwarf::Symbols;

use super::{align_down, align_up, optional_static, require_static, resolved_statics};
use crate::image::MemImage;
use crate::state::{AnomalyKind, Block, HeapState, HeapStatus};
use crate::{HeapError, HeapWalker, WalkContext};

const CU: &[&str] = &["heap_4.c", "heap4.c", "heap_5.c", "heap5.c"];
const MALLOCS: &[&str] = &["pvPortMalloc", "pvPortCalloc", "pvPortRealloc"];
const FREES: &[&str] = &["vPortFree"];
/// heap_4/5 align to 8 on every Cortex-M and Xtensa port.
const ALIGN: u64 = 8;

/// Which of the two.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Variant {
    /// One arena, `ucHeap`.
    Heap4 {
        /// `ucHeap` address.
        uc_heap: u64,
        /// `configTOTAL_HEAP_SIZE`.
        size: u64,
    },
    /// Regions `(start, size)` as passed to `vPortDefineHeapRegions`.
    Heap5 {
        /// Regions sorted by address.
        regions: Vec<(u64, u64)>,
    },
}

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
    resolved: Vec<(String, u64, u64, String)>,
}

impl FreeRtosWalker {
    /// Resolves heap_4 (`ucHeap` present) from the symbols.
    pub fn heap4(symbols: &Symbols) -> Result<Self, HeapError> {
        let (uc_heap, size) = require_static(symbols, "freertos-heap4", "ucHeap", CU)?;
        let size = size.ok_or_else(|| {
            HeapError::Config("ucHeap has no size in DWARF or the symbol table".into())
        })?;
        Self::common(symbols, Variant::Heap4 { uc_heap, size }, "freertos-heap4")
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
            regions = find_region_table(symbols, mem)?;
        }
        regions.sort_unstable();
        Self::common(symbols, Variant::Heap5 { regions }, "freertos-heap5")
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
            min_ever: optional_static(symbols, "xMinimumEverFreeBytesRemaining", CU),
            allocs: optional_static(symbols, "xNumberOfSuccessfulAllocations", CU),
            frees: optional_static(symbols, "xNumberOfSuccessfulFrees", CU),
            canary: optional_static(symbols, "xHeapCanary", CU),
            suspended: optional_static(symbols, "uxSchedulerSuspended", &["tasks.c"]),
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
        walker.resolved.push((
            "xHeapStructSize (constant)".into(),
            0,
            walker.struct_size,
            format!(
                "BlockLink_t: pxNextFreeBlock@{} xBlockSize@{}",
                off_next, off_size
            ),
        ));
        Ok(walker)
    }

    /// Each region as `[first block, end marker)`, computed as the allocator does at init.
    fn region_bounds(&self, px_end: u64) -> Vec<(u64, u64)> {
        match &self.variant {
            Variant::Heap4 { uc_heap, size } => {
                let start = align_up(*uc_heap, ALIGN);
                let total = size.saturating_sub(start - uc_heap);
                let computed = align_down((start + total).saturating_sub(self.struct_size), ALIGN);
                // pxEnd is authoritative once initialised; the arithmetic is the fallback.
                let end = if px_end != 0 { px_end } else { computed };
                vec![(start, end)]
            }
            Variant::Heap5 { regions } => regions
                .iter()
                .map(|&(s, len)| {
                    let start = align_up(s, ALIGN);
                    let len = len.saturating_sub(start - s);
                    (
                        start,
                        align_down((start + len).saturating_sub(self.struct_size), ALIGN),
                    )
                })
                .collect(),
        }
    }

    fn arena_ranges(&self) -> Vec<(u64, u64)> {
        match &self.variant {
            Variant::Heap4 { uc_heap, size } => vec![(*uc_heap, *size)],
            Variant::Heap5 { regions } => regions.clone(),
        }
    }
}

/// The `HeapRegion_t[]` an application passed to `vPortDefineHeapRegions`, read from RAM/flash.
fn find_region_table(
    symbols: &Symbols,
    mem: Option<&mut dyn Memory>,
) -> Result<Vec<(u64, u64)>, HeapError> {
    let missing = || HeapError::MissingSymbol {
        allocator: "freertos-heap5",
        symbol: "a HeapRegion_t[] variable".into(),
        hint: " (heap_5 keeps no region list; pass --heap-region START:LEN)".into(),
    };
    let types = symbols.types();
    let region_ty = types.find_struct("HeapRegion_t").ok_or_else(missing)?;
    let table = symbols
        .variables()
        .iter()
        .find(|v| {
            v.address.is_some()
                && v.type_id.is_some_and(|t| match types.resolve(t) {
                    Some((
                        _,
                        memlife_dwarf::Type::Array {
                            element: Some(e), ..
                        },
                    )) => types.resolve(*e).map(|(id, _)| id) == Some(region_ty),
                    _ => false,
                })
        })
        .ok_or_else(missing)?;
    let mem = mem.ok_or_else(missing)?;
    let addr = table.address.ok_or_else(missing)?;
    let size = table
        .type_id
        .and_then(|t| types.size_of(t))
        .unwrap_or(0)
        .min(64 * 8);
    let bytes = mem.read_vec(addr, size as usize)?;
    let off_start = types
        .member(region_ty, "pucStartAddress")
        .map_or(0, |m| m.offset) as usize;
    let off_len = types
        .member(region_ty, "xSizeInBytes")
        .map_or(4, |m| m.offset) as usize;
    let stride = types.size_of(region_ty).unwrap_or(8) as usize;
    let mut regions = Vec::new();
    for entry in bytes.chunks_exact(stride.max(8)) {
        let word = |o: usize| {
            entry
                .get(o..o + 4)
                .map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
        };
        match (word(off_start), word(off_len)) {
            (Some(0), _) | (None, _) | (_, None) => break,
            (Some(s), Some(l)) => regions.push((s, l)),
        }
    }
    if regions.is_empty() {
        return Err(missing());
    }
    Ok(regions)
}

impl HeapWalker for FreeRtosWalker {
    fn name(&self) -> &'static str {
        match self.variant {
            Variant::Heap4 { .. } => "freertos-heap4",
            Variant::Heap5 { .. } => "freertos-heap5",
        }
    }

    fn entry_points(&self) -> (&'static [&'static str], &'static [&'static str]) {
        (MALLOCS, FREES)
    }

    fn resolved(&self) -> Vec<(String, u64, u64, String)> {
        self.resolved.clone()
    }

    fn block_of(&self, mem: &mut dyn Memory, ptr: u64) -> Result<Option<(u64, u64)>, HeapError> {
        let Some(block) = ptr.checked_sub(self.struct_size) else {
            return Ok(None);
        };
        let mut hdr = [0u8; 8];
        mem.read(block, &mut hdr)?;
        let off = self.off_size as usize;
        let raw = hdr.get(off..off + 4).map_or(0, |b| {
            u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        });
        let size = raw & !(1u64 << 31);
        Ok((raw & (1u64 << 31) != 0 && size > 0).then_some((block, size)))
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
        ranges.extend(self.arena_ranges());
        let img = MemImage::read(mem, &ranges)?;
        let word = |addr: u64| img.u32(addr).map(u64::from);
        let mut st = HeapState::empty(self.name());
        let canary = self.canary.and_then(word).unwrap_or(0);
        let unprotect = |p: u64| p ^ canary;
        let px_end_raw = word(self.px_end).unwrap_or(0);
        let px_end = if px_end_raw == 0 {
            0
        } else {
            unprotect(px_end_raw) & 0xffff_ffff
        };
        let free_counter = word(self.free_bytes).unwrap_or(0);
        st.counters
            .push(("xFreeBytesRemaining".into(), free_counter));
        st.min_ever_free = self.min_ever.and_then(word);
        if let Some(v) = st.min_ever_free {
            st.counters
                .push(("xMinimumEverFreeBytesRemaining".into(), v));
        }
        let allocs = self.allocs.and_then(word);
        let frees = self.frees.and_then(word);
        if let (Some(a), Some(f)) = (allocs, frees) {
            st.counters
                .push(("xNumberOfSuccessfulAllocations".into(), a));
            st.counters.push(("xNumberOfSuccessfulFrees".into(), f));
        }
        let suspended = self.suspended.and_then(word);
        if let Some(s) = suspended {
            st.counters.push(("uxSchedulerSuspended".into(), s));
        }
        let busy_lock = suspended.filter(|s| *s != 0).map(|s| {
            format!(
                "scheduler suspended (uxSchedulerSuspended = {s}): inside pvPortMalloc/vPortFree"
            )
        });

        let regions = self.region_bounds(px_end);
        st.heap_start = regions.first().map_or(0, |r| r.0);
        st.heap_size = regions.iter().map(|(s, e)| e.saturating_sub(*s)).sum();

        if px_end == 0 {
            // Not initialised: heap_4 sets itself up on the first pvPortMalloc. Show the layout that
            // call will create, one free block per region.
            st.status = HeapStatus::Uninitialised;
            for &(s, e) in &regions {
                let size = e.saturating_sub(s);
                st.blocks.push(Block {
                    addr: s,
                    size,
                    free: true,
                    unclaimed: false,
                });
                st.free_list.push(s);
            }
            st.total_free = st.heap_size;
            st.free_blocks = st.blocks.len() as u64;
            st.largest_free = st.blocks.iter().map(|b| b.size).max().unwrap_or(0);
            st.finish(ctx, busy_lock);
            return Ok(st);
        }

        if let Some(&(_, last_end)) = regions.last() {
            if let Variant::Heap4 { uc_heap, size } = &self.variant {
                let (start, _) = regions[0];
                let computed = align_down(
                    (start + size.saturating_sub(start - uc_heap)).saturating_sub(self.struct_size),
                    ALIGN,
                );
                if px_end != computed {
                    st.anomaly(
                        AnomalyKind::OutOfRange,
                        Some(px_end),
                        format!("pxEnd is {px_end:#010x}, expected {computed:#010x} from ucHeap"),
                    );
                }
            } else if px_end != last_end {
                st.anomaly(
                    AnomalyKind::OutOfRange,
                    Some(px_end),
                    format!("pxEnd is {px_end:#010x}, expected the last region's marker {last_end:#010x}"),
                );
            }
        }

        let msb = 1u64 << 31;
        let in_arena = |p: u64| regions.iter().any(|&(s, e)| p >= s && p <= e);
        let size_at = |b: u64| word(b + self.off_size);
        let next_at = |b: u64| word(b + self.off_next);

        // Physical walk: blocks tile each region from its start to its marker.
        for &(start, end) in &regions {
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
                let Some(raw) = size_at(b) else {
                    st.anomaly(
                        AnomalyKind::OutOfRange,
                        Some(b),
                        format!("block at {b:#010x} is outside the arena read"),
                    );
                    break;
                };
                let size = raw & !msb;
                let used = raw & msb != 0;
                if size == 0 || !size.is_multiple_of(ALIGN) || b + size > end {
                    st.anomaly(
                        AnomalyKind::SizeOverflow,
                        Some(b),
                        format!("block at {b:#010x} has size {size} (raw {raw:#010x}), past the end marker {end:#010x} or misaligned"),
                    );
                    break;
                }
                if used {
                    let link = next_at(b).unwrap_or(0);
                    if link != 0 && link != canary {
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
                });
                b += size;
            }
            if b != end && st.anomalies.is_empty() {
                st.anomaly(AnomalyKind::Overlap, Some(b), format!("blocks do not tile the region: walk ended at {b:#010x}, marker at {end:#010x}"));
            }
            match size_at(end) {
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
        }

        // Free-list walk: strictly increasing addresses, ends at pxEnd.
        let markers: Vec<u64> = regions.iter().map(|r| r.1).collect();
        let mut p = word(self.x_start + self.off_next)
            .map(unprotect)
            .unwrap_or(0)
            & 0xffff_ffff;
        let mut prev = 0u64;
        let bound = st.heap_size / ALIGN + regions.len() as u64 + 2;
        let mut list_sum = 0u64;
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
            if p == 0 || !in_arena(p) || p % ALIGN != 0 {
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
            let raw = size_at(p).unwrap_or(0);
            if raw == 0 && markers.contains(&p) {
                // heap_5 region link: a zero-size marker still in the list.
            } else if raw & msb != 0 {
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
                list_sum += raw;
            }
            prev = p;
            p = next_at(p).map(unprotect).unwrap_or(0) & 0xffff_ffff;
        }
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
        st.total_free = free_phys.iter().map(|b| b.size).sum();
        st.free_blocks = st.free_list.len() as u64;
        st.largest_free = free_phys.iter().map(|b| b.size).max().unwrap_or(0);
        if list_sum != free_counter || st.total_free != free_counter {
            st.anomaly(
                AnomalyKind::CounterMismatch,
                None,
                format!("xFreeBytesRemaining is {free_counter} but the free list holds {list_sum} and the physical walk {} bytes", st.total_free),
            );
        }
        let used_blocks = st.blocks.iter().filter(|b| !b.free).count() as u64;
        if let (Some(a), Some(f)) = (allocs, frees)
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
        st.finish(ctx, busy_lock);
        Ok(st)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use memlife_core::Snapshot;

    use super::*;
    use crate::AnomalyKind as K;

    const X_START: u64 = 0x2000_0000;
    const PX_END: u64 = 0x2000_0008;
    const FREE: u64 = 0x2000_000c;
    const MIN: u64 = 0x2000_0010;
    const ALLOCS: u64 = 0x2000_0014;
    const FREES: u64 = 0x2000_0018;
    const SUSP: u64 = 0x2000_001c;
    const CANARY: u64 = 0x2000_0020;
    const UC_HEAP: u64 = 0x2000_0100;
    const HEAP_SIZE: u64 = 0x400;
    const MSB: u32 = 1 << 31;

    /// A synthetic heap_4: RAM from 0x20000000, globals first, the arena at 0x20000100.
    struct Fake {
        ram: Vec<u8>,
        canary: u32,
    }

    impl Fake {
        fn put(&mut self, addr: u64, v: u32) {
            let o = (addr - X_START) as usize;
            self.ram[o..o + 4].copy_from_slice(&v.to_le_bytes());
        }
        fn get(&self, addr: u64) -> u32 {
            let o = (addr - X_START) as usize;
            u32::from_le_bytes(self.ram[o..o + 4].try_into().unwrap())
        }
        /// Lays out `blocks` (size, used) from the arena start; the rest up to pxEnd is free.
        fn heap4(blocks: &[(u32, bool)], canary: u32) -> Fake {
            let mut f = Fake {
                ram: vec![0; 0x600],
                canary,
            };
            let end = (UC_HEAP + HEAP_SIZE - 8) & !7;
            let mut all: Vec<(u64, u32, bool)> = Vec::new();
            let mut b = UC_HEAP;
            for &(s, used) in blocks {
                all.push((b, s, used));
                b += u64::from(s);
            }
            if b < end {
                all.push((b, (end - b) as u32, false));
            }
            let (mut allocs, mut free) = (0, 0);
            let mut prev_link = X_START;
            for &(addr, size, used) in &all {
                if used {
                    f.put(addr + 4, size | MSB);
                    f.put(addr, canary);
                    allocs += 1;
                } else {
                    f.put(addr + 4, size);
                    f.put(prev_link, addr as u32 ^ canary);
                    prev_link = addr;
                    free += size;
                }
            }
            f.put(prev_link, end as u32 ^ canary);
            f.put(end, canary);
            f.put(end + 4, 0);
            f.put(PX_END, end as u32 ^ canary);
            f.put(FREE, free);
            f.put(MIN, free);
            f.put(ALLOCS, allocs + 3);
            f.put(FREES, 3);
            f.put(CANARY, canary);
            f
        }
        fn walk(&self, with_canary: bool) -> HeapState {
            let mut w = walker();
            if with_canary {
                w.canary = Some(CANARY);
            }
            let mut snap = Snapshot::default();
            snap.add_region(X_START, self.ram.clone()).unwrap();
            w.walk(&mut snap, WalkContext::default()).unwrap()
        }
    }

    fn walker() -> FreeRtosWalker {
        FreeRtosWalker {
            variant: Variant::Heap4 {
                uc_heap: UC_HEAP,
                size: HEAP_SIZE,
            },
            x_start: X_START,
            px_end: PX_END,
            off_next: 0,
            off_size: 4,
            struct_size: 8,
            free_bytes: FREE,
            min_ever: Some(MIN),
            allocs: Some(ALLOCS),
            frees: Some(FREES),
            canary: None,
            suspended: Some(SUSP),
            resolved: Vec::new(),
        }
    }

    fn kinds(st: &HeapState) -> Vec<K> {
        st.anomalies.iter().map(|a| a.kind).collect()
    }

    #[test]
    fn healthy_heap_is_reconstructed_exactly() {
        let f = Fake::heap4(&[(0x40, true), (0x80, false), (0x100, true)], 0);
        let st = f.walk(false);
        assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
        assert_eq!(st.heap_start, UC_HEAP);
        assert_eq!(st.heap_size, 0x3f8);
        assert_eq!(st.blocks.len(), 4);
        assert_eq!(st.free_list, vec![0x2000_0140, 0x2000_02c0]);
        assert_eq!(st.total_free, 0x80 + 0x238);
        assert_eq!(st.total_free, u64::from(f.get(FREE)));
        assert_eq!(st.largest_free, 0x238);
        assert_eq!((st.free_blocks, st.used_blocks), (2, 2));
        assert_eq!(st.used, 0x140);
        let r = st.largest_free_ratio().unwrap();
        assert!((r - 0x238 as f64 / 0x2b8 as f64).abs() < 1e-9);
    }

    #[test]
    fn protected_links_are_unxored_with_the_canary() {
        let f = Fake::heap4(&[(0x40, true), (0x80, false), (0x100, true)], 0x5a5a_1234);
        let st = f.walk(true);
        assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
        assert_eq!(st.free_list.len(), 2);
        // Without knowing the canary the same memory is garbage, but still no panic.
        let st = f.walk(false);
        assert_eq!(st.status, HeapStatus::Corrupt);
    }

    #[test]
    fn a_free_list_cycle_is_reported_and_the_walk_ends() {
        let mut f = Fake::heap4(&[(0x40, true), (0x80, false), (0x100, true)], 0);
        f.put(0x2000_02c0, 0x2000_0140);
        let st = f.walk(false);
        assert_eq!(st.status, HeapStatus::Corrupt);
        assert!(kinds(&st).contains(&K::Cycle), "{:?}", st.anomalies);
    }

    #[test]
    fn a_wild_pointer_is_out_of_range() {
        let mut f = Fake::heap4(&[(0x40, true), (0x80, false), (0x100, true)], 0);
        f.put(0x2000_0140, 0xdead_beef);
        let st = f.walk(false);
        assert!(kinds(&st).contains(&K::OutOfRange), "{:?}", st.anomalies);
    }

    #[test]
    fn an_overwritten_size_is_a_size_overflow() {
        let mut f = Fake::heap4(&[(0x40, true), (0x80, false), (0x100, true)], 0);
        f.put(0x2000_01c4, 0x7fff_fff0 | MSB);
        let st = f.walk(false);
        assert!(kinds(&st).contains(&K::SizeOverflow), "{:?}", st.anomalies);
        f.put(0x2000_01c4, 0);
        assert!(kinds(&f.walk(false)).contains(&K::SizeOverflow));
    }

    #[test]
    fn an_overwritten_used_header_is_bad() {
        let mut f = Fake::heap4(&[(0x40, true), (0x80, false), (0x100, true)], 0);
        f.put(0x2000_0100, 0x4141_4141);
        assert!(kinds(&f.walk(false)).contains(&K::BadHeader));
    }

    #[test]
    fn counters_are_cross_checked() {
        let mut f = Fake::heap4(&[(0x40, true), (0x80, false), (0x100, true)], 0);
        f.put(FREE, 1234);
        let st = f.walk(false);
        assert_eq!(kinds(&st), vec![K::CounterMismatch]);
        assert!(
            st.anomalies[0]
                .message
                .contains("xFreeBytesRemaining is 1234")
        );
        let mut f = Fake::heap4(&[(0x40, true), (0x80, false), (0x100, true)], 0);
        f.put(ALLOCS, 99);
        assert_eq!(kinds(&f.walk(false)), vec![K::CounterMismatch]);
    }

    #[test]
    fn adjacent_free_blocks_are_not_coalesced() {
        let mut f = Fake::heap4(
            &[(0x40, true), (0x40, false), (0x40, false), (0x100, true)],
            0,
        );
        // The builder links both; the allocator would have merged them.
        let st = f.walk(false);
        assert!(kinds(&st).contains(&K::NotCoalesced), "{:?}", st.anomalies);
        f.put(FREE, 0);
    }

    #[test]
    fn inside_the_allocator_is_busy_not_corrupt() {
        let mut f = Fake::heap4(&[(0x40, true), (0x80, false), (0x100, true)], 0);
        f.put(FREE, 8);
        f.put(SUSP, 1);
        let st = f.walk(false);
        assert_eq!(st.status, HeapStatus::Busy);
        assert!(st.busy_reason.unwrap().contains("uxSchedulerSuspended = 1"));
        let mut snap = Snapshot::default();
        let mut f = Fake::heap4(&[(0x40, true)], 0);
        f.put(FREE, 8);
        snap.add_region(X_START, f.ram.clone()).unwrap();
        let st = walker()
            .walk(
                &mut snap,
                WalkContext {
                    inside_allocator: Some("pvPortMalloc"),
                },
            )
            .unwrap();
        assert_eq!(st.status, HeapStatus::Busy);
    }

    #[test]
    fn before_the_first_malloc_the_heap_is_uninitialised() {
        let f = Fake {
            ram: vec![0; 0x600],
            canary: 0,
        };
        let st = f.walk(false);
        assert_eq!(st.status, HeapStatus::Uninitialised);
        assert_eq!(st.total_free, 0x3f8);
        assert_eq!(st.blocks.len(), 1);
        assert_eq!(f.canary, 0);
    }

    #[test]
    fn a_truncated_arena_is_a_read_error_not_a_panic() {
        let f = Fake::heap4(&[(0x40, true)], 0);
        let mut snap = Snapshot::default();
        snap.add_region(X_START, f.ram[..0x300].to_vec()).unwrap();
        assert!(matches!(
            walker().walk(&mut snap, WalkContext::default()),
            Err(HeapError::Target(_))
        ));
    }

    #[test]
    fn random_garbage_never_panics_or_hangs() {
        let mut seed = 0x1234_5678_u32;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        for round in 0..400 {
            let mut f = Fake::heap4(&[(0x40, true), (0x80, false), (0x100, true)], 0);
            // Corrupt a few words of the arena or globals with values that often look plausible.
            for _ in 0..(1 + round % 6) {
                let off = u64::from(next() % 0x5fc) & !3;
                let v = match next() % 4 {
                    0 => next(),
                    1 => 0x2000_0000 + (next() % 0x600),
                    2 => next() % 0x400,
                    _ => (next() % 0x400) | MSB,
                };
                f.put(X_START + off, v);
            }
            let _ = f.walk(round % 2 == 0);
        }
    }

    #[test]
    fn heap5_regions_and_marker_links() {
        // Two regions; region 1's end marker is still linked into the free list.
        let mut ram = vec![0u8; 0x600];
        let mut put = |a: u64, v: u32| {
            let o = (a - X_START) as usize;
            ram[o..o + 4].copy_from_slice(&v.to_le_bytes());
        };
        let (r1, r1_len, r2, r2_len) = (0x2000_0100u64, 0x100u64, 0x2000_0300u64, 0x100u64);
        let m1 = r1 + r1_len - 8;
        let m2 = r2 + r2_len - 8;
        // Region 1: used 0x40 then free up to the marker; region 2 entirely free.
        put(r1 + 4, 0x40 | MSB);
        put(r1 + 0x40 + 4, (m1 - r1 - 0x40) as u32);
        put(r1 + 0x40, m1 as u32);
        put(m1, r2 as u32);
        put(m1 + 4, 0);
        put(r2 + 4, (m2 - r2) as u32);
        put(r2, m2 as u32);
        put(m2 + 4, 0);
        put(X_START, (r1 + 0x40) as u32);
        put(PX_END, m2 as u32);
        let free = (m1 - r1 - 0x40) + (m2 - r2);
        put(FREE, free as u32);
        let mut w = walker();
        w.variant = Variant::Heap5 {
            regions: vec![(r1, r1_len), (r2, r2_len)],
        };
        w.allocs = None;
        w.frees = None;
        let mut snap = Snapshot::default();
        snap.add_region(X_START, ram).unwrap();
        let st = w.walk(&mut snap, WalkContext::default()).unwrap();
        assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
        assert_eq!(st.total_free, free);
        assert_eq!(st.free_list, vec![r1 + 0x40, r2]);
        assert_eq!(st.heap_size, (m1 - r1) + (m2 - r2));
    }
}
