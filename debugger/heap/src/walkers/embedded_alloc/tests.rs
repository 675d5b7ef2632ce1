//! Both walkers on hand-built memory: the layouts the firmware's DWARF gives (32-bit), heaps as
//! linked_list_allocator and rlsf leave them, and damage of every kind the walks check.
#![allow(clippy::unwrap_used)]

use crate::testing::WalkModes;
use memlife_core::Snapshot;

use super::llff::{LlffLayout, LlffWalker};
use super::tlsf::{TlsfLayout, TlsfWalker};
use crate::AnomalyKind as K;
use crate::firmware_view::{EmbeddedAllocView, FirmwareView};
use crate::{HeapState, HeapStatus, HeapWalker, WalkContext};

const BASE: u64 = 0x2000_0000;
/// The heap static; the arena follows it.
const STATIC: u64 = BASE;
const ARENA: u64 = BASE + 0x2000;
const RAM: usize = 0x4000;

fn put(ram: &mut [u8], addr: u64, v: u32) {
    let o = (addr - BASE) as usize;
    ram[o..o + 4].copy_from_slice(&v.to_le_bytes());
}

fn walk(w: &dyn HeapWalker, ram: Vec<u8>) -> HeapState {
    let mut snap = Snapshot::default();
    snap.add_region(BASE, ram).unwrap();
    crate::testing::walk_modes(w, &mut snap, WalkContext::default()).unwrap()
}

fn kinds(st: &HeapState) -> Vec<K> {
    st.anomalies.iter().map(|a| a.kind).collect()
}

// ---- LlffHeap -------------------------------------------------------------------------------

/// linked_list_allocator 0.10 inside embedded-alloc 0.7 as rustc laid it out for thumbv7em:
/// RefCell borrow at 0, then `(Heap, bool)` with Heap { used, holes { first { size, next },
/// bottom, top, pending_extend } } and the bool after it.
fn llff_layout() -> LlffLayout {
    LlffLayout {
        size: 32,
        word: 4,
        borrow: 0,
        initialized: Some(28),
        used: 4,
        first_size: 8,
        first_next: 12,
        bottom: 16,
        top: 20,
    }
}

/// An LlffHeap over `[ARENA, ARENA + size)` with these holes `(offset, size)`; `used` is set to
/// what the allocator would count.
fn llff_ram(size: u32, holes: &[(u32, u32)]) -> Vec<u8> {
    let mut ram = vec![0u8; RAM];
    let free: u32 = holes.iter().map(|h| h.1).sum();
    put(&mut ram, STATIC + 4, size - free);
    put(&mut ram, STATIC + 16, ARENA as u32);
    put(&mut ram, STATIC + 20, (ARENA + u64::from(size)) as u32);
    ram[28] = 1;
    let mut link = STATIC + 12;
    for &(off, len) in holes {
        let a = ARENA + u64::from(off);
        put(&mut ram, link, a as u32);
        put(&mut ram, a, len);
        link = a + 4;
    }
    put(&mut ram, link, 0);
    ram
}

fn llff() -> LlffWalker {
    LlffWalker::with_layout(STATIC, llff_layout())
}

#[test]
fn llff_holes_and_used_spans_tile_the_arena() {
    let st = walk(
        &llff(),
        llff_ram(0x1000, &[(0x40, 0x20), (0x100, 0x200), (0x800, 0x800)]),
    );
    assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
    assert_eq!((st.heap_start, st.heap_size), (ARENA, 0x1000));
    assert_eq!(st.total_free, 0xa20);
    assert_eq!(st.largest_free, 0x800);
    assert_eq!((st.free_blocks, st.used_blocks), (3, 3));
    let spans: Vec<(u64, u64, bool)> = st
        .blocks
        .iter()
        .map(|b| (b.addr - ARENA, b.size, b.free))
        .collect();
    assert_eq!(
        spans,
        [
            (0, 0x40, false),
            (0x40, 0x20, true),
            (0x60, 0xa0, false),
            (0x100, 0x200, true),
            (0x300, 0x500, false),
            (0x800, 0x800, true)
        ]
    );
    assert_eq!(
        st.firmware_view,
        Some(FirmwareView::EmbeddedAlloc(EmbeddedAllocView {
            used: 0x1000 - 0xa20,
            free: 0xa20
        }))
    );
}

#[test]
fn llff_a_used_tail_after_the_last_hole_is_a_span() {
    let st = walk(&llff(), llff_ram(0x400, &[(0, 0x100)]));
    assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
    assert_eq!(
        st.blocks.last().map(|b| (b.addr - ARENA, b.size, b.free)),
        Some((0x100, 0x300, false))
    );
}

