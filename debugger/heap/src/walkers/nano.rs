//! newlib-nano malloc (docs/allocators/newlib-nano.md).
//!
//! Chunks are `{ long size; chunk *next; }` with `size` the whole chunk including the 4-byte
//! header. There is no in-use flag: a chunk is free exactly when it is on `__malloc_free_list`.
//! The arena runs from `__malloc_sbrk_start` to the break, which lives in the `_sbrk`
//! implementation (CubeMX `__sbrk_heap_end`, libgloss's function-static `heap_end`). Memory between
//! the break and the heap limit has not been claimed yet but malloc can still get it, so it counts
//! as free (`unclaimed`): otherwise a leak would hide behind a growing break.

use memlife_core::Memory;
use memlife_dwarf::Symbols;

use super::{align_up, check_in_32_bits, optional_static, require_static, resolved_statics};
use crate::firmware_view::{FirmwareView, Mallinfo, NewlibView};
use crate::image::MemImage;
use crate::state::{AnomalyKind, Block, HeapState, HeapStatus};
use crate::{
    AllocatorKind, BlockRef, EntryPoint, HeaderRange, HeapError, HeapWalker, ResolvedSymbol,
    WalkContext, WalkerOptions,
};

/// The allocator's name, as reported.
const NAME: &str = AllocatorKind::Nano.name();
const ENTRY_POINTS: &[EntryPoint] = &[
    EntryPoint::malloc("_malloc_r", 1),
    EntryPoint::other_alloc("malloc"),
    EntryPoint::other_alloc("_calloc_r"),
    EntryPoint::other_alloc("calloc"),
    EntryPoint::other_alloc("_realloc_r"),
    EntryPoint::other_alloc("realloc"),
    EntryPoint::other_alloc("_memalign_r"),
    EntryPoint::free("_free_r", 1),
    EntryPoint::other_free("free"),
];
/// Break variables of common `_sbrk` implementations, in order of preference.
const BREAK_VARS: &[&str] = &["__sbrk_heap_end", "heap_end", "__brkval", "brk"];
/// Heap-limit linker symbols of common linker scripts.
const LIMIT_SYMBOLS: &[&str] = &[
    "_heap_limit",
    "__HeapLimit",
    "__heap_end__",
    "_eheap",
    "__heap_end",
];
/// Start-of-heap linker symbols (the initial break).
const END_SYMBOLS: &[&str] = &["_end", "end", "__end__", "__HeapBase"];
/// Never read more than this as one arena (a wild break must not make us read gigabytes).
const MAX_ARENA: u64 = 16 << 20;

/// Walker for newlib-nano.
#[derive(Debug, Clone)]
pub struct NanoWalker {
    free_list: u64,
    sbrk_start: u64,
    break_var: Option<u64>,
    fixed_break: Option<u64>,
    heap_base: Option<u64>,
    heap_limit: Option<u64>,
    resolved: Vec<ResolvedSymbol>,
}

