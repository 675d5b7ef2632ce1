//! `embedded_alloc::LlffHeap`: linked_list_allocator 0.10's hole list
//! (docs/allocators/embedded-alloc.md, "LlffHeap").
//!
//! The arena is `[holes.bottom, holes.top)`. Free memory is a list of holes `{size, next}`
//! written at each hole's start, sorted by address, behind a dummy head (`holes.first`, size 0)
//! inside the static. Allocations carry no header, so the walk cannot split used memory into
//! blocks: what lies between two holes is reported as one used *span* (`Block { free: false }`),
//! and an allocation's size comes only from the trace (its request, rounded as the allocator
//! rounds it: [`HeapWalker::block_from_request`]).

use memlife_core::Memory;
use memlife_dwarf::Symbols;

use super::{LLFF_TYPE, heap_static, layout};
use crate::firmware_view::{EmbeddedAllocView, FirmwareView};
use crate::image::MemImage;
use crate::state::{AnomalyKind, Block, HeapState, HeapStatus};
use crate::{
    AllocatorKind, BlockRef, EntryPoint, HeaderRange, HeapError, HeapWalker, ResolvedSymbol,
    WalkContext,
};

const NAME: &str = AllocatorKind::RustLlff.name();
/// Never read more than this as one arena (a wild `top` must not make us read gigabytes).
const MAX_ARENA: u64 = 16 << 20;

/// The allocator's API as it survives in a release build: `__rust_alloc` and friends are
/// inlined into their callers, while `GlobalAlloc::alloc/dealloc` of `LlffHeap` stay real
/// functions (they are not generic, so they are compiled once in embedded-alloc's crate and
/// called). `alloc(&self, layout)` passes `Layout` as two words after `self`: the size is the
/// second or third argument, as DWARF orders `Layout`'s fields ([`size_argument`]).
const ENTRY_POINTS_SIZE_R1: &[EntryPoint] = &entry_points(1);
const ENTRY_POINTS_SIZE_R2: &[EntryPoint] = &entry_points(2);

const fn entry_points(size_arg: u8) -> [EntryPoint; 12] {
    [
        EntryPoint::malloc(
            "<embedded_alloc::llff::Heap as core::alloc::global::GlobalAlloc>::alloc",
            size_arg,
        ),
        EntryPoint::other_alloc("__rust_alloc"),
        EntryPoint::other_alloc("__rust_alloc_zeroed"),
        EntryPoint::other_alloc("__rust_realloc"),
        EntryPoint::other_alloc("embedded_alloc::llff::Heap::alloc"),
        EntryPoint::other_alloc("linked_list_allocator::Heap::allocate_first_fit"),
        EntryPoint::other_alloc("linked_list_allocator::hole::HoleList::allocate_first_fit"),
        EntryPoint::free(
            "<embedded_alloc::llff::Heap as core::alloc::global::GlobalAlloc>::dealloc",
            1,
        ),
        EntryPoint::other_free("__rust_dealloc"),
        EntryPoint::other_free("embedded_alloc::llff::Heap::dealloc"),
        EntryPoint::other_free("linked_list_allocator::Heap::deallocate"),
        EntryPoint::other_free("linked_list_allocator::hole::HoleList::deallocate"),
    ]
}

/// The argument register that holds `Layout::size` in `GlobalAlloc::alloc(&self, layout)`:
/// `Layout` travels as its two words in memory order after `self`.
pub(crate) fn size_argument(symbols: &Symbols) -> u8 {
    let types = symbols.types();
    types
        .find_qualified("core::alloc::layout::Layout")
        .and_then(|t| types.member(t, "size"))
        .map_or(2, |m| if m.offset == 0 { 1 } else { 2 })
}

/// Where everything the walk reads sits, relative to the static.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LlffLayout {
    /// Size of the static.
    pub size: u64,
    /// Pointer size (`usize`).
    pub word: u64,
    /// `RefCell::borrow` (non-zero while alloc/dealloc/used/free run).
    pub borrow: u64,
    /// The `bool` of the `(Heap, bool)` tuple (0.7: set by `init`), when there is one.
    pub initialized: Option<u64>,
    /// `linked_list_allocator::Heap::used`.
    pub used: u64,
    /// `holes.first.size` (the dummy head: 0).
    pub first_size: u64,
    /// `holes.first.next`.
    pub first_next: u64,
    /// `holes.bottom`.
    pub bottom: u64,
    /// `holes.top`.
    pub top: u64,
}