#[test]
fn llff_damaged_holes_are_reported_not_followed() {
    // A hole whose size is too small for a hole.
    let mut r = llff_ram(0x1000, &[(0x40, 0x20), (0x100, 0x200)]);
    put(&mut r, ARENA + 0x100, 4);
    let st = walk(&llff(), r);
    assert_eq!(st.status, HeapStatus::Corrupt);
    assert!(kinds(&st).contains(&K::SizeOverflow), "{:?}", st.anomalies);
    // A next pointer out of the arena.
    let mut r = llff_ram(0x1000, &[(0x40, 0x20), (0x100, 0x200)]);
    put(&mut r, ARENA + 0x44, 0x0800_0000);
    assert!(kinds(&walk(&llff(), r)).contains(&K::OutOfRange));
    // A next pointer back to an earlier hole (a cycle).
    let mut r = llff_ram(0x1000, &[(0x40, 0x20), (0x100, 0x200)]);
    put(&mut r, ARENA + 0x104, (ARENA + 0x40) as u32);
    assert!(kinds(&walk(&llff(), r)).contains(&K::Cycle));
    // Two holes side by side (the allocator merges them).
    let st = walk(&llff(), llff_ram(0x1000, &[(0x40, 0x20), (0x60, 0x40)]));
    assert!(kinds(&st).contains(&K::NotCoalesced), "{:?}", st.anomalies);
    // A `used` counter that disagrees with the holes.
    let mut r = llff_ram(0x1000, &[(0x40, 0x20)]);
    put(&mut r, STATIC + 4, 0x10);
    assert!(kinds(&walk(&llff(), r)).contains(&K::CounterMismatch));
    // A dummy head with a size.
    let mut r = llff_ram(0x1000, &[(0x40, 0x20)]);
    put(&mut r, STATIC + 8, 8);
    assert!(kinds(&walk(&llff(), r)).contains(&K::BadHeader));
}

#[test]
fn llff_uninitialised_and_busy() {
    let mut r = llff_ram(0x1000, &[(0, 0x1000)]);
    r[28] = 0;
    assert_eq!(walk(&llff(), r).status, HeapStatus::Uninitialised);
    let mut r = llff_ram(0x1000, &[(0, 0x1000)]);
    put(&mut r, STATIC, u32::MAX); // RefCell mutably borrowed: -1
    let st = walk(&llff(), r);
    assert_eq!(st.status, HeapStatus::Busy);
    assert!(st.busy_reason.unwrap().contains("RefCell"));
}

#[test]
fn llff_block_from_request_rounds_as_the_allocator() {
    let w = llff();
    assert_eq!(w.block_from_request(ARENA, 1).unwrap().size, 8);
    assert_eq!(w.block_from_request(ARENA, 9).unwrap().size, 12);
    assert_eq!(w.block_from_request(ARENA, 80).unwrap().size, 80);
    assert_eq!(w.header_range(ARENA), None);
}

#[test]
fn llff_random_garbage_never_panics_or_hangs() {
    memlife_testkit::fuzz::cases(0x51ed_2701, 300, |round, rng| {
        let mut r = llff_ram(0x1000, &[(0x40, 0x20), (0x100, 0x200), (0x800, 0x800)]);
        for _ in 0..(1 + round % 5) {
            let seed = rng.next_u32();
            let off = if seed % 4 == 0 {
                (seed as usize % 32) & !3
            } else {
                0x2000 + ((seed as usize % 0x1000) & !3)
            };
            let v = if seed.is_multiple_of(3) {
                ARENA as u32 + seed % 0x1000
            } else {
                seed.rotate_left(7)
            };
            put(&mut r, BASE + off as u64, v);
        }
        let mut snap = Snapshot::default();
        snap.add_region(BASE, r).unwrap();
        let mut mem = memlife_testkit::ram::Counted::new(snap);
        crate::state::assert_walk_bounded(
            llff().walk_modes(&mut mem, WalkContext::default()),
            0x1000,
            8,
        );
    });
}

// ---- TlsfHeap -------------------------------------------------------------------------------

/// embedded-alloc 0.7's TlsfHeap for thumbv7em as rustc laid it out: first_free[32][32] at 0,
/// sl_bitmap[32] at 4096, fl_bitmap at 4224, raw_block at 4228, raw_block_size at 4236,
/// initialized at 4240 (after the RefCell's borrow word at 0: everything + 4).
fn tlsf_layout() -> TlsfLayout {
    TlsfLayout {
        size: 4248,
        word: 4,
        borrow: 0,
        initialized: 4 + 4240,
        raw_block: 4 + 4228,
        raw_block_size: 4 + 4236,
        fl_bitmap: 4 + 4224,
        sl_bitmap: 4 + 4096,
        first_free: 4,
        fllen: 32,
        sllen: 32,
    }
}

