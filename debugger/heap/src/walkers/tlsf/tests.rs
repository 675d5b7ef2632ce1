//! Synthetic ESP-IDF heaps, laid out by a small writer that follows docs/allocators/esp-idf-tlsf.md, then
//! damaged in the ways real heaps get damaged.
#![allow(clippy::unwrap_used)]

use memlife_core::Snapshot;

use super::layout::{ControlLayout, Layouts};
use super::params::Params;
use super::*;
use crate::AnomalyKind as K;
use crate::FirmwareView;
use crate::testing::WalkModes;

const BASE: u64 = 0x2000_0000;
const RH: u64 = BASE;
const NODE_A: u64 = BASE + 0x40;
const NODE_B: u64 = BASE + 0x80;
const HEAP_A: u64 = BASE + 0x1000;
const HEAP_B: u64 = BASE + 0x4000;
const DRAM_CAPS: [u32; 3] = [(1 << 3) | (1 << 2) | (1 << 1) | (1 << 11) | (1 << 12), 0, 0];
const IRAM_CAPS: [u32; 3] = [1 | (1 << 1) | (1 << 11), 0, 0];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Gen {
    Dynamic,
    /// Fixed arrays with this FL_INDEX_COUNT (SL_INDEX_COUNT 32).
    Fixed(u64),
}

struct Ram {
    ram: Vec<u8>,
}

/// Where the writer put one heap's parts.
#[derive(Debug, Clone)]
struct Built {
    free_bytes: u64,
    /// Block addresses and payload sizes, in address order.
    blocks: Vec<(u64, u64, bool)>,
    params: Params,
}

impl Ram {
    fn new() -> Ram {
        Ram {
            ram: vec![0; 0x8000],
        }
    }
    fn put(&mut self, a: u64, v: u32) {
        let o = (a - BASE) as usize;
        self.ram[o..o + 4].copy_from_slice(&v.to_le_bytes());
    }
    fn get(&self, a: u64) -> u32 {
        let o = (a - BASE) as usize;
        u32::from_le_bytes(self.ram[o..o + 4].try_into().unwrap())
    }

    /// Lays out a heap at `start` of `len` bytes with blocks `(payload, free)`; the last entry's
    /// size is ignored and it fills the pool up to the sentinel.
    fn heap(&mut self, start: u64, len: u64, layout_gen: Gen, blocks: &[(u64, bool)]) -> Built {
        let control = start + 20;
        let pool_size = len - 20;
        let params = match layout_gen {
            Gen::Dynamic => Params::constructed(control, pool_size, 36),
            Gen::Fixed(fl) => {
                let sl = 32;
                let size = 20 + 4 * fl + 4 * fl * sl;
                Params {
                    fl_count: fl,
                    sl_count: sl,
                    sl_log2: 5,
                    fl_shift: 7,
                    small_block_size: 128,
                    tlsf_size: size,
                    fl_bitmap: control + 16,
                    sl_bitmap: control + 20,
                    blocks: control + 20 + 4 * fl,
                }
            }
        };
        // multi_heap_info
        self.put(start + 12, pool_size as u32);
        self.put(start + 16, control as u32);
        // control_t
        self.put(control + 8, control as u32);
        self.put(control + 12, control as u32);
        if layout_gen == Gen::Dynamic {
            let fl_max = params.fl_count + params.fl_shift - 1;
            let word = params.fl_count
                | (params.fl_shift << 5)
                | (fl_max << 8)
                | (params.sl_count << 14)
                | (params.sl_log2 << 20)
                | (params.small_block_size << 23);
            self.put(control + 16, word as u32);
            self.put(control + 20, params.tlsf_size as u32);
            self.put(control + 28, params.sl_bitmap as u32);
            self.put(control + 32, params.blocks as u32);
        }
        for i in 0..params.fl_count * params.sl_count {
            self.put(params.blocks + 4 * i, control as u32);
        }
        let pool = control + params.tlsf_size;
        let pool_len = pool_size - params.tlsf_size;
        let first = (pool_len - 8) & !3;
        let slack = pool_len - 8 - first;
        let sentinel = pool + first;
        let mut b = pool - 4;
        let mut out = Vec::new();
        let mut prev: Option<(u64, bool)> = None;
        for (i, &(size, free)) in blocks.iter().enumerate() {
            let size = if i + 1 == blocks.len() {
                sentinel - b - 4
            } else {
                size
            };
            let prev_free = prev.is_some_and(|p| p.1);
            self.put(
                b + 4,
                (size | u64::from(free) | (u64::from(prev_free) << 1)) as u32,
            );
            if prev_free {
                self.put(b, prev.unwrap().0 as u32);
            }
            out.push((b, size, free));
            prev = Some((b, free));
            b += 4 + size;
        }
        assert_eq!(b, sentinel);
        let last_free = prev.is_some_and(|p| p.1);
        self.put(b + 4, (u64::from(last_free) << 1) as u32);
        if last_free {
            self.put(b, prev.unwrap().0 as u32);
        }
        let mut free_bytes = 4 + slack;
        for &(addr, size, free) in &out {
            if !free {
                continue;
            }
            free_bytes += size + 4;
            let (fl, sl) = params.mapping(size);
            let slot = params.blocks + 4 * (fl * params.sl_count + sl);
            let old = u64::from(self.get(slot));
            self.put(addr + 8, old as u32);
            self.put(addr + 12, control as u32);
            if old != control {
                self.put(old + 12, addr as u32);
            }
            self.put(slot, addr as u32);
            let flb = self.get(params.fl_bitmap) | (1 << fl);
            self.put(params.fl_bitmap, flb);
            let slb = self.get(params.sl_bitmap + 4 * fl) | (1 << sl);
            self.put(params.sl_bitmap + 4 * fl, slb);
        }
        self.put(start + 4, free_bytes as u32);
        self.put(start + 8, (free_bytes - 96) as u32);
        Built {
            free_bytes,
            blocks: out,
            params,
        }
    }

