//! `embedded_alloc::TlsfHeap`: rlsf 0.2's two-level segregated fit
//! (docs/allocators/embedded-alloc.md, "TlsfHeap").
//!
//! embedded-alloc 0.7 keeps the pool it gave rlsf (`Inner.raw_block`, as the user passed it).
//! rlsf rounds its start up and its length down to the granularity (four words: 16 bytes on
//! 32-bit), and ends it with a 16-byte *sentinel* block (`size == 16 | USED | SENTINEL`). Every
//! block starts with `{size, prev_phys_block}` (`repr(C)`); `size` is the whole block, header
//! included, with bit 0 = used and bit 1 = sentinel; free blocks add `{next_free, prev_free}`
//! and sit on `first_free[fl][sl]`, flagged in `fl_bitmap` and `sl_bitmap[fl]`.
//!
//! The physical walk stops at the sentinel, never at `raw_block`'s length: embedded-alloc
//! 0.7.0's own `free()` walks by that length and reads past the sentinel when the user's pool
//! was not granule-aligned (and then panics); memlife must not.

use std::collections::BTreeMap;

use memlife_core::Memory;
use memlife_dwarf::Symbols;

use super::llff::size_argument;
use super::{TLSF_TYPE, heap_static, layout};
use crate::firmware_view::{EmbeddedAllocView, FirmwareView};
use crate::image::MemImage;
use crate::state::{AnomalyKind, Block, HeapState, HeapStatus};
use crate::walkers::{align_down, align_up};
use crate::{
    AllocatorKind, BlockRef, EntryPoint, HeaderRange, HeapError, HeapWalker, ResolvedSymbol,
    WalkContext,
};

const NAME: &str = AllocatorKind::RustTlsf.name();
/// Never read more than this as one pool.
const MAX_POOL: u64 = 16 << 20;
const SIZE_USED: u64 = 1;
const SIZE_SENTINEL: u64 = 2;

/// As for `LlffHeap` (see `llff`): `GlobalAlloc::alloc/dealloc` survive inlining.
const ENTRY_POINTS_SIZE_R1: &[EntryPoint] = &entry_points(1);
const ENTRY_POINTS_SIZE_R2: &[EntryPoint] = &entry_points(2);

const fn entry_points(size_arg: u8) -> [EntryPoint; 8] {
    [
        EntryPoint::malloc(
            "<embedded_alloc::tlsf::Heap as core::alloc::global::GlobalAlloc>::alloc",
            size_arg,
        ),
        EntryPoint::other_alloc("__rust_alloc"),
        EntryPoint::other_alloc("__rust_alloc_zeroed"),
        EntryPoint::other_alloc("__rust_realloc"),
        EntryPoint::other_alloc("embedded_alloc::tlsf::Heap::alloc"),
        EntryPoint::free(
            "<embedded_alloc::tlsf::Heap as core::alloc::global::GlobalAlloc>::dealloc",
            1,
        ),
        EntryPoint::other_free("__rust_dealloc"),
        EntryPoint::other_free("embedded_alloc::tlsf::Heap::dealloc"),
    ]
}

/// Where everything the walk reads sits, relative to the static.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsfLayout {
    /// Size of the static.
    pub size: u64,
    /// Pointer size (`usize`); the granularity is four of them.
    pub word: u64,
    /// `RefCell::borrow`.
    pub borrow: u64,
    /// `Inner.initialized`.
    pub initialized: u64,
    /// `Inner.raw_block` (its data pointer; `None` = 0).
    pub raw_block: u64,
    /// `Inner.raw_block_size`.
    pub raw_block_size: u64,
    /// `Tlsf.fl_bitmap`.
    pub fl_bitmap: u64,
    /// `Tlsf.sl_bitmap[FLLEN]`.
    pub sl_bitmap: u64,
    /// `Tlsf.first_free[FLLEN][SLLEN]`.
    pub first_free: u64,
    /// First-level lists.
    pub fllen: u64,
    /// Second-level lists per first level.
    pub sllen: u64,
}