impl LlffLayout {
    /// Reads the layout of the `embedded_alloc::llff::Heap` type `id` from DWARF.
    pub(crate) fn from_dwarf(symbols: &Symbols, id: memlife_dwarf::TypeId) -> Option<Self> {
        let types = symbols.types();
        let size = types.size_of(id)?;
        let (cell, cell_t) = layout::find(types, id, &["borrow", "value"])?;
        let (b_off, b_t) = layout::member(types, cell_t, "borrow")?;
        let borrow = cell + b_off + layout::scalar(types, b_t?)?;
        let (ll, ll_t) = layout::find(types, cell_t, &["used", "holes"])?;
        let ll = cell + ll;
        // The tuple `(Heap, bool)`: the bool is its `__1`.
        let initialized = layout::find(types, cell_t, &["__0", "__1"]).and_then(|(t, tt)| {
            let (o, _) = layout::member(types, tt, "__1")?;
            Some(cell + t + o)
        });
        let (used, used_t) = layout::member(types, ll_t, "used")?;
        let word = types.size_of(used_t?)?;
        if !matches!(word, 2 | 4 | 8) {
            return None;
        }
        let (holes, holes_t) = layout::member(types, ll_t, "holes")?;
        let holes_t = holes_t?;
        let (first, first_t) = layout::member(types, holes_t, "first")?;
        let first_t = first_t?;
        let (fsize, _) = layout::member(types, first_t, "size")?;
        let (fnext, fnext_t) = layout::member(types, first_t, "next")?;
        let fnext = fnext + layout::scalar(types, fnext_t?).unwrap_or(0);
        let (bottom, _) = layout::member(types, holes_t, "bottom")?;
        let (top, _) = layout::member(types, holes_t, "top")?;
        Some(LlffLayout {
            size,
            word,
            borrow,
            initialized,
            used: ll + used,
            first_size: ll + holes + first + fsize,
            first_next: ll + holes + first + fnext,
            bottom: ll + holes + bottom,
            top: ll + holes + top,
        })
    }
}

/// Walker for `embedded_alloc::LlffHeap`.
#[derive(Debug, Clone)]
pub struct LlffWalker {
    static_name: String,
    addr: u64,
    layout: LlffLayout,
    entry_points: &'static [EntryPoint],
}

impl LlffWalker {
    /// Finds the heap static by its type and reads its layout.
    pub fn from_symbols(symbols: &Symbols) -> Result<Self, HeapError> {
        let (static_name, addr, id) = heap_static(symbols, NAME, LLFF_TYPE)?;
        let layout = LlffLayout::from_dwarf(symbols, id).ok_or_else(|| {
            HeapError::Config(format!(
                "{NAME}: the DWARF type of `{static_name}` ({LLFF_TYPE}) does not have the \
                 linked_list_allocator 0.10 layout memlife knows (holes.first/bottom/top, used)"
            ))
        })?;
        let entry_points = if size_argument(symbols) == 1 {
            ENTRY_POINTS_SIZE_R1
        } else {
            ENTRY_POINTS_SIZE_R2
        };
        Ok(LlffWalker {
            static_name,
            addr,
            layout,
            entry_points,
        })
    }

    #[cfg(test)]
    pub(crate) fn with_layout(addr: u64, layout: LlffLayout) -> Self {
        LlffWalker {
            static_name: "HEAP".into(),
            addr,
            layout,
            entry_points: ENTRY_POINTS_SIZE_R2,
        }
    }

    fn word(&self, img: &MemImage, off: u64) -> u64 {
        img.uint(self.addr + off, self.layout.word).unwrap_or(0)
    }
}

impl HeapWalker for LlffWalker {
    fn kind(&self) -> AllocatorKind {
        AllocatorKind::RustLlff
    }