impl NanoWalker {
    /// Resolves the nano globals, the `_sbrk` break and the heap limit.
    pub fn from_symbols(symbols: &Symbols, opts: &WalkerOptions) -> Result<Self, HeapError> {
        let (free_list, _) = require_static(symbols, NAME, "__malloc_free_list", &[])?;
        let (sbrk_start, _) = require_static(symbols, NAME, "__malloc_sbrk_start", &[])?;
        let mut break_var = None;
        for n in BREAK_VARS {
            break_var = optional_static(symbols, NAME, n, &["sysmem.c", "syscalls.c", "sbrk.c"])?;
            if break_var.is_some() {
                break;
            }
        }
        let heap_limit = opts
            .heap_limit
            .or_else(|| linker_symbol(symbols, LIMIT_SYMBOLS))
            .or_else(|| {
                let estack = linker_symbol(symbols, &["_estack"])?;
                let min_stack = linker_symbol(symbols, &["_Min_Stack_Size"])?;
                estack.checked_sub(min_stack)
            });
        let heap_base = linker_symbol(symbols, END_SYMBOLS);
        // The arena lies between the base and the limit: both are addresses the walk adds to.
        for (what, addr) in [("the heap limit", heap_limit), ("the heap base", heap_base)] {
            if let Some(a) = addr {
                check_in_32_bits(NAME, what, a, 0)?;
            }
        }
        if break_var.is_none() && opts.heap_break.is_none() {
            return Err(HeapError::MissingSymbol {
                allocator: NAME,
                symbol: BREAK_VARS.join("` or `"),
                hint: " (the _sbrk break variable; pass --heap-break ADDR)".into(),
            });
        }
        let mut resolved = resolved_statics(
            symbols,
            ["__malloc_free_list", "__malloc_sbrk_start"]
                .into_iter()
                .chain(BREAK_VARS.iter().copied()),
            &[],
        );
        if let Some(l) = heap_limit {
            resolved.push(ResolvedSymbol {
                name: "heap limit".into(),
                address: l,
                size: 0,
                type_name: "linker symbol".into(),
            });
        }
        Ok(NanoWalker {
            free_list,
            sbrk_start,
            break_var,
            fixed_break: opts.heap_break,
            heap_base,
            heap_limit,
            resolved,
        })
    }
}

fn linker_symbol(symbols: &Symbols, names: &[&str]) -> Option<u64> {
    names
        .iter()
        .find_map(|n| symbols.elf_symbol(n).map(|s| s.address))
}

impl HeapWalker for NanoWalker {
    fn kind(&self) -> AllocatorKind {
        AllocatorKind::Nano
    }