impl TlsfLayout {
    /// Reads the layout of the `embedded_alloc::tlsf::Heap` type `id` from DWARF.
    pub(crate) fn from_dwarf(symbols: &Symbols, id: memlife_dwarf::TypeId) -> Option<Self> {
        let types = symbols.types();
        let size = types.size_of(id)?;
        let (cell, cell_t) = layout::find(types, id, &["borrow", "value"])?;
        let (b_off, b_t) = layout::member(types, cell_t, "borrow")?;
        let borrow = cell + b_off + layout::scalar(types, b_t?)?;
        let (inner, inner_t) = layout::find(types, cell_t, &["tlsf", "raw_block"])?;
        let inner = cell + inner;
        let (tlsf, tlsf_t) = layout::member(types, inner_t, "tlsf")?;
        let tlsf_t = tlsf_t?;
        let (initialized, _) = layout::member(types, inner_t, "initialized")?;
        let (raw_block, rb_t) = layout::member(types, inner_t, "raw_block")?;
        let raw_block = raw_block + rb_t.and_then(|t| layout::scalar(types, t)).unwrap_or(0);
        let (raw_block_size, rbs_t) = layout::member(types, inner_t, "raw_block_size")?;
        let word = types.size_of(rbs_t?)?;
        if !matches!(word, 2 | 4 | 8) {
            return None;
        }
        let (fl_bitmap, _) = layout::member(types, tlsf_t, "fl_bitmap")?;
        let (sl_bitmap, _) = layout::member(types, tlsf_t, "sl_bitmap")?;
        let (first_free, ff_t) = layout::member(types, tlsf_t, "first_free")?;
        let dims = layout::dims(types, ff_t?)?;
        let (&fllen, &sllen) = (dims.first()?, dims.get(1)?);
        (fllen > 0 && sllen > 0 && fllen <= 64 && sllen <= 64).then_some(TlsfLayout {
            size,
            word,
            borrow,
            initialized: inner + initialized,
            raw_block: inner + raw_block,
            raw_block_size: inner + raw_block_size,
            fl_bitmap: inner + tlsf + fl_bitmap,
            sl_bitmap: inner + tlsf + sl_bitmap,
            first_free: inner + tlsf + first_free,
            fllen,
            sllen,
        })
    }

    fn granularity(&self) -> u64 {
        4 * self.word
    }
}

/// Walker for `embedded_alloc::TlsfHeap`.
#[derive(Debug, Clone)]
pub struct TlsfWalker {
    static_name: String,
    addr: u64,
    layout: TlsfLayout,
    entry_points: &'static [EntryPoint],
}

impl TlsfWalker {
    /// Finds the heap static by its type and reads its layout.
    pub fn from_symbols(symbols: &Symbols) -> Result<Self, HeapError> {
        let (static_name, addr, id) = heap_static(symbols, NAME, TLSF_TYPE)?;
        let layout = TlsfLayout::from_dwarf(symbols, id).ok_or_else(|| {
            HeapError::Config(format!(
                "{NAME}: the DWARF type of `{static_name}` ({TLSF_TYPE}) does not have the \
                 embedded-alloc 0.7 / rlsf 0.2 layout memlife knows (Inner.raw_block, \
                 Tlsf.first_free); embedded-alloc 0.6 keeps no pool address"
            ))
        })?;
        let entry_points = if size_argument(symbols) == 1 {
            ENTRY_POINTS_SIZE_R1
        } else {
            ENTRY_POINTS_SIZE_R2
        };
        Ok(TlsfWalker {
            static_name,
            addr,
            layout,
            entry_points,
        })
    }

    #[cfg(test)]
    pub(crate) fn with_layout(addr: u64, layout: TlsfLayout) -> Self {
        TlsfWalker {
            static_name: "HEAP".into(),
            addr,
            layout,
            entry_points: ENTRY_POINTS_SIZE_R2,
        }
    }

