//! Walkers over committed RAM snapshots of the real firmware (testdata/README.md), as they are
//! and deliberately damaged: damage must become anomalies, never a panic or a hang.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

use std::path::Path;

use memlife_core::Memory;
use memlife_core::Snapshot;
use memlife_dwarf::Symbols;
use memlife_heap::{
    AnomalyKind, HeapError, HeapState, HeapStatus, HeapWalker, LinkModel, LinkState, ReadPlan,
    WalkContext, WalkStrategy, WalkerOptions, detect,
};

/// A way to damage a snapshot.
type Damage = Box<dyn Fn(&mut Snapshot)>;

fn fixture(name: &str) -> (Box<dyn HeapWalker>, Snapshot) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let symbols = Symbols::load(&dir.join(format!("{name}.elf"))).unwrap();
    let walker = detect(&symbols, None, &WalkerOptions::default(), None).unwrap();
    let snap = Snapshot::load(&dir.join(format!("{name}.mlsnap"))).unwrap();
    (walker, snap)
}

fn walk(walker: &dyn HeapWalker, snap: &mut Snapshot) -> HeapState {
    walk_every_way(walker, snap).unwrap()
}

/// Walks in bulk, sparse, and auto on a modeled 1 ms, 500 KB/s probe: the three must give the
/// same heap (damaged or not), or bulk fail where sparse read less; the bulk result.
fn walk_every_way(walker: &dyn HeapWalker, mem: &mut dyn Memory) -> Result<HeapState, HeapError> {
    let ctx = |strategy, model| WalkContext {
        read: ReadPlan {
            strategy,
            model,
            max_read: 2046,
        },
        ..WalkContext::default()
    };
    let probe = LinkModel {
        rtt_us: 1000.0,
        bytes_per_s: 500_000.0,
    };
    let bulk = walker.walk(mem, ctx(WalkStrategy::Bulk, None));
    for (strategy, model) in [
        (WalkStrategy::Sparse, None),
        (WalkStrategy::Auto, Some(probe)),
    ] {
        match (&bulk, walker.walk(mem, ctx(strategy, model))) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, &b, "{strategy}");
                assert_eq!(format!("{:?}", a.anomalies), format!("{:?}", b.anomalies));
            }
            (Ok(_), Err(e)) => panic!("{strategy} failed where bulk did not: {e}"),
            (Err(_), _) => {}
        }
    }
    bulk
}

fn poke(snap: &mut Snapshot, addr: u64, value: u32) {
    let region = snap
        .regions
        .iter_mut()
        .find(|r| addr >= r.start && addr + 4 <= r.start + r.data.len() as u64)
        .unwrap();
    let off = (addr - region.start) as usize;
    region.data[off..off + 4].copy_from_slice(&value.to_le_bytes());
}

#[test]
fn heap4_fragmented_heap_as_captured() {
    let (w, mut snap) = fixture("heap4-fragmentation");
    let st = walk(w.as_ref(), &mut snap);
    assert_eq!(st.allocator, "freertos-heap4");
    assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
    assert_eq!(
        (
            st.total_free,
            st.free_blocks,
            st.used_blocks,
            st.largest_free
        ),
        (38624, 9, 48, 16696)
    );
    assert_eq!(st.blocks.len(), 57);
    assert_eq!(st.counter("xFreeBytesRemaining"), Some(38624));
    assert_eq!(st.heap_size, 98288);
}

#[test]
fn nano_fragmented_heap_as_captured() {
    let (w, mut snap) = fixture("nano-fragmentation");
    let st = walk(w.as_ref(), &mut snap);
    assert_eq!(st.allocator, "newlib-nano");
    assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
    assert_eq!(
        (
            st.total_free,
            st.free_blocks,
            st.used_blocks,
            st.largest_free
        ),
        (38648, 14, 48, 9352)
    );
    assert_eq!(st.heap_size, 98304);
}