fn tlsf() -> TlsfWalker {
    TlsfWalker::with_layout(STATIC, tlsf_layout())
}

/// rlsf's list of a free block (map_floor for 16-byte granules, 32 second levels).
fn class(size: u32) -> (u64, u64) {
    let log2 = 31 - size.leading_zeros();
    let fl = log2 - 4;
    let sl = if log2 >= 5 {
        size >> (log2 - 5)
    } else {
        size << (5 - log2)
    };
    (u64::from(fl), u64::from(sl & 31))
}

/// A TlsfHeap whose pool starts `skew` bytes after ARENA (rounded up by rlsf), `raw_len` bytes
/// long as the user passed it, cut into `blocks` `(size, used)` before the sentinel (their
/// sizes must fill the rounded pool less 16).
fn tlsf_ram(skew: u64, raw_len: u32, blocks: &[(u32, bool)]) -> Vec<u8> {
    let mut ram = vec![0u8; RAM];
    let l = tlsf_layout();
    let raw = ARENA + skew;
    put(&mut ram, STATIC + l.raw_block, raw as u32);
    put(&mut ram, STATIC + l.raw_block + 4, raw_len);
    put(&mut ram, STATIC + l.raw_block_size, raw_len);
    ram[(l.initialized) as usize] = 1;
    let start = (raw + 15) & !15;
    let (mut b, mut prev) = (start, 0u64);
    let mut heads: std::collections::BTreeMap<(u64, u64), Vec<u64>> = Default::default();
    for &(size, used) in blocks {
        put(&mut ram, b, size | u32::from(used));
        put(&mut ram, b + 4, prev as u32);
        if !used {
            heads.entry(class(size)).or_default().push(b);
        }
        prev = b;
        b += u64::from(size);
    }
    put(&mut ram, b, 16 | 3);
    put(&mut ram, b + 4, prev as u32);
    let mut fl_bitmap = 0u32;
    let mut sl_bitmaps = [0u32; 32];
    for ((fl, sl), list) in &heads {
        put(
            &mut ram,
            STATIC + l.first_free + (fl * 32 + sl) * 4,
            list[0] as u32,
        );
        for (i, &a) in list.iter().enumerate() {
            put(&mut ram, a + 8, list.get(i + 1).map_or(0, |&n| n as u32));
            put(
                &mut ram,
                a + 12,
                if i == 0 { 0 } else { list[i - 1] as u32 },
            );
        }
        fl_bitmap |= 1 << fl;
        sl_bitmaps[*fl as usize] |= 1 << sl;
    }
    put(&mut ram, STATIC + l.fl_bitmap, fl_bitmap);
    for (fl, m) in sl_bitmaps.iter().enumerate() {
        put(&mut ram, STATIC + l.sl_bitmap + fl as u64 * 4, *m);
    }
    ram
}

const BLOCKS: [(u32, bool); 5] = [
    (0x40, true),
    (0x60, false),
    (0x30, true),
    (0x200, false),
    (0xd20, true),
];

#[test]
fn tlsf_physical_walk_free_lists_and_free_as_embedded_alloc_counts_it() {
    let st = walk(&tlsf(), tlsf_ram(0, 0x1000, &BLOCKS));
    assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
    assert_eq!((st.heap_start, st.heap_size), (ARENA, 0xff0));
    assert_eq!(st.total_free, 0x260);
    assert_eq!((st.free_blocks, st.used_blocks), (2, 3));
    assert_eq!(st.largest_free, 0x200);
    // free(): each free block less an 8-byte header; used(): the user's pool size less that.
    let free = 0x60 - 8 + 0x200 - 8;
    assert_eq!(
        st.firmware_view,
        Some(FirmwareView::EmbeddedAlloc(EmbeddedAllocView {
            used: 0x1000 - free,
            free
        }))
    );
}

/// embedded-alloc 0.7.0's own `free()` walks the unrounded pool length and runs past the
/// sentinel when the pool's start is not on a granule; memlife stops at the sentinel.
#[test]
fn tlsf_an_unaligned_pool_ends_at_its_sentinel() {
    // Start 0x2000_2001: rlsf starts at 0x..2010 and keeps (0x1000 - 15) & !15 = 0xff0 bytes.
    let mut r = tlsf_ram(
        1,
        0x1000,
        &[
            (0x40, true),
            (0x60, false),
            (0x30, true),
            (0x200, false),
            (0xd10, true),
        ],
    );
    // Garbage after the sentinel, where a walk by the raw length would go next.
    put(&mut r, ARENA + 0x1000, 0);
    put(&mut r, ARENA + 0x1004, 0xdead_beef);
    let st = walk(&tlsf(), r);
    assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
    assert_eq!((st.heap_start, st.heap_size), (ARENA + 0x10, 0xfe0));
}