    fn word(&self, img: &MemImage, off: u64) -> u64 {
        img.uint(self.addr + off, self.layout.word).unwrap_or(0)
    }

    /// rlsf's `map_floor`: the list `(fl, sl)` a free block of `size` bytes belongs on.
    fn map_floor(&self, size: u64) -> Option<(u64, u64)> {
        let g_log2 = u64::from(self.layout.granularity().trailing_zeros());
        let sli = u64::from(self.layout.sllen.trailing_zeros());
        if size < self.layout.granularity() {
            return None;
        }
        let log2 = 63 - u64::from(size.leading_zeros());
        let fl = log2 - g_log2;
        // The top `sli + 1` bits of the size, less the leading one; for the smallest classes
        // (log2 < g_log2 + sli) the size is shifted up instead.
        let sl = if log2 >= sli {
            size >> (log2 - sli)
        } else {
            size << (sli - log2)
        };
        (fl < self.layout.fllen).then_some((fl, sl & (self.layout.sllen - 1)))
    }
}

impl HeapWalker for TlsfWalker {
    fn kind(&self) -> AllocatorKind {
        AllocatorKind::RustTlsf
    }

    fn entry_points(&self) -> &'static [EntryPoint] {
        self.entry_points
    }

    fn resolved(&self) -> Vec<ResolvedSymbol> {
        vec![ResolvedSymbol {
            name: self.static_name.clone(),
            address: self.addr,
            size: self.layout.size,
            type_name: TLSF_TYPE.into(),
        }]
    }

    /// The used block's header is the two words before the payload (alignments below the
    /// granularity); for larger alignments the word before the payload points to it.
    fn header_range(&self, ptr: u64) -> Option<HeaderRange> {
        let w = self.layout.word;
        Some(HeaderRange {
            addr: ptr.checked_sub(2 * w)?,
            len: usize::try_from(2 * w).ok()?,
        })
    }

    fn block_of(&self, mem: &mut dyn Memory, ptr: u64) -> Result<Option<BlockRef>, HeapError> {
        let w = self.layout.word;
        let g = self.layout.granularity();
        let Some(hdr) = ptr.checked_sub(2 * w) else {
            return Ok(None);
        };
        let read = |mem: &mut dyn Memory, a: u64| -> Result<u64, HeapError> {
            let b = mem.read_vec(a, w as usize)?;
            let mut v = [0u8; 8];
            v[..b.len()].copy_from_slice(&b);
            Ok(u64::from_le_bytes(v))
        };
        // rlsf's own rule for a pointer of unknown alignment: the word before the payload is
        // either the header's `prev_phys_block` (pointing to a block that ends at or before
        // the header) or a pad's pointer back to the header (pointing below the payload).
        let before = read(mem, ptr - w)?;
        let hdr = if before == 0 {
            hdr
        } else {
            let prev_size = read(mem, before)? & !(g - 1);
            if ptr > before.saturating_add(prev_size) {
                hdr
            } else {
                before
            }
        };
        let raw = read(mem, hdr)?;
        let size = raw & !(g - 1);
        Ok(
            (raw & SIZE_USED != 0 && raw & SIZE_SENTINEL == 0 && size >= g && hdr % g == 0)
                .then_some(BlockRef { addr: hdr, size }),
        )
    }

    fn walk(&self, mem: &mut dyn Memory, ctx: WalkContext) -> Result<HeapState, HeapError> {
        let l = &self.layout;
        let (w, g) = (l.word, l.granularity());
        let gimg = MemImage::read(mem, &[(self.addr, l.size)])?;
        let mut st = HeapState::empty(NAME);
        let borrow = self.word(&gimg, l.borrow);
        let busy = (borrow != 0).then(|| {
            format!(
                "the heap's RefCell is borrowed (flag {borrow:#x}): inside alloc, dealloc or free"
            )
        });
        let initialized = gimg.uint(self.addr + l.initialized, 1).unwrap_or(0) != 0;
        let raw = self.word(&gimg, l.raw_block);
        let raw_size = self.word(&gimg, l.raw_block_size);
        st.counters.push(("raw_block_size".into(), raw_size));
        if !initialized || raw == 0 {
            st.status = HeapStatus::Uninitialised;
            st.firmware_view = Some(view(0, 0));
            st.finish(ctx, busy);
            return Ok(st);
        }
        // rlsf's rounding of the pool it was given.
        let start = align_up(raw, g);
        let len = raw_size
            .checked_sub(start - raw)
            .map_or(0, |x| align_down(x, g));
        st.heap_start = start;
        if len < 2 * g || len > MAX_POOL {
            st.anomaly(
                AnomalyKind::OutOfRange,
                Some(raw),
                format!("the pool {raw:#010x} + {raw_size} B holds no rlsf block (or is over {MAX_POOL} B)"),
            );
            st.finish(ctx, busy);
            return Ok(st);
        }
        let end = start + len;
        let (img, mut read) = MemImage::for_walk(mem, &[(start, len)], &ctx.read)?;
        let free = self.walk_blocks(&img, &mut st, start, end);
        self.check_lists(&gimg, &img, &mut st, start, end, &free);

        let free_total: u64 = free.values().sum();
        st.total_free = free_total;
        st.largest_free = free.values().copied().max().unwrap_or(0);
        st.free_blocks = free.len() as u64;
        // Capacity: the blocks between the start and the sentinel(s).
        st.heap_size = st
            .blocks
            .iter()
            .map(|b| b.size)
            .sum::<u64>()
            .max(free_total);
        // embedded-alloc's `free()`: each free block's largest payload, its size less a used
        // block's header (two words).
        let fw_free: u64 = free.values().map(|s| s.saturating_sub(2 * w)).sum();
        st.firmware_view = Some(view(raw_size.saturating_sub(fw_free), fw_free));
        img.finish(&mut read)?;
        st.read = read;
        st.finish(ctx, busy);
        Ok(st)
    }
}