    fn entry_points(&self) -> &'static [EntryPoint] {
        ENTRY_POINTS
    }

    fn resolved(&self) -> Vec<ResolvedSymbol> {
        self.resolved.clone()
    }

    /// The word before the user pointer: the chunk size, or, when the pointer was aligned up, a
    /// negative offset back to the chunk.
    fn header_range(&self, ptr: u64) -> Option<HeaderRange> {
        Some(HeaderRange {
            addr: ptr.checked_sub(4)?,
            len: 4,
        })
    }

    fn block_of(&self, mem: &mut dyn Memory, ptr: u64) -> Result<Option<BlockRef>, HeapError> {
        let Some(HeaderRange {
            addr: word_addr, ..
        }) = self.header_range(ptr)
        else {
            return Ok(None);
        };
        let word = mem.read_u32(word_addr)? as i32;
        let (chunk, size) = if word < 0 {
            let chunk = word_addr.wrapping_add_signed(i64::from(word));
            (chunk, i64::from(mem.read_u32(chunk)? as i32))
        } else {
            (word_addr, i64::from(word))
        };
        Ok((size > 0 && size % 4 == 0).then_some(BlockRef {
            addr: chunk,
            size: size as u64,
        }))
    }

    fn walk(&self, mem: &mut dyn Memory, ctx: WalkContext) -> Result<HeapState, HeapError> {
        let mut globals = vec![(self.free_list, 4), (self.sbrk_start, 4)];
        if let Some(b) = self.break_var {
            globals.push((b, 4));
        }
        let g = MemImage::read(mem, &globals)?;
        let word = |img: &MemImage, a: u64| img.u32(a).map(u64::from);
        let head = word(&g, self.free_list).unwrap_or(0);
        let sbrk_start = word(&g, self.sbrk_start).unwrap_or(0);
        let brk = self
            .fixed_break
            .or_else(|| self.break_var.and_then(|b| word(&g, b)))
            .unwrap_or(0);
        let mut st = HeapState::empty(self.name());

        if sbrk_start == 0 {
            // No malloc has run yet: everything from the initial break to the limit is unclaimed.
            st.status = HeapStatus::Uninitialised;
            st.firmware_view = Some(mallinfo(0, 0));
            let base = if brk != 0 {
                brk
            } else {
                self.heap_base.unwrap_or(0)
            };
            st.heap_start = base;
            if let Some(limit) = self.heap_limit.filter(|l| *l > base) {
                st.heap_size = limit - base;
                st.unclaimed = Some(st.heap_size);
                st.total_free = st.heap_size;
                st.largest_free = st.heap_size;
                st.blocks.push(Block {
                    addr: base,
                    size: st.heap_size,
                    free: true,
                    unclaimed: true,
                    alloc_size: None,
                });
            }
            st.finish(ctx, None);
            return Ok(st);
        }

        let start = align_up(sbrk_start, 4);
        st.heap_start = start;
        let limit = self.heap_limit.filter(|l| *l >= start);
        if brk < start || limit.is_some_and(|l| brk > l) || brk - start > MAX_ARENA {
            st.anomaly(
                AnomalyKind::OutOfRange,
                Some(brk),
                format!("the sbrk break {brk:#010x} is outside the heap (start {start:#010x})"),
            );
            st.heap_size = limit.map_or(0, |l| l - start);
            st.finish(ctx, None);
            return Ok(st);
        }
        let (img, mut read) = MemImage::for_walk(mem, &[(start, brk - start)], &ctx.read)?;

        // Free list first: it is what marks chunks free.
        let mut free_set: Vec<(u64, u64)> = Vec::new();
        let mut p = head;
        let mut prev = 0u64;
        let bound = (brk - start) / 12 + 2;
        let mut steps = 0;
        while p != 0 {
            steps += 1;
            if steps > bound {
                st.anomaly(
                    AnomalyKind::Cycle,
                    Some(p),
                    "free list does not end within its bound".into(),
                );
                break;
            }
            if p < start || p >= brk || p % 4 != 0 {
                st.anomaly(AnomalyKind::OutOfRange, Some(p), format!("free list points to {p:#010x}, outside the arena {start:#010x}..{brk:#010x} (after {prev:#010x})"));
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
            let size = word(&img, p).unwrap_or(0);
            if size < 8 || size % 4 != 0 || p + size > brk {
                st.anomaly(
                    AnomalyKind::SizeOverflow,
                    Some(p),
                    format!("free chunk at {p:#010x} has size {size}"),
                );
                break;
            }
            free_set.push((p, size));
            st.free_list.push(p);
            prev = p;
            p = word(&img, p + 4).unwrap_or(0);
        }

        // Physical walk: chunks tile the arena exactly up to the break.
        let mut b = start;
        let mut steps = 0;
        while b < brk {
            steps += 1;
            if steps > bound {
                st.anomaly(
                    AnomalyKind::TooManyBlocks,
                    Some(b),
                    "physical walk exceeded its bound".into(),
                );
                break;
            }
            let raw = word(&img, b).unwrap_or(0) as u32 as i32;
            let size = i64::from(raw);
            if size <= 0 || size % 4 != 0 || b + size as u64 > brk {
                st.anomaly(
                    AnomalyKind::SizeOverflow,
                    Some(b),
                    format!(
                        "chunk at {b:#010x} has size {raw}, running past the break {brk:#010x}"
                    ),
                );
                break;
            }
            let size = size as u64;
            let free = free_set.iter().any(|&(a, _)| a == b);
            st.blocks.push(Block {
                addr: b,
                size,
                free,
                unclaimed: false,
                alloc_size: None,
            });
            b += size;
        }
        for &(a, _) in &free_set {
            if !st.blocks.iter().any(|blk| blk.addr == a) {
                st.anomaly(
                    AnomalyKind::ListMismatch,
                    Some(a),
                    format!(
                        "free-list entry {a:#010x} is not a chunk boundary of the physical walk"
                    ),
                );
            }
        }
        for pair in st.blocks.clone().windows(2) {
            if pair[0].free && pair[1].free {
                st.anomaly(
                    AnomalyKind::NotCoalesced,
                    Some(pair[0].addr),
                    format!(
                        "free chunks at {:#010x} and {:#010x} are adjacent",
                        pair[0].addr, pair[1].addr
                    ),
                );
            }
        }
        let chunk_free: u64 = free_set.iter().map(|(_, s)| s).sum();
        st.firmware_view = Some(mallinfo(brk.wrapping_sub(sbrk_start), chunk_free));
        st.brk = Some(brk);
        st.free_list_bytes = Some(chunk_free);
        let largest_chunk = free_set.iter().map(|(_, s)| *s).max().unwrap_or(0);
        st.counters
            .push(("arena (sbrk_start..break)".into(), brk - start));
        st.free_blocks = free_set.len() as u64;
        match limit {
            Some(l) => {
                let tail = l - brk;
                st.unclaimed = Some(tail);
                st.heap_size = l - start;
                st.total_free = chunk_free + tail;
                // newlib 3.x cannot merge the last free chunk with new sbrk memory: the largest
                // request that succeeds is the larger of the two.
                st.largest_free = largest_chunk.max(tail);
                if tail > 0 {
                    st.blocks.push(Block {
                        addr: brk,
                        size: tail,
                        free: true,
                        unclaimed: true,
                        alloc_size: None,
                    });
                }
            }
            None => {
                st.heap_size = brk - start;
                st.total_free = chunk_free;
                st.largest_free = largest_chunk;
            }
        }
        img.finish(&mut read)?;
        st.read = read;
        st.finish(ctx, None);
        Ok(st)
    }
}