#[test]
fn tlsf_damaged_headers_lists_and_bitmaps_are_reported() {
    let l = tlsf_layout();
    // A size running past the sentinel.
    let mut r = tlsf_ram(0, 0x1000, &BLOCKS);
    put(&mut r, ARENA + 0x40, 0x8000);
    let st = walk(&tlsf(), r);
    assert_eq!(st.status, HeapStatus::Corrupt);
    assert!(kinds(&st).contains(&K::SizeOverflow), "{:?}", st.anomalies);
    // A wrong prev_phys_block.
    let mut r = tlsf_ram(0, 0x1000, &BLOCKS);
    put(&mut r, ARENA + 0xa0 + 4, ARENA as u32);
    assert!(kinds(&walk(&tlsf(), r)).contains(&K::BadHeader));
    // A free-list head that is no free block.
    let mut r = tlsf_ram(0, 0x1000, &BLOCKS);
    let (fl, sl) = class(0x200);
    put(
        &mut r,
        STATIC + l.first_free + (fl * 32 + sl) * 4,
        (ARENA + 0x40) as u32,
    );
    assert!(kinds(&walk(&tlsf(), r)).contains(&K::ListMismatch));
    // A bitmap bit without a list.
    let mut r = tlsf_ram(0, 0x1000, &BLOCKS);
    put(&mut r, STATIC + l.sl_bitmap + 7 * 4, 1);
    assert!(kinds(&walk(&tlsf(), r)).contains(&K::BitmapMismatch));
    // Two free blocks side by side.
    let st = walk(
        &tlsf(),
        tlsf_ram(0, 0x1000, &[(0x40, false), (0x60, false), (0xf50, true)]),
    );
    assert!(kinds(&st).contains(&K::NotCoalesced), "{:?}", st.anomalies);
    // A free list looping on itself.
    let mut r = tlsf_ram(0, 0x1000, &BLOCKS);
    put(&mut r, ARENA + 0x40 + 8, (ARENA + 0x40) as u32);
    let st = walk(&tlsf(), r);
    assert_eq!(st.status, HeapStatus::Corrupt, "{:?}", st.anomalies);
}

#[test]
fn tlsf_block_of_finds_the_header_before_the_payload() {
    let mut snap = Snapshot::default();
    snap.add_region(BASE, tlsf_ram(0, 0x1000, &BLOCKS)).unwrap();
    let w = tlsf();
    // The first used block (its prev_phys_block is None) and the third.
    assert_eq!(
        w.block_of(&mut snap, ARENA + 8)
            .unwrap()
            .map(|b| (b.addr, b.size)),
        Some((ARENA, 0x40))
    );
    assert_eq!(
        w.block_of(&mut snap, ARENA + 0xa0 + 8)
            .unwrap()
            .map(|b| (b.addr, b.size)),
        Some((ARENA + 0xa0, 0x30))
    );
    // A free block's payload is no allocation.
    assert_eq!(w.block_of(&mut snap, ARENA + 0x40 + 8).unwrap(), None);
}

#[test]
fn tlsf_uninitialised_and_busy() {
    let mut r = tlsf_ram(0, 0x1000, &BLOCKS);
    r[tlsf_layout().initialized as usize] = 0;
    assert_eq!(walk(&tlsf(), r).status, HeapStatus::Uninitialised);
    let mut r = tlsf_ram(0, 0x1000, &BLOCKS);
    put(&mut r, STATIC, u32::MAX);
    assert_eq!(walk(&tlsf(), r).status, HeapStatus::Busy);
}

#[test]
fn tlsf_random_garbage_never_panics_or_hangs() {
    memlife_testkit::fuzz::cases(0x7157_2026, 300, |round, rng| {
        let mut r = tlsf_ram(0, 0x1000, &BLOCKS);
        let l = tlsf_layout();
        for _ in 0..(1 + round % 5) {
            let seed = rng.next_u32();
            let off = match seed % 3 {
                0 => l.first_free + u64::from(seed % 1024) * 4,
                1 => l.fl_bitmap + u64::from(seed % 12) * 4 - 4 * u64::from(seed % 2),
                _ => (0x2000 + u64::from(seed % 0x1000)) & !3,
            };
            let v = if seed.is_multiple_of(2) {
                ARENA as u32 + seed % 0x1000
            } else {
                seed.rotate_left(9)
            };
            put(&mut r, BASE + off, v);
        }
        let mut snap = Snapshot::default();
        snap.add_region(BASE, r).unwrap();
        let mut mem = memlife_testkit::ram::Counted::new(snap);
        crate::state::assert_walk_bounded(
            tlsf().walk_modes(&mut mem, WalkContext::default()),
            0x1000,
            16,
        );
    });
}