impl TlsfWalker {
    /// The physical walk from `start` to the sentinel; returns the free blocks (address →
    /// size).
    fn walk_blocks(
        &self,
        img: &MemImage,
        st: &mut HeapState,
        start: u64,
        end: u64,
    ) -> BTreeMap<u64, u64> {
        let (w, g) = (self.layout.word, self.layout.granularity());
        let mut free = BTreeMap::new();
        let bound = (end - start) / g + 2;
        let (mut b, mut prev, mut prev_free) = (start, 0u64, false);
        for _ in 0..bound {
            let raw = img.uint(b, w).unwrap_or(0);
            let prev_phys = img.uint(b + w, w).unwrap_or(0);
            if prev_phys != prev {
                st.anomaly(
                    AnomalyKind::BadHeader,
                    Some(b),
                    format!("the block at {b:#010x} says its physical predecessor is {prev_phys:#010x}, not {prev:#010x}"),
                );
            }
            let size = raw & !(g - 1);
            if raw & SIZE_SENTINEL != 0 {
                if raw != g | SIZE_USED | SIZE_SENTINEL {
                    st.anomaly(
                        AnomalyKind::BadHeader,
                        Some(b),
                        format!("the sentinel at {b:#010x} reads {raw:#x}"),
                    );
                }
                // A pool longer than rlsf's largest block is cut into chunks, each with its
                // own sentinel; the last one ends the pool.
                if b + g >= end {
                    return free;
                }
                b += g;
                prev = 0;
                prev_free = false;
                continue;
            }
            if size < g || raw & (g - 1) & !SIZE_USED != 0 || size > end - b - g {
                st.anomaly(
                    AnomalyKind::SizeOverflow,
                    Some(b),
                    format!("the block at {b:#010x} has size word {raw:#x}, running past the sentinel before {end:#010x}"),
                );
                return free;
            }
            let is_free = raw & SIZE_USED == 0;
            if is_free && prev_free {
                st.anomaly(
                    AnomalyKind::NotCoalesced,
                    Some(prev),
                    format!("the free blocks at {prev:#010x} and {b:#010x} are adjacent"),
                );
            }
            if is_free {
                free.insert(b, size);
            }
            st.blocks.push(Block {
                addr: b,
                size,
                free: is_free,
                unclaimed: false,
                alloc_size: None,
            });
            prev = b;
            prev_free = is_free;
            b += size;
        }
        st.anomaly(
            AnomalyKind::TooManyBlocks,
            Some(b),
            "the physical walk found no sentinel within its bound".into(),
        );
        free
    }