    fn node(&mut self, node: u64, caps: [u32; 3], start: u64, len: u64, next: u64) {
        for (i, c) in caps.iter().enumerate() {
            self.put(node + 4 * i as u64, *c);
        }
        self.put(node + 12, start as u32);
        self.put(node + 16, (start + len) as u32);
        self.put(node + 20, SPINLOCK_FREE as u32);
        self.put(node + 28, start as u32);
        self.put(node + 32, next as u32);
    }

    fn snapshot(&self) -> Snapshot {
        let mut snap = Snapshot::default();
        snap.add_region(BASE, self.ram.clone()).unwrap();
        snap
    }
}

fn walker(control: Option<ControlLayout>) -> TlsfWalker {
    TlsfWalker {
        registered_heaps: RH,
        poisoning: Poisoning::None,
        layouts: Layouts {
            control,
            ..Layouts::default()
        },
        resolved: Vec::new(),
    }
}

fn walk_with(ram: &Ram, control: Option<ControlLayout>) -> HeapState {
    walker(control)
        .walk_modes(&mut ram.snapshot(), WalkContext::default())
        .unwrap()
}

fn kinds(st: &HeapState) -> Vec<K> {
    st.anomalies.iter().map(|a| a.kind).collect()
}

/// Two heaps (DRAM 12 KiB with a mix of blocks, IRAM 8 KiB with one used block).
fn two_heaps(layout_gen: Gen) -> (Ram, Built, Built) {
    let mut r = Ram::new();
    r.put(RH, NODE_A as u32);
    r.node(NODE_A, DRAM_CAPS, HEAP_A, 0x3000, NODE_B);
    r.node(NODE_B, IRAM_CAPS, HEAP_B, 0x2000, 0);
    let a = r.heap(
        HEAP_A,
        0x3000,
        layout_gen,
        &[
            (100, false),
            (200, true),
            (64, false),
            (1000, true),
            (40, false),
            (16, true),
            (12, false),
            (0, true),
        ],
    );
    let b = r.heap(HEAP_B, 0x2000, layout_gen, &[(300, false), (0, true)]);
    (r, a, b)
}

fn dynamic() -> Option<ControlLayout> {
    Some(ControlLayout::dynamic_default())
}