#[test]
fn heap4_corruptions_are_reported() {
    let (w, snap) = fixture("heap4-fragmentation");
    let clean = walk(w.as_ref(), &mut snap.clone());
    let free = clean.free_list.clone();
    let used: Vec<u64> = clean
        .blocks
        .iter()
        .filter(|b| !b.free)
        .map(|b| b.addr)
        .collect();
    let cases: Vec<(&str, Damage, AnomalyKind)> = vec![
        (
            "free-list cycle",
            Box::new({
                let f = free.clone();
                move |s: &mut Snapshot| poke(s, f[3], f[1] as u32)
            }),
            AnomalyKind::Cycle,
        ),
        (
            "wild pointer",
            Box::new({
                let f = free.clone();
                move |s: &mut Snapshot| poke(s, f[2], 0xdead_beef)
            }),
            AnomalyKind::OutOfRange,
        ),
        (
            "size overwritten",
            Box::new({
                let u = used.clone();
                move |s: &mut Snapshot| poke(s, u[5] + 4, 0x8000_fff0)
            }),
            AnomalyKind::SizeOverflow,
        ),
        (
            "header overwritten",
            Box::new({
                let u = used.clone();
                move |s: &mut Snapshot| poke(s, u[7], 0x4141_4141)
            }),
            AnomalyKind::BadHeader,
        ),
    ];
    for (name, damage, kind) in cases {
        let mut s = snap.clone();
        damage(&mut s);
        let st = walk(w.as_ref(), &mut s);
        assert_eq!(st.status, HeapStatus::Corrupt, "{name}");
        assert!(
            st.anomalies.iter().any(|a| a.kind == kind),
            "{name}: {:?}",
            st.anomalies
        );
    }
}

#[test]
fn heap4_counter_mismatch_is_reported() {
    let (w, mut snap) = fixture("heap4-fragmentation");
    let counter = w
        .resolved()
        .into_iter()
        .find(|r| r.name == "xFreeBytesRemaining")
        .unwrap()
        .address;
    poke(&mut snap, counter, 12345);
    let st = walk(w.as_ref(), &mut snap);
    assert!(
        st.anomalies
            .iter()
            .any(|a| a.kind == AnomalyKind::CounterMismatch && a.message.contains("12345"))
    );
}

#[test]
fn nano_corruptions_are_reported() {
    let (w, snap) = fixture("nano-fragmentation");
    let clean = walk(w.as_ref(), &mut snap.clone());
    let free = clean.free_list.clone();
    let used: Vec<u64> = clean
        .blocks
        .iter()
        .filter(|b| !b.free && !b.unclaimed)
        .map(|b| b.addr)
        .collect();
    let mut s = snap.clone();
    poke(&mut s, free[4] + 4, free[1] as u32);
    assert!(
        walk(w.as_ref(), &mut s)
            .anomalies
            .iter()
            .any(|a| a.kind == AnomalyKind::Cycle)
    );
    let mut s = snap.clone();
    poke(&mut s, used[3], 0x7fff_0000);
    assert!(
        walk(w.as_ref(), &mut s)
            .anomalies
            .iter()
            .any(|a| a.kind == AnomalyKind::SizeOverflow)
    );
    let mut s = snap.clone();
    poke(&mut s, free[0] + 4, 0x1234_5678);
    assert!(
        walk(w.as_ref(), &mut s)
            .anomalies
            .iter()
            .any(|a| a.kind == AnomalyKind::OutOfRange)
    );
}

#[test]
fn a_truncated_snapshot_is_an_error_not_a_panic() {
    let (w, mut snap) = fixture("heap4-fragmentation");
    for r in &mut snap.regions {
        let keep = r.data.len() / 2;
        r.data.truncate(keep);
    }
    assert!(w.walk(&mut snap, WalkContext::default()).is_err());
}

