//! newlib's full malloc, dlmalloc 2.6.x (docs/allocators/newlib-dlmalloc.md).
//!
//! Chunks are `{ prev_size; size; fd; bk }` with `size & 1` = PREV_INUSE: whether a chunk is in use
//! is recorded in the *next* chunk. The walk runs from `__malloc_sbrk_base` (aligned so the user
//! pointer is 8-aligned) to the top chunk (`__malloc_av_[2]`), which is free and ends at the break.
//! Free chunks also sit in the doubly linked bins of `__malloc_av_`; every bin is walked and
//! checked against the physical walk.

use memlife_core::Memory;
use memlife_dwarf::Symbols;

use super::{optional_static, require_static, resolved_statics};
use crate::firmware_view::{FirmwareView, Mallinfo, NewlibView};
use crate::image::MemImage;
use crate::state::{AnomalyKind, Block, HeapState, HeapStatus};
use crate::{
    AllocatorKind, BlockRef, EntryPoint, HeaderRange, HeapError, HeapWalker, ResolvedSymbol,
    WalkContext, WalkerOptions,
};

const NAME: &str = AllocatorKind::Dlmalloc.name();

const ENTRY_POINTS: &[EntryPoint] = &[
    EntryPoint::malloc("_malloc_r", 1),
    EntryPoint::other_alloc("malloc"),
    EntryPoint::other_alloc("_calloc_r"),
    EntryPoint::other_alloc("_realloc_r"),
    EntryPoint::other_alloc("_memalign_r"),
    EntryPoint::free("_free_r", 1),
    EntryPoint::other_free("free"),
];
const NAV: u64 = 128;
const PREV_INUSE: u64 = 1;
const SIZE_BITS: u64 = 3;
const MAX_ARENA: u64 = 16 << 20;

/// Walker for newlib dlmalloc.
#[derive(Debug, Clone)]
pub struct DlmallocWalker {
    av: u64,
    sbrk_base: u64,
    max_sbrked: Option<u64>,
    current_mallinfo: Option<u64>,
    heap_limit: Option<u64>,
    resolved: Vec<ResolvedSymbol>,
}

impl DlmallocWalker {
    /// Resolves `__malloc_av_` and `__malloc_sbrk_base`.
    pub fn from_symbols(symbols: &Symbols, opts: &WalkerOptions) -> Result<Self, HeapError> {
        let (av, _) = require_static(symbols, NAME, "__malloc_av_", &[])?;
        let (sbrk_base, _) = require_static(symbols, NAME, "__malloc_sbrk_base", &[])?;
        let resolved = resolved_statics(
            symbols,
            [
                "__malloc_av_",
                "__malloc_sbrk_base",
                "__malloc_max_sbrked_mem",
            ],
            &[],
        );
        Ok(DlmallocWalker {
            av,
            sbrk_base,
            max_sbrked: optional_static(symbols, NAME, "__malloc_max_sbrked_mem", &[])?,
            current_mallinfo: optional_static(symbols, NAME, "__malloc_current_mallinfo", &[])?,
            heap_limit: opts.heap_limit,
            resolved,
        })
    }
}

impl DlmallocWalker {
    /// What `mallinfo()` returns: the fields it recomputes (free chunks in the bins plus top,
    /// their bytes, the rest of `arena` in use, top as `keepcost`) over the ones
    /// `__malloc_current_mallinfo` keeps (`arena` = bytes obtained from sbrk, live; without the
    /// variable, the break minus the sbrk base).
    fn mallinfo(
        &self,
        g: &MemImage,
        st: &HeapState,
        bins: &[u64],
        top_size: u64,
        sbrked: u64,
    ) -> FirmwareView {
        let field = |i: u64| {
            self.current_mallinfo
                .and_then(|a| g.u32(a + 4 * i))
                .map(u64::from)
        };
        let size_of = |a: &u64| {
            st.blocks
                .iter()
                .find(|b| b.addr == *a)
                .map_or(0, |b| b.size)
        };
        let avail = top_size + bins.iter().map(size_of).sum::<u64>();
        let navail = u64::from(top_size >= 16) + bins.len() as u64;
        let arena = field(0).unwrap_or(sbrked);
        FirmwareView::Newlib(NewlibView {
            mallinfo: Mallinfo {
                arena,
                ordblks: navail,
                smblks: field(2).unwrap_or(0),
                hblks: field(3).unwrap_or(0),
                hblkhd: field(4).unwrap_or(0),
                usmblks: field(5).unwrap_or(0),
                fsmblks: field(6).unwrap_or(0),
                uordblks: arena.wrapping_sub(avail) & 0xffff_ffff,
                fordblks: avail,
                keepcost: top_size,
            },
        })
    }
}

impl HeapWalker for DlmallocWalker {
    fn kind(&self) -> AllocatorKind {
        AllocatorKind::Dlmalloc
    }