#[test]
fn params_follow_control_construct() {
    // The geometry of docs/allocators/esp-idf-tlsf.md for a 40000-byte region.
    let p = Params::constructed(0x1000, 40_000, 36);
    assert_eq!((p.fl_count, p.sl_count, p.tlsf_size), (11, 16, 784));
    assert_eq!((p.fl_shift, p.small_block_size), (6, 64));
    // mapping_insert by hand: below 64 the first level is linear in steps of 4.
    assert_eq!(p.mapping(40), (0, 10));
    // 100 = 0b1100100: fls 6, (100 >> 2) ^ 16 = 9, first level 6 - 5 = 1.
    assert_eq!(p.mapping(100), (1, 9));
    assert_eq!(p.mapping(1000), (4, 15));
    // tlsf_fit_size: 1000 has 512 as its power of two, 512/16 = 32-byte classes.
    assert_eq!(p.fit_size(1000), 992);
    assert_eq!(p.fit_size(7804), 7680);
    assert_eq!(p.fit_size(0), 0);
}

#[test]
fn two_dynamic_heaps_are_reconstructed_exactly() {
    let (r, a, b) = two_heaps(Gen::Dynamic);
    let st = walk_with(&r, dynamic());
    assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
    assert_eq!(st.allocator, "esp-idf-tlsf");
    assert_eq!(st.regions.len(), 2);
    // total_free is Σ free_bytes as the allocator keeps them.
    assert_eq!(st.total_free, a.free_bytes + b.free_bytes);
    assert_eq!(st.counter("free_bytes"), Some(a.free_bytes + b.free_bytes));
    assert_eq!(st.min_ever_free, Some(a.free_bytes + b.free_bytes - 192));
    let ra = &st.regions[0];
    assert_eq!((ra.start, ra.end), (HEAP_A, HEAP_A + 0x3000));
    assert_eq!(ra.kind, "DRAM");
    assert!(ra.caps.contains(&"DMA".to_string()) && ra.caps.contains(&"DEFAULT".to_string()));
    assert_eq!(st.regions[1].kind, "IRAM");
    assert_eq!(ra.free, a.free_bytes);
    assert_eq!(ra.size, 0x3000 - 20 - a.params.tlsf_size);
    assert_eq!(ra.used, ra.size - ra.free);
    assert_eq!((ra.free_blocks, ra.used_blocks), (4, 4));
    // Blocks are footprints (payload + 4) that tile each pool.
    assert_eq!(st.blocks.len(), a.blocks.len() + b.blocks.len());
    for w in st.blocks.windows(2) {
        if w[1].addr < HEAP_B {
            assert_eq!(w[0].addr + w[0].size, w[1].addr);
        }
    }
    let used: u64 = st.blocks.iter().filter(|b| !b.free).map(|b| b.size).sum();
    assert_eq!(used, st.heap_size - st.total_free);
    // The largest free block is heap A's tail; ESP-IDF reports it rounded to its size class.
    let tail = a.blocks.last().unwrap().1;
    let b_tail = b.blocks.last().unwrap().1;
    assert_eq!(st.largest_free, tail.max(b_tail) + 4);
    assert_eq!(ra.largest_allocatable, a.params.fit_size(tail));
    assert!(ra.largest_allocatable < tail);
    assert_eq!(
        st.largest_allocatable,
        Some(a.params.fit_size(tail).max(b.params.fit_size(b_tail)))
    );
    assert_eq!(st.free_blocks, 5);
    let json = serde_json::to_value(st.report()).unwrap();
    assert_eq!(json["regions"][1]["kind"], "IRAM");
    assert!(json["largest_allocatable"].is_u64());
}

#[test]
fn fixed_layout_heaps_are_reconstructed() {
    let (r, a, b) = two_heaps(Gen::Fixed(12));
    let st = walk_with(&r, Some(ControlLayout::fixed_default(12)));
    assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
    assert_eq!(st.total_free, a.free_bytes + b.free_bytes);
    assert_eq!(st.regions[0].counter_value("tlsf_size"), Some(1604));
    // The same memory read with the dynamic layout is garbage, and says so.
    assert_eq!(walk_with(&r, dynamic()).status, HeapStatus::Corrupt);
}