    /// The free lists against the walk, and the bitmaps against the lists.
    fn check_lists(
        &self,
        gimg: &MemImage,
        img: &MemImage,
        st: &mut HeapState,
        start: u64,
        end: u64,
        free: &BTreeMap<u64, u64>,
    ) {
        let l = &self.layout;
        let w = l.word;
        let fl_bitmap = self.word(gimg, l.fl_bitmap);
        let mut listed = 0u64;
        let bound = (end - start) / l.granularity() + 2;
        for fl in 0..l.fllen {
            let sl_bitmap = self.word(gimg, l.sl_bitmap + fl * w);
            let mut nonempty = 0u64;
            for sl in 0..l.sllen {
                let head = self.word(gimg, l.first_free + (fl * l.sllen + sl) * w);
                if head != 0 {
                    nonempty |= 1 << sl;
                }
                let (mut p, mut back) = (head, 0u64);
                let mut steps = 0;
                while p != 0 {
                    steps += 1;
                    if steps > bound {
                        st.anomaly(
                            AnomalyKind::Cycle,
                            Some(p),
                            format!("free list [{fl}][{sl}] does not end within its bound"),
                        );
                        break;
                    }
                    let Some(&size) = free.get(&p) else {
                        st.anomaly(
                            AnomalyKind::ListMismatch,
                            Some(p),
                            format!("free list [{fl}][{sl}] holds {p:#010x}, which is not a free block of the physical walk"),
                        );
                        break;
                    };
                    if self.map_floor(size) != Some((fl, sl)) {
                        st.anomaly(
                            AnomalyKind::ListMismatch,
                            Some(p),
                            format!("the free block at {p:#010x} ({size} B) is on list [{fl}][{sl}], not its size class"),
                        );
                    }
                    let prev_free = img.uint(p + 3 * w, w).unwrap_or(0);
                    if prev_free != back {
                        st.anomaly(
                            AnomalyKind::ListMismatch,
                            Some(p),
                            format!("the free block at {p:#010x} links back to {prev_free:#010x}, not {back:#010x}"),
                        );
                    }
                    st.free_list.push(p);
                    listed += 1;
                    back = p;
                    p = img.uint(p + 2 * w, w).unwrap_or(0);
                }
            }
            if nonempty != sl_bitmap {
                st.anomaly(
                    AnomalyKind::BitmapMismatch,
                    None,
                    format!("sl_bitmap[{fl}] is {sl_bitmap:#x} but the non-empty lists give {nonempty:#x}"),
                );
            }
            if ((fl_bitmap >> fl) & 1 == 1) != (nonempty != 0) {
                st.anomaly(
                    AnomalyKind::BitmapMismatch,
                    None,
                    format!("fl_bitmap bit {fl} disagrees with the lists of first level {fl}"),
                );
            }
        }
        if listed != free.len() as u64 {
            st.anomaly(
                AnomalyKind::ListMismatch,
                None,
                format!(
                    "the physical walk has {} free blocks, the free lists {listed}",
                    free.len()
                ),
            );
        }
    }
}

fn view(used: u64, free: u64) -> FirmwareView {
    FirmwareView::EmbeddedAlloc(EmbeddedAllocView { used, free })
}