    fn entry_points(&self) -> &'static [EntryPoint] {
        ENTRY_POINTS
    }

    fn resolved(&self) -> Vec<ResolvedSymbol> {
        self.resolved.clone()
    }

    /// The chunk starts 8 bytes before the user pointer (`prev_size`, `size`); only `size` is
    /// read.
    fn header_range(&self, ptr: u64) -> Option<HeaderRange> {
        Some(HeaderRange {
            addr: ptr.checked_sub(4)?,
            len: 4,
        })
    }

    fn block_of(&self, mem: &mut dyn Memory, ptr: u64) -> Result<Option<BlockRef>, HeapError> {
        let (
            Some(chunk),
            Some(HeaderRange {
                addr: size_word, ..
            }),
        ) = (ptr.checked_sub(8), self.header_range(ptr))
        else {
            return Ok(None);
        };
        let size = u64::from(mem.read_u32(size_word)?) & !SIZE_BITS;
        Ok((size >= 16).then_some(BlockRef { addr: chunk, size }))
    }

    fn walk(&self, mem: &mut dyn Memory, ctx: WalkContext) -> Result<HeapState, HeapError> {
        let mut globals = vec![(self.av, (NAV * 2 + 2) * 4), (self.sbrk_base, 4)];
        if let Some(m) = self.max_sbrked {
            globals.push((m, 4));
        }
        if let Some(m) = self.current_mallinfo {
            globals.push((m, 40));
        }
        let g = MemImage::read(mem, &globals)?;
        let w = |img: &MemImage, a: u64| img.u32(a).map(u64::from);
        let base = w(&g, self.sbrk_base).unwrap_or(u64::from(u32::MAX));
        let top = w(&g, self.av + 8).unwrap_or(0);
        let mut st = HeapState::empty(self.name());
        if let Some(m) = self.max_sbrked.and_then(|a| w(&g, a)) {
            st.counters.push(("__malloc_max_sbrked_mem".into(), m));
        }
        if base == u64::from(u32::MAX) || base == 0 {
            st.status = HeapStatus::Uninitialised;
            st.finish(ctx, None);
            return Ok(st);
        }
        // The first chunk starts where its user pointer (chunk + 8) is 8-aligned.
        let start = if (base + 8) % 8 == 0 {
            base
        } else {
            base + (8 - (base + 8) % 8)
        };
        st.heap_start = start;
        if top < start || top - start > MAX_ARENA {
            st.anomaly(
                AnomalyKind::OutOfRange,
                Some(top),
                format!("top chunk {top:#010x} is outside the heap (start {start:#010x})"),
            );
            st.finish(ctx, None);
            return Ok(st);
        }
        let top_hdr = MemImage::read(mem, &[(top, 8)])?;
        let top_size = w(&top_hdr, top + 4).unwrap_or(0) & !SIZE_BITS;
        let brk = top + top_size;
        if top_size > MAX_ARENA {
            st.anomaly(
                AnomalyKind::SizeOverflow,
                Some(top),
                format!("top chunk size {top_size}"),
            );
            st.finish(ctx, None);
            return Ok(st);
        }
        let (img, mut read) = MemImage::for_walk(mem, &[(start, brk - start)], &ctx.read)?;
        let size_at = |p: u64| w(&img, p + 4);

        // Physical walk up to top; a chunk is in use when the next one has PREV_INUSE.
        let mut chunks: Vec<(u64, u64)> = Vec::new();
        let mut p = start;
        let bound = (brk - start) / 16 + 2;
        while p < top {
            if chunks.len() as u64 > bound {
                st.anomaly(
                    AnomalyKind::TooManyBlocks,
                    Some(p),
                    "physical walk exceeded its bound".into(),
                );
                break;
            }
            let size = size_at(p).unwrap_or(0) & !SIZE_BITS;
            if size < 16 || !size.is_multiple_of(8) || p + size > top {
                st.anomaly(
                    AnomalyKind::SizeOverflow,
                    Some(p),
                    format!(
                        "chunk at {p:#010x} has size {size}, running past the top chunk {top:#010x}"
                    ),
                );
                break;
            }
            chunks.push((p, size));
            p += size;
        }
        for &(addr, size) in &chunks {
            let next = size_at(addr + size).unwrap_or(PREV_INUSE);
            let free = next & PREV_INUSE == 0;
            if free {
                let footer = w(&img, addr + size).unwrap_or(0);
                if footer != size {
                    st.anomaly(
                        AnomalyKind::BadHeader,
                        Some(addr),
                        format!("free chunk at {addr:#010x}: footer {footer} != size {size}"),
                    );
                }
            }
            st.blocks.push(Block {
                addr,
                size,
                free,
                unclaimed: false,
                alloc_size: None,
            });
        }
        st.blocks.push(Block {
            addr: top,
            size: top_size,
            free: true,
            unclaimed: false,
            alloc_size: None,
        });

        // Bins: each a circular doubly linked list through fd, headed at bin_at(i).
        let mut in_bins: Vec<u64> = Vec::new();
        for i in 1..NAV {
            let bin = self.av + (2 * i + 2) * 4 - 8;
            let mut q = w(&g, bin + 8).unwrap_or(bin);
            let mut steps = 0;
            while q != bin {
                steps += 1;
                if steps > bound {
                    st.anomaly(
                        AnomalyKind::Cycle,
                        Some(q),
                        format!("bin {i} does not return to its head"),
                    );
                    break;
                }
                if q < start || q >= top || q % 8 != 0 {
                    st.anomaly(
                        AnomalyKind::OutOfRange,
                        Some(q),
                        format!("bin {i} points to {q:#010x}, outside the heap"),
                    );
                    break;
                }
                if !st.blocks.iter().any(|b| b.addr == q && b.free) {
                    st.anomaly(
                        AnomalyKind::ListMismatch,
                        Some(q),
                        format!("bin {i} holds {q:#010x}, which is not a free chunk"),
                    );
                }
                in_bins.push(q);
                q = w(&img, q + 8).unwrap_or(bin);
            }
        }
        st.firmware_view = Some(self.mallinfo(&g, &st, &in_bins, top_size, brk - base));
        st.free_list = in_bins;
        let free: Vec<Block> = st.blocks.iter().filter(|b| b.free).copied().collect();
        st.total_free = free.iter().map(|b| b.size).sum();
        st.largest_free = free.iter().map(|b| b.size).max().unwrap_or(0);
        st.free_blocks = free.len() as u64;
        st.heap_size = brk - start;
        if let Some(l) = self.heap_limit.filter(|l| *l >= brk) {
            let tail = l - brk;
            st.unclaimed = Some(tail);
            st.heap_size = l - start;
            st.total_free += tail;
            st.largest_free = st.largest_free.max(tail + top_size);
        }
        img.finish(&mut read)?;
        st.read = read;
        st.finish(ctx, None);
        Ok(st)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use memlife_core::Snapshot;

    use super::*;
    use crate::testing::WalkModes;

    const BASE: u64 = 0x2000_0000;
    const AV: u64 = BASE;
    const SBRK_BASE: u64 = BASE + 0x410;
    const ARENA: u64 = BASE + 0x800;
    const MALLINFO: u64 = BASE + 0x420;

    #[test]
    fn walks_chunks_bins_and_top() {
        let mut ram = vec![0u8; 0x1000];
        let mut put = |a: u64, v: u32| {
            let o = (a - BASE) as usize;
            ram[o..o + 4].copy_from_slice(&v.to_le_bytes());
        };
        // Bins: every bin empty (fd = bk = itself), except bin 10 holding the free chunk.
        for i in 1..NAV {
            let bin = AV + (2 * i + 2) * 4 - 8;
            put(bin + 8, bin as u32);
            put(bin + 12, bin as u32);
        }
        // ARENA+8 is 8-aligned, so the first chunk starts at ARENA.
        let (c1, c2, c3, top) = (ARENA, ARENA + 0x20, ARENA + 0x60, ARENA + 0x80);
        put(c1 + 4, 0x20 | 1); // used, prev in use
        put(c2 + 4, 0x40 | 1); // free
        put(c3, 0x40); // footer of c2
        put(c3 + 4, 0x20); // used, PREV_INUSE clear: c2 is free
        put(top + 4, 0x100 | 1);
        let bin10 = AV + (2 * 10 + 2) * 4 - 8;
        put(bin10 + 8, c2 as u32);
        put(c2 + 8, bin10 as u32);
        put(c2 + 12, bin10 as u32);
        put(AV + 8, top as u32);
        put(SBRK_BASE, ARENA as u32);
        // __malloc_current_mallinfo: arena (live) and a field mallinfo() keeps as stored.
        put(MALLINFO, 0x1000);
        put(MALLINFO + 20, 0x777);
        let w = DlmallocWalker {
            av: AV,
            sbrk_base: SBRK_BASE,
            max_sbrked: None,
            current_mallinfo: Some(MALLINFO),
            heap_limit: None,
            resolved: vec![],
        };
        let mut snap = Snapshot::default();
        snap.add_region(BASE, ram).unwrap();
        let st = w.walk_modes(&mut snap, WalkContext::default()).unwrap();
        assert_eq!(st.status, HeapStatus::Ok, "{:?}", st.anomalies);
        assert_eq!(st.blocks.len(), 4);
        assert_eq!(st.free_list, vec![c2]);
        assert_eq!(st.total_free, 0x40 + 0x100);
        assert_eq!(st.used_blocks, 2);
        assert_eq!(st.heap_size, 0x180);
        let Some(FirmwareView::Newlib(v)) = st.firmware_view else {
            panic!("{:?}", st.firmware_view);
        };
        assert_eq!(
            v.mallinfo,
            Mallinfo {
                arena: 0x1000,
                ordblks: 2,
                usmblks: 0x777,
                uordblks: 0x1000 - 0x140,
                fordblks: 0x140,
                keepcost: 0x100,
                ..Mallinfo::default()
            }
        );
    }
}