#[test]
fn without_control_t_in_dwarf_the_layout_is_found_from_memory() {
    let (r, a, b) = two_heaps(Gen::Dynamic);
    let st = walk_with(&r, Some(ControlLayout::Unknown));
    assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
    assert_eq!(st.total_free, a.free_bytes + b.free_bytes);
    let (r, a, b) = two_heaps(Gen::Fixed(10));
    let st = walk_with(&r, Some(ControlLayout::Unknown));
    assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
    assert_eq!(st.total_free, a.free_bytes + b.free_bytes);
}

#[test]
fn a_free_list_cycle_is_reported_and_the_walk_ends() {
    let (mut r, a, _) = two_heaps(Gen::Dynamic);
    // Two blocks in one list, the second pointing back to the first.
    let free: Vec<u64> = a.blocks.iter().filter(|b| b.2).map(|b| b.0).collect();
    let (x, y) = (free[0], free[2]);
    // Put y's list's head's next at x and x's next at y, whatever lists they are in: a loop.
    r.put(x + 8, y as u32);
    r.put(y + 8, x as u32);
    let st = walk_with(&r, dynamic());
    assert_eq!(st.status, HeapStatus::Corrupt);
    assert!(kinds(&st).contains(&K::Cycle), "{:?}", st.anomalies);
}

#[test]
fn a_wild_pointer_is_out_of_range() {
    let (mut r, a, _) = two_heaps(Gen::Dynamic);
    let x = a.blocks.iter().find(|b| b.2).unwrap().0;
    r.put(x + 8, 0xdead_beec);
    let st = walk_with(&r, dynamic());
    assert!(kinds(&st).contains(&K::OutOfRange), "{:?}", st.anomalies);
    // A wild registered_heaps entry is not followed.
    let (mut r, _, _) = two_heaps(Gen::Dynamic);
    r.put(NODE_A + 32, 0x7000_0000);
    let st = walk_with(&r, dynamic());
    assert!(kinds(&st).contains(&K::OutOfRange), "{:?}", st.anomalies);
    assert_eq!(st.regions.len(), 1);
}

#[test]
fn a_bad_size_is_a_size_overflow() {
    let (mut r, a, _) = two_heaps(Gen::Dynamic);
    let (x, _, _) = a.blocks[2];
    r.put(x + 4, 0x7fff_fff0);
    let st = walk_with(&r, dynamic());
    assert!(kinds(&st).contains(&K::SizeOverflow), "{:?}", st.anomalies);
    r.put(x + 4, 4);
    assert!(kinds(&walk_with(&r, dynamic())).contains(&K::SizeOverflow));
}

#[test]
fn a_bitmap_that_disagrees_with_the_lists_is_reported() {
    let (mut r, a, _) = two_heaps(Gen::Dynamic);
    let fl = a.params.fl_bitmap;
    r.put(fl, r.get(fl) ^ 0x1);
    let st = walk_with(&r, dynamic());
    assert_eq!(st.status, HeapStatus::Corrupt);
    assert!(
        kinds(&st).contains(&K::BitmapMismatch),
        "{:?}",
        st.anomalies
    );
    // A second-level bit for an empty list.
    let (mut r, a, _) = two_heaps(Gen::Dynamic);
    let sl = a.params.sl_bitmap + 4 * 2;
    r.put(sl, r.get(sl) | 0x8000);
    assert!(kinds(&walk_with(&r, dynamic())).contains(&K::BitmapMismatch));
}

#[test]
fn a_block_in_the_wrong_list_is_a_list_mismatch() {
    let (mut r, a, _) = two_heaps(Gen::Dynamic);
    // Grow a free block's size in place: it now belongs to another list, and the walk no longer
    // ends on the sentinel.
    let (x, size, _) = a.blocks[1];
    r.put(x + 4, ((size + 64) | 1) as u32);
    let st = walk_with(&r, dynamic());
    assert_eq!(st.status, HeapStatus::Corrupt, "{:?}", st.anomalies);
    assert!(!st.anomalies.is_empty());
}

#[test]
fn counters_are_cross_checked() {
    let (mut r, _, _) = two_heaps(Gen::Dynamic);
    r.put(HEAP_B + 4, 1234);
    let st = walk_with(&r, dynamic());
    assert_eq!(kinds(&st), vec![K::CounterMismatch, K::CounterMismatch]);
    assert!(st.anomalies[0].message.contains("free_bytes of the heap"));
}

