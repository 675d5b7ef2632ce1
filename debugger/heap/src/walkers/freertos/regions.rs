//! Where the arena is: heap_4's one `ucHeap` array or heap_5's regions, and each region's first
//! block and end marker as the allocator computes them when it initialises.

use memlife_core::Memory;
use memlife_dwarf::Symbols;

use crate::state::{AnomalyKind, HeapState};
use crate::walkers::{align_down, align_up};
use crate::{AllocatorKind, HeapError};

/// heap_4/5 align to 8 on every Cortex-M and Xtensa port.
pub(super) const ALIGN: u64 = 8;

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

impl Variant {
    /// The address ranges that hold blocks, as `(start, len)`, for the bulk read.
    pub(super) fn arena_ranges(&self) -> Vec<(u64, u64)> {
        match self {
            Variant::Heap4 { uc_heap, size } => vec![(*uc_heap, *size)],
            Variant::Heap5 { regions } => regions.clone(),
        }
    }

    /// Each region as `[first block, end marker)`, computed as the allocator does at init. For
    /// heap_4 a non-zero `px_end` (the heap is initialised) is authoritative.
    pub(super) fn region_bounds(&self, px_end: u64, struct_size: u64) -> Vec<(u64, u64)> {
        match self {
            Variant::Heap4 { uc_heap, size } => {
                let (start, computed) = heap4_bounds(*uc_heap, *size, struct_size);
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
                        align_down(start.saturating_add(len).saturating_sub(struct_size), ALIGN),
                    )
                })
                .collect(),
        }
    }

    /// Records an anomaly when `px_end` is not where the allocator puts the end marker.
    pub(super) fn check_end_marker(
        &self,
        px_end: u64,
        regions: &[(u64, u64)],
        struct_size: u64,
        st: &mut HeapState,
    ) {
        let Some(&(_, last_end)) = regions.last() else {
            return;
        };
        match self {
            Variant::Heap4 { uc_heap, size } => {
                let (_, computed) = heap4_bounds(*uc_heap, *size, struct_size);
                if px_end != computed {
                    st.anomaly(
                        AnomalyKind::OutOfRange,
                        Some(px_end),
                        format!("pxEnd is {px_end:#010x}, expected {computed:#010x} from ucHeap"),
                    );
                }
            }
            Variant::Heap5 { .. } => {
                if px_end != last_end {
                    st.anomaly(
                        AnomalyKind::OutOfRange,
                        Some(px_end),
                        format!("pxEnd is {px_end:#010x}, expected the last region's marker {last_end:#010x}"),
                    );
                }
            }
        }
    }
}

/// heap_4's first block (`ucHeap` aligned up) and end marker (the last `struct_size` bytes of
/// the array, aligned down).
fn heap4_bounds(uc_heap: u64, size: u64, struct_size: u64) -> (u64, u64) {
    let start = align_up(uc_heap, ALIGN);
    let total = size.saturating_sub(start - uc_heap);
    let end = align_down(
        start.saturating_add(total).saturating_sub(struct_size),
        ALIGN,
    );
    (start, end)
}

/// The `HeapRegion_t[]` an application passed to `vPortDefineHeapRegions`, read from RAM/flash.
pub(super) fn find_region_table(
    symbols: &Symbols,
    mem: Option<&mut dyn Memory>,
) -> Result<Vec<(u64, u64)>, HeapError> {
    let missing = || HeapError::MissingSymbol {
        allocator: AllocatorKind::Heap5.name(),
        symbol: "a HeapRegion_t[] variable".into(),
        hint: " (heap_5 keeps no region list; pass --heap-region START:LEN)".into(),
    };
    let types = symbols.types();
    // The element type is the table's own compile unit's `HeapRegion_t`: compare names, not
    // type ids (heap_5.c has its own copy of the type).
    let is_region = |t| types.is_named(t, "HeapRegion_t") || types.is_named(t, "xHEAP_REGION");
    let (table, region_ty) = symbols
        .variables()
        .iter()
        .filter(|v| v.address.is_some())
        .find_map(|v| match types.resolve(v.type_id?) {
            Some((
                _,
                memlife_dwarf::Type::Array {
                    element: Some(e), ..
                },
            )) if is_region(*e) => Some((v, types.resolve(*e)?.0)),
            _ => None,
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

/// The largest heap_5 region accepted (a microcontroller's RAM is well below it); a larger one
/// is a garbage `HeapRegion_t` and would ask the target for gigabytes.
pub(super) const MAX_REGION: u64 = 16 << 20;
/// The most regions accepted.
pub(super) const MAX_REGIONS: usize = 64;

/// Refuses regions whose sizes could not be a microcontroller's: longer than [`MAX_REGION`],
/// past the 32-bit address space, or more than [`MAX_REGIONS`] of them.
pub(super) fn check_regions(regions: &[(u64, u64)]) -> Result<(), HeapError> {
    if regions.len() > MAX_REGIONS {
        return Err(HeapError::Config(format!(
            "freertos-heap5: {} regions (at most {MAX_REGIONS}); the region table looks damaged",
            regions.len()
        )));
    }
    for &(start, len) in regions {
        let end = start.checked_add(len).filter(|&e| e <= 1 << 32);
        if len > MAX_REGION || end.is_none() {
            return Err(HeapError::Config(format!(
                "freertos-heap5: region at {start:#010x} of {len} bytes is larger than \
                 {MAX_REGION} bytes or runs past the address space; the region table looks damaged"
            )));
        }
    }
    Ok(())
}