#[test]
fn random_damage_to_real_heaps_never_panics_or_hangs() {
    for name in [
        "heap4-fragmentation",
        "nano-fragmentation",
        "tlsf-fragmentation",
    ] {
        let (w, snap) = fixture(name);
        let clean = walk(w.as_ref(), &mut snap.clone());
        let (start, end) = (clean.heap_start, clean.heap_start + clean.heap_size);
        let bytes: u64 = snap.regions.iter().map(|r| r.data.len() as u64).sum();
        memlife_testkit::fuzz::cases(0x2545_f491, 300, |round, rng| {
            let mut s = snap.clone();
            for _ in 0..(1 + round % 8) {
                let seed = rng.next_u32();
                let addr = (start + u64::from(seed) % (end - start - 8)) & !3;
                let value = match seed % 3 {
                    0 => seed.rotate_left(11),
                    1 => (start as u32).wrapping_add(seed % 0x18000) & !7,
                    _ => (seed % 0x2000) | (seed & 0x8000_0000),
                };
                poke(&mut s, addr, value);
            }
            // Ends with a state or a read error, and lists no more than the memory can hold
            // (8 bytes is the smallest block of the three allocators).
            match walk_every_way(w.as_ref(), &mut s) {
                Ok(st) => {
                    assert!(st.blocks.len() as u64 <= bytes / 8, "{name}");
                    assert!(st.free_list.len() as u64 <= bytes / 8, "{name}");
                }
                Err(memlife_heap::HeapError::Target(_)) => {}
                Err(e) => panic!("{name}: {e}"),
            }
        });
    }
}

#[test]
fn tlsf_fragmented_heaps_as_captured() {
    let (w, mut snap) = fixture("tlsf-fragmentation");
    let st = walk(w.as_ref(), &mut snap);
    assert_eq!(st.allocator, "esp-idf-tlsf");
    assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
    // Every layout came from DWARF, and control_t's `size` member made it the dynamic one.
    let layout = w
        .resolved()
        .into_iter()
        .find(|r| r.name == "control_t (layout)")
        .unwrap();
    assert_eq!(layout.size, 36);
    assert_eq!(
        layout.type_name,
        "dynamic; from DWARF: heap_t_, multi_heap_info, block_header_t, control_t"
    );
    assert_eq!(
        (
            st.total_free,
            st.free_blocks,
            st.used_blocks,
            st.largest_free
        ),
        (37212, 9, 49, 9348)
    );
    // The allocator's own counters, read from each multi_heap_info.
    assert_eq!(st.counter("free_bytes"), Some(37212));
    assert_eq!(st.min_ever_free, Some(13364));
    assert_eq!(st.largest_allocatable, Some(9216));
    assert_eq!(st.heap_size, 64732 + 32032);
    let r: Vec<(u64, u64, &str, u64, u64)> = st
        .regions
        .iter()
        .map(|r| (r.start, r.end, r.kind, r.free, r.largest_allocatable))
        .collect();
    assert_eq!(
        r,
        [
            (0x2000_02b0, 0x2001_02b0, "DRAM", 29760, 9216),
            (0x2001_02b0, 0x2001_82b0, "PSRAM", 7452, 7424)
        ]
    );
}

/// The address of a region's `multi_heap_info` field, by offset (docs/allocators/esp-idf-tlsf.md).
fn tlsf_info(st: &HeapState, heap: usize, offset: u64) -> u64 {
    st.regions[heap].start + offset
}