#[test]
fn a_truncated_region_is_an_error_or_an_anomaly_never_a_panic() {
    let (r, _, _) = two_heaps(Gen::Dynamic);
    // The snapshot lacks the end of heap A: reading fails cleanly.
    let mut snap = Snapshot::default();
    snap.add_region(BASE, r.ram[..0x2000].to_vec()).unwrap();
    assert!(matches!(
        walker(dynamic()).walk_modes(&mut snap, WalkContext::default()),
        Err(HeapError::Target(_))
    ));
    // The region's end was overwritten smaller than its pool: an anomaly.
    let (mut r, _, _) = two_heaps(Gen::Dynamic);
    r.put(NODE_A + 16, (HEAP_A + 0x800) as u32);
    let st = walk_with(&r, dynamic());
    assert!(kinds(&st).contains(&K::SizeOverflow), "{:?}", st.anomalies);
}

#[test]
fn a_held_lock_is_busy_not_corrupt() {
    let (mut r, _, _) = two_heaps(Gen::Dynamic);
    r.put(NODE_B + 20, 0xCDCD);
    r.put(HEAP_B + 4, 8);
    let st = walk_with(&r, dynamic());
    assert_eq!(st.status, HeapStatus::Busy);
    assert!(st.busy_reason.unwrap().contains("owner = 0xcdcd"));
    assert!(st.regions[1].busy_reason.is_some() && st.regions[0].busy_reason.is_none());
    let (r, _, _) = two_heaps(Gen::Dynamic);
    let st = walker(dynamic())
        .walk_modes(
            &mut r.snapshot(),
            WalkContext {
                inside_allocator: Some("heap_caps_malloc"),
                ..WalkContext::default()
            },
        )
        .unwrap();
    assert_eq!(st.status, HeapStatus::Busy);
}

#[test]
fn before_heap_caps_init_the_heap_is_uninitialised() {
    let r = Ram::new();
    let st = walk_with(&r, dynamic());
    assert_eq!(st.status, HeapStatus::Uninitialised);
    assert!(st.regions.is_empty());
}

#[test]
fn registered_heaps_cycles_end() {
    let (mut r, a, b) = two_heaps(Gen::Dynamic);
    r.put(NODE_B + 32, NODE_A as u32);
    let st = walk_with(&r, dynamic());
    assert!(kinds(&st).contains(&K::Cycle));
    assert_eq!(st.total_free, a.free_bytes + b.free_bytes);
}

#[test]
fn block_of_gives_the_footprint_of_used_blocks_only() {
    let (r, a, _) = two_heaps(Gen::Dynamic);
    let w = walker(dynamic());
    let mut snap = r.snapshot();
    let (used, size, _) = a.blocks[0];
    assert_eq!(
        w.block_of(&mut snap, used + 8).unwrap(),
        Some(BlockRef {
            addr: used,
            size: size + 4
        })
    );
    let (free, _, _) = a.blocks[1];
    assert_eq!(w.block_of(&mut snap, free + 8).unwrap(), None);
    // With heap poisoning the caller's pointer is 8 bytes further, past the poison head.
    let mut w = walker(dynamic());
    w.poisoning = Poisoning::Light;
    assert_eq!(
        w.block_of(&mut snap, used + 16).unwrap(),
        Some(BlockRef {
            addr: used,
            size: size + 4
        })
    );
}