/// What nano's `mallinfo()` returns: `arena` is the break minus the first sbrk result (unaligned,
/// as stored), `fordblks` the sum of the free list, `uordblks` the rest; nano never sets the other
/// fields, so they stay 0.
fn mallinfo(arena: u64, free: u64) -> FirmwareView {
    FirmwareView::Newlib(NewlibView {
        mallinfo: Mallinfo {
            arena,
            fordblks: free,
            uordblks: arena.wrapping_sub(free) & 0xffff_ffff,
            ..Mallinfo::default()
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use memlife_core::Snapshot;

    use super::*;
    use crate::AnomalyKind as K;
    use crate::testing::WalkModes;

    const BASE: u64 = 0x2000_0000;
    const FREE_LIST: u64 = BASE;
    const SBRK_START: u64 = BASE + 4;
    const BRK: u64 = BASE + 8;
    const ARENA: u64 = BASE + 0x100;
    const LIMIT: u64 = BASE + 0x800;

    fn walker() -> NanoWalker {
        NanoWalker {
            free_list: FREE_LIST,
            sbrk_start: SBRK_START,
            break_var: Some(BRK),
            fixed_break: None,
            heap_base: Some(ARENA),
            heap_limit: Some(LIMIT),
            resolved: Vec::new(),
        }
    }

    /// Chunks `(size, free)` from the arena start; the break ends the last one.
    fn ram(chunks: &[(u32, bool)]) -> Vec<u8> {
        let mut ram = vec![0u8; 0x800];
        let mut put = |a: u64, v: u32| {
            let o = (a - BASE) as usize;
            ram[o..o + 4].copy_from_slice(&v.to_le_bytes());
        };
        let mut p = ARENA;
        let mut prev_link = FREE_LIST;
        for &(size, free) in chunks {
            put(p, size);
            if free {
                put(prev_link, p as u32);
                prev_link = p + 4;
            }
            p += u64::from(size);
        }
        put(prev_link, 0);
        put(SBRK_START, ARENA as u32);
        put(BRK, p as u32);
        ram
    }

    fn walk(ram: Vec<u8>) -> HeapState {
        let mut snap = Snapshot::default();
        snap.add_region(BASE, ram).unwrap();
        walker()
            .walk_modes(&mut snap, WalkContext::default())
            .unwrap()
    }

    #[test]
    fn chunks_free_list_and_unclaimed_tail() {
        let st = walk(ram(&[
            (0x20, false),
            (0x40, true),
            (0x100, false),
            (0x18, true),
        ]));
        assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
        assert_eq!(st.free_list, vec![ARENA + 0x20, ARENA + 0x160]);
        let brk = ARENA + 0x178;
        assert_eq!(st.unclaimed, Some(LIMIT - brk));
        assert_eq!(st.total_free, 0x40 + 0x18 + (LIMIT - brk));
        assert_eq!(st.heap_size, LIMIT - ARENA);
        assert_eq!(st.free_blocks, 2);
        assert_eq!(st.used_blocks, 2);
        assert_eq!(st.largest_free, LIMIT - brk);
        // mallinfo(): the arena up to the break, the free list's sum, the rest in use.
        let Some(FirmwareView::Newlib(v)) = st.firmware_view else {
            panic!("{:?}", st.firmware_view);
        };
        assert_eq!(
            v.mallinfo,
            Mallinfo {
                arena: 0x178,
                fordblks: 0x58,
                uordblks: 0x120,
                ..Mallinfo::default()
            }
        );
        assert_eq!(st.brk, Some(brk));
        assert_eq!(st.free_list_bytes, Some(0x40 + 0x18));
        let json = crate::render::json(&st, None);
        assert_eq!(json["break"], brk);
        assert_eq!(json["free_list_bytes"], 0x40 + 0x18);
    }

    #[test]
    fn before_the_first_malloc_everything_is_unclaimed() {
        let mut r = vec![0u8; 0x800];
        r[8..12].copy_from_slice(&(ARENA as u32).to_le_bytes());
        let st = walk(r);
        assert_eq!(st.status, HeapStatus::Uninitialised);
        assert_eq!(st.total_free, LIMIT - ARENA);
    }

    #[test]
    fn corruption_is_reported() {
        // A cycle in the free list.
        let mut r = ram(&[(0x20, false), (0x40, true), (0x100, false), (0x18, true)]);
        let o = (ARENA + 0x160 + 4 - BASE) as usize;
        r[o..o + 4].copy_from_slice(&((ARENA + 0x20) as u32).to_le_bytes());
        assert!(walk(r).anomalies.iter().any(|a| a.kind == K::Cycle));
        // A chunk size running past the break.
        let mut r = ram(&[(0x20, true), (0x40, true)]);
        let o = (ARENA + 0x20 - BASE) as usize;
        r[o..o + 4].copy_from_slice(&0x4000u32.to_le_bytes());
        assert!(walk(r).anomalies.iter().any(|a| a.kind == K::SizeOverflow));
        // A break outside the heap.
        let mut r = ram(&[(0x20, true)]);
        r[8..12].copy_from_slice(&0x1000_0000u32.to_le_bytes());
        assert!(walk(r).anomalies.iter().any(|a| a.kind == K::OutOfRange));
        // Adjacent free chunks.
        let r = ram(&[(0x20, true), (0x20, true), (0x20, false)]);
        let st = walk(r);
        assert!(
            st.anomalies.iter().any(|a| a.kind == K::NotCoalesced),
            "{st:?}"
        );
    }

    #[test]
    fn random_garbage_never_panics_or_hangs() {
        memlife_testkit::fuzz::cases(0x9e37_79b9, 300, |round, rng| {
            let mut r = ram(&[(0x20, false), (0x40, true), (0x100, false), (0x18, true)]);
            for _ in 0..(1 + round % 5) {
                let seed = rng.next_u32();
                let off = (seed as usize % 0x7fc) & !3;
                let v = if seed.is_multiple_of(3) {
                    BASE as u32 + seed % 0x800
                } else {
                    seed.rotate_left(7)
                };
                r[off..off + 4].copy_from_slice(&v.to_le_bytes());
            }
            let mut snap = Snapshot::default();
            snap.add_region(BASE, r).unwrap();
            // Chunks are at least 8 bytes (size word and alignment); the RAM is 0x800 bytes.
            // The work is bounded too: a few bulk reads, a few times the RAM at most.
            let mut mem = memlife_testkit::ram::Counted::new(snap);
            crate::state::assert_walk_bounded(
                walker().walk_modes(&mut mem, WalkContext::default()),
                0x800,
                8,
            );
            mem.assert_within(64, 4 * 0x800, "nano garbage walk");
        });
    }
}