#[test]
fn tlsf_corruptions_are_reported() {
    let (w, snap) = fixture("tlsf-fragmentation");
    let clean = walk(w.as_ref(), &mut snap.clone());
    let free = clean.free_list.clone();
    let used: Vec<u64> = clean
        .blocks
        .iter()
        .filter(|b| !b.free)
        .map(|b| b.addr)
        .collect();
    // heap 0's control_t sits right after its 20-byte multi_heap_info; fl_bitmap at +24.
    let fl_bitmap = tlsf_info(&clean, 0, 20 + 24);
    let cases: Vec<(&str, Damage, AnomalyKind)> = vec![
        (
            "free-list cycle",
            Box::new({
                let f = free.clone();
                move |s: &mut Snapshot| poke(s, f[3] + 8, f[3] as u32)
            }),
            AnomalyKind::Cycle,
        ),
        (
            "wild pointer",
            Box::new({
                let f = free.clone();
                move |s: &mut Snapshot| poke(s, f[2] + 8, 0xdead_beec)
            }),
            AnomalyKind::OutOfRange,
        ),
        (
            "size overwritten",
            Box::new({
                let u = used.clone();
                move |s: &mut Snapshot| poke(s, u[5] + 4, 0x0080_fff0)
            }),
            AnomalyKind::SizeOverflow,
        ),
        (
            "bitmap disagrees",
            Box::new(move |s: &mut Snapshot| poke(s, fl_bitmap, 0)),
            AnomalyKind::BitmapMismatch,
        ),
        (
            "free_bytes overwritten",
            Box::new({
                let a = tlsf_info(&clean, 1, 4);
                move |s: &mut Snapshot| poke(s, a, 12345)
            }),
            AnomalyKind::CounterMismatch,
        ),
    ];
    for (name, damage, kind) in cases {
        let mut s = snap.clone();
        damage(&mut s);
        let st = walk(w.as_ref(), &mut s);
        assert_eq!(st.status, HeapStatus::Corrupt, "{name}");
        assert!(
            st.anomalies.iter().any(|a| a.kind == kind),
            "{name}: {:?}",
            st.anomalies
        );
    }
    // A held heap_mux (heap_t_ table at the start of heap 0's pool; owner at +20 of the entry).
    let table = clean.blocks[0].addr + 8;
    let mut s = snap.clone();
    poke(&mut s, table + 36 + 20, 0xCDCD);
    let st = walk(w.as_ref(), &mut s);
    assert_eq!(st.status, HeapStatus::Busy);
    assert!(st.regions[1].busy_reason.is_some(), "{:?}", st.regions[1]);
    // A truncated snapshot: an error, not a panic.
    let mut s = snap.clone();
    for r in &mut s.regions {
        let keep = r.data.len() / 2;
        r.data.truncate(keep);
    }
    assert!(w.walk(&mut s, WalkContext::default()).is_err());
}

#[test]
fn a_core_halted_inside_the_allocator_makes_the_walk_busy() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let symbols = Symbols::load(&dir.join("heap4-fragmentation.elf")).unwrap();
    let (w, mut snap) = fixture("heap4-fragmentation");
    let malloc = symbols.function("pvPortMalloc").unwrap().entry;
    let set_pc = |snap: &mut Snapshot, pc: u64| {
        snap.registers.retain(|(n, _)| n != "pc");
        snap.registers.push(("pc".into(), pc));
    };
    // Two instructions into pvPortMalloc: busy, and the reason names the function.
    set_pc(&mut snap, (malloc & !1) + 4);
    let walked =
        memlife_heap::walk_halted(w.as_ref(), &symbols, &mut snap, &mut LinkState::default())
            .unwrap();
    assert_eq!(walked.state.status, HeapStatus::Busy);
    assert_eq!(
        walked.state.busy_reason.as_deref(),
        Some("halted inside pvPortMalloc")
    );
    // Halted in the application (a phase function): the same memory is a healthy heap.
    let phase = symbols.function("model_release").unwrap().entry;
    set_pc(&mut snap, phase & !1);
    let walked =
        memlife_heap::walk_halted(w.as_ref(), &symbols, &mut snap, &mut LinkState::default())
            .unwrap();
    assert_eq!(walked.state.status, HeapStatus::Ok);
    // Without a pc (a snapshot without registers) nothing says busy either.
    snap.registers.clear();
    let walked =
        memlife_heap::walk_halted(w.as_ref(), &symbols, &mut snap, &mut LinkState::default())
            .unwrap();
    assert_eq!(walked.state.status, HeapStatus::Ok);
    assert_eq!(
        memlife_heap::allocator_function_at(w.as_ref(), &symbols, (malloc & !1) + 4),
        Some("pvPortMalloc")
    );
}