    fn entry_points(&self) -> &'static [EntryPoint] {
        self.entry_points
    }

    fn resolved(&self) -> Vec<ResolvedSymbol> {
        vec![ResolvedSymbol {
            name: self.static_name.clone(),
            address: self.addr,
            size: self.layout.size,
            type_name: LLFF_TYPE.into(),
        }]
    }

    /// No header: nothing in front of a user pointer tells its size.
    fn header_range(&self, _ptr: u64) -> Option<HeaderRange> {
        None
    }

    fn block_of(&self, _mem: &mut dyn Memory, _ptr: u64) -> Result<Option<BlockRef>, HeapError> {
        Ok(None)
    }

    /// linked_list_allocator takes `max(size, size_of::<Hole>())` rounded up to
    /// `align_of::<Hole>()` (two words, one word) for every allocation.
    fn block_from_request(&self, ptr: u64, request: u64) -> Option<BlockRef> {
        let w = self.layout.word;
        let size = super::super::align_up(request.max(2 * w), w);
        Some(BlockRef { addr: ptr, size })
    }

    fn walk(&self, mem: &mut dyn Memory, ctx: WalkContext) -> Result<HeapState, HeapError> {
        let l = &self.layout;
        let g = MemImage::read(mem, &[(self.addr, l.size)])?;
        let mut st = HeapState::empty(NAME);
        let borrow = self.word(&g, l.borrow);
        let busy = (borrow != 0).then(|| {
            format!("the heap's RefCell is borrowed (flag {borrow:#x}): inside alloc, dealloc, used or free")
        });
        let initialized = l
            .initialized
            .map(|o| g.uint(self.addr + o, 1).unwrap_or(0) != 0);
        let (bottom, top, used) = (
            self.word(&g, l.bottom),
            self.word(&g, l.top),
            self.word(&g, l.used),
        );
        st.heap_start = bottom;
        st.counters.push(("used".into(), used));
        if initialized == Some(false) || (bottom == 0 && top == 0) {
            st.status = HeapStatus::Uninitialised;
            st.firmware_view = Some(view(0, 0));
            st.finish(ctx, busy);
            return Ok(st);
        }
        if top < bottom || top - bottom > MAX_ARENA {
            st.anomaly(
                AnomalyKind::OutOfRange,
                Some(top),
                format!("holes.top {top:#010x} does not follow holes.bottom {bottom:#010x} within {MAX_ARENA} bytes"),
            );
            st.finish(ctx, busy);
            return Ok(st);
        }
        let size = top - bottom;
        st.heap_size = size;
        st.counters
            .push(("free() = size - used".into(), size.saturating_sub(used)));
        st.firmware_view = Some(view(used, size.saturating_sub(used)));
        let first_size = self.word(&g, l.first_size);
        if first_size != 0 {
            st.anomaly(
                AnomalyKind::BadHeader,
                Some(self.addr + l.first_size),
                format!("the hole list's dummy head has size {first_size}, not 0"),
            );
        }
        let (img, mut read) = MemImage::for_walk(mem, &[(bottom, size)], &ctx.read)?;
        self.walk_holes(&img, &mut st, bottom, top, self.word(&g, l.first_next));

        let free: u64 = st.blocks.iter().filter(|b| b.free).map(|b| b.size).sum();
        st.total_free = free;
        st.largest_free = st
            .blocks
            .iter()
            .filter(|b| b.free)
            .map(|b| b.size)
            .max()
            .unwrap_or(0);
        st.free_blocks = st.free_list.len() as u64;
        // The holes and the `used` counter must agree; linked_list_allocator may fold a sliver
        // smaller than a hole at the top into the last hole without counting it, hence the
        // tolerance of one hole size.
        let counted = size.saturating_sub(used);
        if used > size || free.abs_diff(counted) >= 2 * l.word {
            st.anomaly(
                AnomalyKind::CounterMismatch,
                None,
                format!("the holes hold {free} B but size - used = {size} - {used} = {counted} B"),
            );
        }
        img.finish(&mut read)?;
        st.read = read;
        st.finish(ctx, busy);
        Ok(st)
    }
}

impl LlffWalker {
    /// Follows the hole list from `next`, recording holes and the used spans between them.
    fn walk_holes(&self, img: &MemImage, st: &mut HeapState, bottom: u64, top: u64, first: u64) {
        let w = self.layout.word;
        let min_hole = 2 * w;
        let bound = (top - bottom) / min_hole + 2;
        let (mut p, mut prev_end, mut prev_hole) = (first, bottom, None::<u64>);
        let mut steps = 0;
        let mut broken = true;
        loop {
            if p == 0 {
                broken = false;
                break;
            }
            steps += 1;
            if steps > bound {
                st.anomaly(
                    AnomalyKind::Cycle,
                    Some(p),
                    "the hole list does not end within its bound".into(),
                );
                break;
            }
            if p < bottom || p >= top || p % w != 0 {
                st.anomaly(
                    AnomalyKind::OutOfRange,
                    Some(p),
                    format!("the hole list points to {p:#010x}, outside the arena {bottom:#010x}..{top:#010x} or misaligned"),
                );
                break;
            }
            if p < prev_end {
                st.anomaly(
                    AnomalyKind::Cycle,
                    Some(p),
                    format!("the hole list goes back to {p:#010x} (the previous hole ends at {prev_end:#010x})"),
                );
                break;
            }
            let size = img.uint(p, w).unwrap_or(0);
            if size < min_hole || !size.is_multiple_of(w) || size > top - p {
                st.anomaly(
                    AnomalyKind::SizeOverflow,
                    Some(p),
                    format!("the hole at {p:#010x} has size {size} (at least {min_hole}, a multiple of {w}, ending by {top:#010x})"),
                );
                break;
            }
            if p > prev_end {
                st.blocks.push(span(prev_end, p - prev_end, false));
            } else if let Some(h) = prev_hole {
                st.anomaly(
                    AnomalyKind::NotCoalesced,
                    Some(h),
                    format!(
                        "the holes at {h:#010x} and {p:#010x} are adjacent (they are always merged)"
                    ),
                );
            }
            st.blocks.push(span(p, size, true));
            st.free_list.push(p);
            prev_end = p + size;
            prev_hole = Some(p);
            p = img.uint(p + w, w).unwrap_or(0);
        }
        // After a damaged hole the rest of the arena is unknown: no span is made up for it.
        if prev_end < top && !broken {
            st.blocks.push(span(prev_end, top - prev_end, false));
        }
    }
}

fn span(addr: u64, size: u64, free: bool) -> Block {
    Block {
        addr,
        size,
        free,
        unclaimed: false,
        alloc_size: None,
    }
}

fn view(used: u64, free: u64) -> FirmwareView {
    FirmwareView::EmbeddedAlloc(EmbeddedAllocView { used, free })
}