#[test]
fn random_garbage_never_panics_or_hangs() {
    memlife_testkit::fuzz::cases(0x9e37_79b9, 300, |round, rng| {
        let mut next = || rng.next_u32();
        let layout_gen = if round % 3 == 0 {
            Gen::Fixed(10)
        } else {
            Gen::Dynamic
        };
        let (mut r, _, _) = two_heaps(layout_gen);
        for _ in 0..(1 + round % 8) {
            // Mostly the heaps' metadata and first blocks, where damage changes the walk.
            let off = match next() % 3 {
                0 => u64::from(next() % 0x100) & !3,
                1 => 0x1000 + (u64::from(next() % 0x400) & !3),
                _ => 0x4000 + (u64::from(next() % 0x400) & !3),
            };
            let v = match next() % 4 {
                0 => next(),
                1 => 0x2000_0000 + (next() % 0x8000),
                2 => next() % 0x2000,
                _ => (next() % 0x400) | 1,
            };
            r.put(BASE + off, v);
        }
        let control = match (layout_gen, round % 2) {
            (_, 0) => Some(ControlLayout::Unknown),
            (Gen::Fixed(fl), _) => Some(ControlLayout::fixed_default(fl)),
            _ => dynamic(),
        };
        // A TLSF block is at least 16 bytes (12 of payload and its size word): no more blocks
        // than the regions walked can hold.
        // The work is bounded too: a few bulk reads, a few times the RAM at most.
        let ram_len = r.ram.len() as u64;
        let mut mem = memlife_testkit::ram::Counted::new(r.snapshot());
        let result = walker(control).walk_modes(&mut mem, WalkContext::default());
        mem.assert_within(256, 4 * ram_len, "tlsf garbage walk");
        let walked: u64 = result.as_ref().map_or(0, |st| {
            st.regions
                .iter()
                .map(|g| g.end.saturating_sub(g.start))
                .sum()
        });
        crate::state::assert_walk_bounded(result, walked, 16);
    });
}

impl HeapRegion {
    fn counter_value(&self, name: &str) -> Option<u64> {
        self.counters.iter().find(|c| c.0 == name).map(|c| c.1)
    }
}

impl Ram {
    fn put_bytes(&mut self, a: u64, bytes: &[u8]) {
        let o = (a - BASE) as usize;
        self.ram[o..o + bytes.len()].copy_from_slice(bytes);
    }

    /// Poisons a built heap as ESP-IDF leaves it: every used block gets its head, a requested
    /// size 1 to 3 bytes short of the payload room (so the tail is unaligned) and its tail; with
    /// `fill`, every free payload byte past the list links up to the next block's header is
    /// 0xFE. Returns the requested sizes by block.
    fn poison(&mut self, built: &Built, fill: bool) -> Vec<(u64, u64)> {
        let mut sizes = Vec::new();
        for (i, &(b, size, free)) in built.blocks.iter().enumerate() {
            if free {
                if fill {
                    let n = (b + 4 + size - (b + 16)) as usize;
                    self.put_bytes(b + 16, &vec![0xfe; n]);
                }
                continue;
            }
            let alloc = (size - 12).saturating_sub(1 + i as u64 % 3);
            self.put(b + 8, poison::HEAD_CANARY);
            self.put(b + 12, alloc as u32);
            self.put_bytes(b + 16 + alloc, &poison::TAIL_CANARY.to_le_bytes());
            sizes.push((b, alloc));
        }
        sizes
    }
}

fn walk_poisoned(ram: &Ram, mode: Poisoning) -> HeapState {
    let mut w = walker(dynamic());
    w.poisoning = mode;
    w.walk_modes(&mut ram.snapshot(), WalkContext::default())
        .unwrap()
}

fn esp_view(st: &HeapState) -> &crate::firmware_view::EspIdfView {
    match st.firmware_view.as_ref().unwrap() {
        FirmwareView::EspIdf(v) => v,
        other => panic!("{other:?}"),
    }
}

#[test]
fn firmware_view_is_what_multi_heap_get_info_returns() {
    let (r, a, b) = two_heaps(Gen::Dynamic);
    let st = walk_with(&r, dynamic());
    let v = esp_view(&st);
    assert_eq!(v.poisoning, "none");
    assert_eq!(v.heaps.len(), 2);
    let h = &v.heaps[0];
    let capacity = 0x3000 - 20 - a.params.tlsf_size;
    let tail = a.blocks.last().unwrap().1;
    assert_eq!(
        h.info,
        MultiHeapInfo {
            total_free_bytes: a.free_bytes,
            total_allocated_bytes: capacity - a.free_bytes - 4 * 4,
            largest_free_block: a.params.fit_size(tail),
            minimum_free_bytes: a.free_bytes - 96,
            allocated_blocks: 4,
            free_blocks: 4,
            total_blocks: 8,
        }
    );
    assert_eq!(
        (h.free_size, h.minimum_free_size),
        (a.free_bytes, a.free_bytes - 96)
    );
    assert_eq!(v.heaps[1].info.free_blocks, 1);
    // 8BIT: heap A only; 32BIT: both.
    assert_eq!(v.heap_caps_get_free_size(1 << 2), a.free_bytes);
    assert_eq!(
        v.heap_caps_get_free_size(1 << 1),
        a.free_bytes + b.free_bytes
    );
    assert_eq!(v.heap_caps_get_info(1 << 1).total_blocks, 8 + 2);
    let json = serde_json::to_value(st.report()).unwrap();
    assert_eq!(json["firmware_view"]["api"], "esp-idf");
    assert_eq!(
        json["firmware_view"]["heaps"][0]["info"]["allocated_blocks"],
        4
    );
    assert_eq!(json["poisoning"], "none");
}

