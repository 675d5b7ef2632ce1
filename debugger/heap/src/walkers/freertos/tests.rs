//! Synthetic heap_4 and heap_5 arenas laid out by a small writer, then damaged.
#![allow(clippy::unwrap_used)]

use memlife_core::Snapshot;

use super::*;
use crate::AnomalyKind as K;
use crate::firmware_view::{FreeRtosView, HeapStats};
use crate::testing::WalkModes;

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
    /// Lays out `blocks` (size, used) from the arena start; the rest up to pxEnd is free. With a
    /// non-zero `canary` the heap is protected as FreeRTOS >= V11.2.0 lays it out: links XORed,
    /// allocated blocks and the end marker holding `NULL ^ canary`, `pxEnd` plain.
    fn heap4(blocks: &[(u32, bool)], canary: u32) -> Fake {
        Fake::heap4_with(blocks, canary, canary)
    }
    /// As [`Fake::heap4`], with `alloc_link` in allocated blocks' `pxNextFreeBlock` (V11.0.0 to
    /// V11.1.0 leave a raw NULL there even with the protector on).
    fn heap4_with(blocks: &[(u32, bool)], canary: u32, alloc_link: u32) -> Fake {
        let mut f = Fake {
            ram: vec![0; 0x600],
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
                f.put(addr, alloc_link);
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
        // The variable pxEnd is never encoded.
        f.put(PX_END, end as u32);
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
        w.walk_modes(&mut snap, WalkContext::default()).unwrap()
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
    const C: u32 = 0x5a5a_1234;
    let blocks = [(0x40, true), (0x80, false), (0x100, true)];
    // Both encodings of allocated blocks: NULL ^ canary (V11.2.0 on) and raw NULL (V11.0-11.1).
    for alloc_link in [C, 0] {
        let f = Fake::heap4_with(&blocks, C, alloc_link);
        let st = f.walk(true);
        assert_eq!(
            st.status,
            HeapStatus::Ok,
            "{alloc_link:#x}: {:?}",
            st.anomalies
        );
        assert_eq!(st.free_list, vec![0x2000_0140, 0x2000_02c0]);
        assert_eq!((st.heap_start, st.heap_size), (UC_HEAP, 0x3f8));
        assert_eq!((st.total_free, st.used), (0x80 + 0x238, 0x140));
        assert_eq!((st.free_blocks, st.used_blocks), (2, 2));
        // The same heap unprotected walks to the same result.
        let plain = Fake::heap4(&blocks, 0).walk(false);
        assert_eq!((plain.blocks, plain.free_list), (st.blocks, st.free_list));
    }
    // Without knowing the canary the same memory is garbage, but still no panic.
    let st = Fake::heap4(&blocks, C).walk(false);
    assert_eq!(st.status, HeapStatus::Corrupt);
}

#[test]
fn a_damaged_protected_link_is_corrupt() {
    const C: u32 = 0x5a5a_1234;
    let blocks = [(0x40, true), (0x80, false), (0x100, true)];
    // A free block's link overwritten with a plain (unencoded) address: decodes to garbage.
    let mut f = Fake::heap4(&blocks, C);
    f.put(0x2000_0140, 0x2000_02c0);
    let st = f.walk(true);
    assert_eq!(st.status, HeapStatus::Corrupt);
    assert!(kinds(&st).contains(&K::OutOfRange), "{:?}", st.anomalies);
    // xStart's link flipped by one bit.
    let mut f = Fake::heap4(&blocks, C);
    f.put(X_START, f.get(X_START) ^ 0x100);
    assert_eq!(f.walk(true).status, HeapStatus::Corrupt);
    // An allocated block's protected NULL overwritten.
    let mut f = Fake::heap4(&blocks, C);
    f.put(UC_HEAP, 0x4141_4141);
    assert!(kinds(&f.walk(true)).contains(&K::BadHeader));
    // The end marker's protected NULL overwritten.
    let mut f = Fake::heap4(&blocks, C);
    f.put(0x2000_04f8, 0x2000_0000 ^ C);
    let st = f.walk(true);
    assert!(kinds(&st).contains(&K::BadHeader), "{:?}", st.anomalies);
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
    // The builder links both free blocks and counts them; the allocator would have merged them,
    // so that is the one thing wrong with this heap.
    let f = Fake::heap4(
        &[(0x40, true), (0x40, false), (0x40, false), (0x100, true)],
        0,
    );
    let st = f.walk(false);
    assert_eq!(kinds(&st), vec![K::NotCoalesced], "{:?}", st.anomalies);
    assert_eq!(st.status, HeapStatus::Corrupt);
    assert_eq!(st.anomalies[0].addr, Some(0x2000_0140));
    assert!(
        st.anomalies[0]
            .message
            .contains("0x20000140 and 0x20000180 are adjacent"),
        "{}",
        st.anomalies[0].message
    );
    // The same two free blocks with a used one between them are fine (the builder adds the
    // rest of the arena as a last free block, after a used one here).
    let f = Fake::heap4(
        &[
            (0x40, true),
            (0x40, false),
            (0x40, true),
            (0x40, false),
            (0x40, true),
        ],
        0,
    );
    let st = f.walk(false);
    assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
}

/// Issue 29: FreeRTOS suspends the scheduler in queue, timer and delay code too; a heap that
/// walks consistent while it is suspended is ok, not busy.
#[test]
fn a_suspended_scheduler_with_a_consistent_heap_is_ok() {
    let mut f = Fake::heap4(&[(0x40, true), (0x80, false), (0x100, true)], 0);
    f.put(SUSP, 1);
    let st = f.walk(false);
    assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
    assert_eq!(st.busy_reason, None);
    assert_eq!(st.counter("uxSchedulerSuspended"), Some(1));
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
        .walk_modes(
            &mut snap,
            WalkContext {
                inside_allocator: Some("pvPortMalloc"),
                ..WalkContext::default()
            },
        )
        .unwrap();
    assert_eq!(st.status, HeapStatus::Busy);
}

#[test]
fn before_the_first_malloc_the_heap_is_uninitialised() {
    // Zeroed .bss: pxEnd is still NULL, no counter has moved.
    let f = Fake {
        ram: vec![0; 0x600],
    };
    let st = f.walk(false);
    assert_eq!(st.status, HeapStatus::Uninitialised);
    assert!(st.anomalies.is_empty(), "{:?}", st.anomalies);
    // What the first pvPortMalloc will set up: one free block from the aligned start of ucHeap
    // to the end marker, xHeapStructSize bytes before the end of the array.
    assert_eq!(
        st.blocks,
        vec![Block {
            addr: UC_HEAP,
            size: HEAP_SIZE - 8,
            free: true,
            unclaimed: false,
            alloc_size: None
        }]
    );
    assert_eq!(st.free_list, vec![UC_HEAP]);
    assert_eq!((st.heap_start, st.heap_size), (UC_HEAP, HEAP_SIZE - 8));
    assert_eq!(
        (st.total_free, st.used, st.used_blocks),
        (HEAP_SIZE - 8, 0, 0)
    );
    // Once pxEnd is set the same memory is walked as an initialised (here damaged) heap.
    let mut f = Fake {
        ram: vec![0; 0x600],
    };
    f.put(PX_END, (UC_HEAP + HEAP_SIZE - 8) as u32);
    assert_ne!(f.walk(false).status, HeapStatus::Uninitialised);
}

#[test]
fn a_truncated_arena_is_a_read_error_not_a_panic() {
    let f = Fake::heap4(&[(0x40, true)], 0);
    let mut snap = Snapshot::default();
    snap.add_region(X_START, f.ram[..0x300].to_vec()).unwrap();
    assert!(matches!(
        walker().walk_modes(&mut snap, WalkContext::default()),
        Err(HeapError::Target(_))
    ));
}

/// Bounds on a walk's work over garbage (see `random_garbage_never_panics_or_hangs`).
const WORK_READS: u64 = 64;
const WORK_BYTES_PER_RAM_BYTE: u64 = 4;

#[test]
fn random_garbage_never_panics_or_hangs() {
    memlife_testkit::fuzz::cases(0x1234_5678, 400, |round, rng| {
        let mut next = || rng.next_u32();
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
        let mut w = walker();
        if round % 2 == 0 {
            w.canary = Some(CANARY);
        }
        let mut snap = Snapshot::default();
        snap.add_region(X_START, f.ram.clone()).unwrap();
        // heap_4 blocks are at least 8 bytes (one header). The work is bounded too: a few bulk
        // reads, never more bytes than a few times the RAM.
        let mut mem = memlife_testkit::ram::Counted::new(snap);
        crate::state::assert_walk_bounded(
            w.walk_modes(&mut mem, WalkContext::default()),
            HEAP_SIZE,
            8,
        );
        mem.assert_within(
            WORK_READS,
            WORK_BYTES_PER_RAM_BYTE * 0x600,
            "heap_4 garbage walk",
        );
    });
}

/// One heap_5 region for [`heap5`]: `(start, len)` as given to vPortDefineHeapRegions, the
/// blocks laid out from its aligned start (the rest up to its marker is free), and whether its
/// marker is still linked in the free list (a region link).
struct Region {
    start: u64,
    len: u64,
    blocks: &'static [(u32, bool)],
    marker_linked: bool,
}

/// A synthetic heap_5 laid out as vPortDefineHeapRegions and later calls leave it, protected
/// when `canary` is not 0 (links XORed, allocated blocks holding `alloc_link`, pxEnd plain).
/// Returns the RAM, the regions and the free bytes.
fn heap5(regions: &[Region], canary: u32, alloc_link: u32) -> (Fake, Vec<(u64, u64)>, u64) {
    let mut f = Fake {
        ram: vec![0; 0x600],
    };
    let mut prev_link = X_START;
    let mut free = 0u64;
    let mut allocs = 0;
    let mut last_marker = 0;
    for r in regions {
        let start = (r.start + 7) & !7;
        let marker = (start + r.len - (start - r.start) - 8) & !7;
        let mut b = start;
        let mut all = Vec::new();
        for &(size, used) in r.blocks {
            all.push((b, size, used));
            b += u64::from(size);
        }
        if b < marker {
            all.push((b, (marker - b) as u32, false));
        }
        for (addr, size, used) in all {
            if used {
                f.put(addr + 4, size | MSB);
                f.put(addr, alloc_link);
                allocs += 1;
            } else {
                f.put(addr + 4, size);
                f.put(prev_link, addr as u32 ^ canary);
                prev_link = addr;
                free += u64::from(size);
            }
        }
        f.put(marker + 4, 0);
        if r.marker_linked {
            f.put(prev_link, marker as u32 ^ canary);
            prev_link = marker;
        } else {
            // Absorbed: a stale link stays behind.
            f.put(marker, 0x2000_0123 ^ canary);
        }
        last_marker = marker;
    }
    f.put(last_marker, canary);
    f.put(PX_END, last_marker as u32);
    f.put(FREE, free as u32);
    f.put(MIN, free as u32);
    f.put(ALLOCS, allocs + 2);
    f.put(FREES, 2);
    f.put(CANARY, canary);
    let given = regions.iter().map(|r| (r.start, r.len)).collect();
    (f, given, free)
}

fn walk5(f: &Fake, regions: Vec<(u64, u64)>, with_canary: bool) -> HeapState {
    let mut w = walker();
    w.variant = Variant::Heap5 { regions };
    if with_canary {
        w.canary = Some(CANARY);
    }
    let mut snap = Snapshot::default();
    snap.add_region(X_START, f.ram.clone()).unwrap();
    w.walk_modes(&mut snap, WalkContext::default()).unwrap()
}

const THREE_REGIONS: [Region; 3] = [
    Region {
        start: 0x2000_0100,
        len: 0x100,
        blocks: &[(0x40, true)],
        marker_linked: true,
    },
    // Not 8-aligned: the allocator skips 4 bytes.
    Region {
        start: 0x2000_0284,
        len: 0xfc,
        blocks: &[(0x20, true), (0x30, false), (0x18, true)],
        marker_linked: false,
    },
    Region {
        start: 0x2000_0400,
        len: 0x100,
        blocks: &[],
        marker_linked: true,
    },
];

#[test]
fn heap5_regions_and_marker_links() {
    for (canary, alloc_link) in [(0, 0), (0x5a5a_1234, 0x5a5a_1234), (0x5a5a_1234, 0)] {
        let (f, regions, free) = heap5(&THREE_REGIONS, canary, alloc_link);
        let st = walk5(&f, regions, canary != 0);
        assert_eq!(
            st.status,
            HeapStatus::Ok,
            "{canary:#x}/{alloc_link:#x}: {:?}",
            st.anomalies
        );
        assert_eq!(st.total_free, free);
        // Region markers are links, not free blocks.
        assert_eq!(
            st.free_list,
            vec![0x2000_0140, 0x2000_02a8, 0x2000_02f0, 0x2000_0400]
        );
        assert_eq!(st.heap_start, 0x2000_0100);
        // [0x100, 0x1f8) + [0x288, 0x378) + [0x400, 0x4f8).
        assert_eq!(st.heap_size, 0xf8 + 0xf0 + 0xf8);
        assert_eq!(st.used_blocks, 3);
    }
}

#[test]
fn heap5_damaged_protected_link_is_corrupt() {
    let (mut f, regions, _) = heap5(&THREE_REGIONS, 0x5a5a_1234, 0x5a5a_1234);
    // Region 1's marker links to region 2's first free block: store it unencoded.
    f.put(0x2000_01f8, 0x2000_02a8);
    let st = walk5(&f, regions.clone(), true);
    assert_eq!(st.status, HeapStatus::Corrupt);
    assert!(kinds(&st).contains(&K::OutOfRange), "{:?}", st.anomalies);
    let (f, regions, _) = heap5(&THREE_REGIONS, 0x5a5a_1234, 0x5a5a_1234);
    assert_eq!(walk5(&f, regions, false).status, HeapStatus::Corrupt);
}

fn stats(st: &HeapState) -> FreeRtosView {
    match st.firmware_view {
        Some(crate::FirmwareView::FreeRtos(v)) => v,
        ref other => panic!("{other:?}"),
    }
}

#[test]
fn firmware_view_is_what_vportgetheapstats_returns() {
    let f = Fake::heap4(&[(0x40, true), (0x80, false), (0x100, true)], 0x5a5a_1234);
    let st = f.walk(true);
    let v = stats(&st);
    assert_eq!(
        v.heap_stats,
        HeapStats {
            xAvailableHeapSpaceInBytes: u64::from(f.get(FREE)),
            xSizeOfLargestFreeBlockInBytes: 0x238,
            xSizeOfSmallestFreeBlockInBytes: 0x80,
            xNumberOfFreeBlocks: 2,
            xMinimumEverFreeBytesRemaining: u64::from(f.get(MIN)),
            xNumberOfSuccessfulAllocations: 5,
            xNumberOfSuccessfulFrees: 3,
        }
    );
    assert_eq!(v.xPortGetFreeHeapSize, u64::from(f.get(FREE)));
    assert_eq!(v.xPortGetMinimumEverFreeHeapSize, u64::from(f.get(MIN)));
    let json = serde_json::to_value(st.report()).unwrap();
    assert_eq!(json["firmware_view"]["api"], "freertos");
    assert_eq!(
        json["firmware_view"]["heap_stats"]["xNumberOfFreeBlocks"],
        2
    );
}

#[test]
fn heap5_markers_still_linked_count_as_free_blocks_but_not_as_the_smallest() {
    let (f, regions, free) = heap5(&THREE_REGIONS, 0x5a5a_1234, 0x5a5a_1234);
    let st = walk5(&f, regions, true);
    let s = stats(&st).heap_stats;
    // Four free blocks and region 1's marker; region 2's was absorbed, region 3's is pxEnd.
    assert_eq!(s.xNumberOfFreeBlocks, 5);
    assert_eq!(st.free_blocks, 4);
    assert_eq!(s.xSizeOfSmallestFreeBlockInBytes, 0x30);
    assert_eq!(s.xSizeOfLargestFreeBlockInBytes, 0xf8);
    assert_eq!(s.xAvailableHeapSpaceInBytes, free);
}

#[test]
fn garbage_heap5_region_sizes_are_refused_before_any_read() {
    assert!(regions::check_regions(&[(0x2000_0000, 0x8000), (0x2001_0000, 0x4000)]).is_ok());
    for bad in [
        vec![(0x2000_0000, 0xffff_fff0)],
        vec![(0xffff_ff00, 0x1000)],
        vec![(0x2000_0000, regions::MAX_REGION + 1)],
        vec![(0x2000_0000, 16); regions::MAX_REGIONS + 1],
    ] {
        let err = regions::check_regions(&bad).unwrap_err();
        assert!(err.to_string().contains("damaged"), "{err}");
    }
}