/// Serves reads from a snapshot and records their ranges.
struct Recording<'a> {
    snap: &'a mut Snapshot,
    reads: Vec<(u64, usize)>,
}

impl memlife_core::Memory for Recording<'_> {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> memlife_core::Result<()> {
        self.reads.push((addr, buf.len()));
        self.snap.read(addr, buf)
    }
}

#[test]
fn user_pointers_map_back_to_their_blocks_through_the_declared_header() {
    /// A fixture and where its allocator puts the user pointer of a block.
    type Case = (&'static str, fn(u64) -> u64);
    let cases: [Case; 3] = [
        ("heap4-fragmentation", |block| block + 8),
        ("nano-fragmentation", |chunk| (chunk + 4 + 7) & !7),
        ("tlsf-fragmentation", |block| block + 8),
    ];
    for (name, user_ptr) in cases {
        let (w, mut snap) = fixture(name);
        let st = walk(w.as_ref(), &mut snap);
        let used: Vec<_> = st
            .blocks
            .iter()
            .filter(|b| !b.free && !b.unclaimed)
            .collect();
        assert!(used.len() > 5, "{name}");
        for b in used {
            let ptr = user_ptr(b.addr);
            let memlife_heap::HeaderRange { addr: hdr, len } = w.header_range(ptr).unwrap();
            let mut mem = Recording {
                snap: &mut snap,
                reads: Vec::new(),
            };
            let got = w.block_of(&mut mem, ptr).unwrap();
            assert_eq!(
                got,
                Some(memlife_heap::BlockRef {
                    addr: b.addr,
                    size: b.size
                }),
                "{name}: {ptr:#x}"
            );
            // The first read is the declared header: a caller that prefetched it pays nothing.
            let (first, first_len) = mem.reads[0];
            assert!(
                first >= hdr && first + first_len as u64 <= hdr + len as u64,
                "{name}: read {first:#x}+{first_len} outside the header {hdr:#x}+{len}"
            );
        }
        // Exactly one traced entry of each kind, and every traced one is in the list once.
        let roles: Vec<_> = w.entry_points().iter().map(|e| e.role).collect();
        let mallocs = roles
            .iter()
            .filter(|r| matches!(r, memlife_heap::EntryRole::Malloc { .. }))
            .count();
        let frees = roles
            .iter()
            .filter(|r| matches!(r, memlife_heap::EntryRole::Free { .. }))
            .count();
        assert_eq!((mallocs, frees), (1, 1), "{name}");
    }
}

/// On the real heaps a sparse walk reads a fraction of the arena, and says it walked sparse.
#[test]
fn a_sparse_walk_of_a_real_heap_reads_a_fraction_of_it() {
    for name in [
        "heap4-fragmentation",
        "nano-fragmentation",
        "tlsf-fragmentation",
    ] {
        let (w, snap) = fixture(name);
        let bulk = walk(w.as_ref(), &mut snap.clone());
        let mut mem = memlife_testkit::ram::Counted::new(snap);
        let ctx = WalkContext {
            read: ReadPlan::new(WalkStrategy::Sparse),
            ..WalkContext::default()
        };
        let st = w.walk(&mut mem, ctx).unwrap();
        assert_eq!(st, bulk, "{name}");
        assert_eq!(
            st.read.strategy,
            Some(memlife_core::ReadStrategy::Sparse),
            "{name}"
        );
        assert!(
            mem.bytes * 3 < bulk.heap_size,
            "{name}: {} bytes of a {}-byte heap",
            mem.bytes,
            bulk.heap_size
        );
    }
}