#[test]
fn poisoning_takes_its_overhead_off_the_public_figures() {
    let (mut r, a, b) = two_heaps(Gen::Dynamic);
    let sizes = r.poison(&a, false);
    r.poison(&b, false);
    let plain = walk_with(&r, dynamic());
    let st = walk_poisoned(&r, Poisoning::Light);
    assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
    assert_eq!(st.poisoning, Some("light"));
    let (p, q) = (&esp_view(&plain).heaps[0], &esp_view(&st).heaps[0]);
    assert_eq!(q.info.total_free_bytes, p.info.total_free_bytes - 12);
    assert_eq!(q.info.largest_free_block, p.info.largest_free_block - 12);
    assert_eq!(q.info.minimum_free_bytes, p.info.minimum_free_bytes - 12);
    assert_eq!(
        q.info.total_allocated_bytes,
        p.info.total_allocated_bytes - 4 * 12
    );
    assert_eq!(q.free_size, p.free_size - 12);
    // The raw figures of the walk do not change.
    assert_eq!(st.total_free, plain.total_free);
    // Every used block of heap A carries its requested size.
    for (addr, alloc) in sizes {
        let blk = st.blocks.iter().find(|b| b.addr == addr).unwrap();
        assert_eq!(blk.alloc_size, Some(alloc));
    }
}

#[test]
fn broken_canaries_are_overruns_and_underruns() {
    let (mut r, a, b) = two_heaps(Gen::Dynamic);
    let sizes = r.poison(&a, false);
    r.poison(&b, false);
    let (victim, alloc) = sizes[1];
    // Three bytes written past the data.
    r.put_bytes(victim + 16 + alloc, b"abc");
    let st = walk_poisoned(&r, Poisoning::Light);
    assert_eq!(st.status, HeapStatus::Corrupt);
    assert_eq!(kinds(&st), vec![K::Overrun], "{:?}", st.anomalies);
    assert_eq!(st.anomalies[0].addr, Some(victim));
    assert!(
        st.anomalies[0]
            .message
            .contains(&format!("requested {alloc} bytes"))
    );
    // Without poisoning the same memory is a healthy heap: nothing can be checked.
    assert_eq!(walk_with(&r, dynamic()).status, HeapStatus::Ok);
    // The head canary overwritten.
    let (mut r, a, b) = two_heaps(Gen::Dynamic);
    let sizes = r.poison(&a, false);
    r.poison(&b, false);
    r.put(sizes[2].0 + 8, 0);
    assert_eq!(
        kinds(&walk_poisoned(&r, Poisoning::Light)),
        vec![K::Underrun]
    );
}

#[test]
fn comprehensive_mode_checks_the_free_fill() {
    let (mut r, a, b) = two_heaps(Gen::Dynamic);
    r.poison(&a, true);
    r.poison(&b, true);
    let st = walk_poisoned(&r, Poisoning::Comprehensive);
    assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
    let (free_block, size, _) = *a.blocks.iter().find(|b| b.2).unwrap();
    r.put_bytes(free_block + 4 + size - 1, &[0x00]);
    let st = walk_poisoned(&r, Poisoning::Comprehensive);
    let hit = st
        .anomalies
        .iter()
        .find(|x| x.addr == Some(free_block))
        .unwrap();
    assert_eq!(hit.kind, K::WriteAfterFree);
    // Light mode does not look at free memory.
    let st = walk_poisoned(&r, Poisoning::Light);
    assert!(st.anomalies.iter().all(|x| x.addr != Some(free_block)));
}
