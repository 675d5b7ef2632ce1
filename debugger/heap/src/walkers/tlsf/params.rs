//! The TLSF parameters of one heap ([`Params`]): read from its control structure and checked
//! against what `control_construct` computes for the heap's size, or, without a `control_t`
//! type in DWARF, recognised in memory (the layout whose pool walk ends on the sentinel).

use super::layout::{BlockLayout, ControlLayout};
use super::spec::{BLOCK_SIZE_MIN, POOL_OVERHEAD, PoolSpec};
use crate::image::MemImage;
use crate::state::{AnomalyKind, HeapState};

/// TLSF parameters of one heap, as its control structure holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// First-level lists.
    pub fl_count: u64,
    /// Second-level lists per first level.
    pub sl_count: u64,
    /// log2 of `sl_count`.
    pub sl_log2: u64,
    /// `fl_index_shift`.
    pub fl_shift: u64,
    /// Sizes below this all map to first level 0.
    pub small_block_size: u64,
    /// `tlsf_size()`: bytes of control structure before the pool.
    pub tlsf_size: u64,
    /// Address of `fl_bitmap`.
    pub fl_bitmap: u64,
    /// Address of `sl_bitmap[0]`.
    pub sl_bitmap: u64,
    /// Address of the first list head (`blocks[0][0]`).
    pub blocks: u64,
}

impl Params {
    /// What `control_construct` computes for a heap of `bytes` (the dynamic generation), with the
    /// arrays right behind a `struct_size`-byte `control_t` at `control`.
    pub fn constructed(control: u64, bytes: u64, struct_size: u64) -> Params {
        let fl_max = 64 - u64::from(bytes.leading_zeros());
        let sl_log2 = if bytes <= 16 * 1024 {
            3
        } else if bytes <= 256 * 1024 {
            4
        } else {
            5
        };
        let fl_shift = sl_log2 + 2;
        let sl_count = 1 << sl_log2;
        let fl_count = (fl_max + 1).saturating_sub(fl_shift).max(1);
        let sl_bitmap = control + struct_size;
        Params {
            fl_count,
            sl_count,
            sl_log2,
            fl_shift,
            small_block_size: 1 << fl_shift,
            tlsf_size: struct_size + 4 * fl_count + 4 * fl_count * sl_count,
            fl_bitmap: control + 24,
            sl_bitmap,
            blocks: sl_bitmap + 4 * fl_count,
        }
    }

    /// The fixed generation: counts from the build, arrays inside the struct; `None` for a
    /// layout of the other generation.
    fn fixed(control: u64, layout: &ControlLayout) -> Option<Params> {
        let ControlLayout::Fixed {
            fl_bitmap,
            sl_bitmap,
            blocks,
            fl_count,
            sl_count,
            struct_size,
        } = *layout
        else {
            return None;
        };
        // The counts and offsets come from the ELF's DWARF: a count TLSF cannot have is no
        // fixed layout (it would shift past 64 bits below), and offsets saturate (an address
        // at the top of the address space is then simply not in the memory read).
        if !(1..=32).contains(&sl_count) || !sl_count.is_power_of_two() {
            return None;
        }
        let sl_log2 = u64::from(sl_count.trailing_zeros());
        // ALIGN_SIZE_LOG2 is 2 on every 32-bit ESP chip.
        let fl_shift = sl_log2 + 2;
        Some(Params {
            fl_count,
            sl_count,
            sl_log2,
            fl_shift,
            small_block_size: 1 << fl_shift,
            tlsf_size: struct_size,
            fl_bitmap: control.saturating_add(fl_bitmap),
            sl_bitmap: control.saturating_add(sl_bitmap),
            blocks: control.saturating_add(blocks),
        })
    }

    /// `mapping_insert`: the (first, second) level list a free block of `size` belongs to.
    pub fn mapping(&self, size: u64) -> (u64, u64) {
        if size < self.small_block_size {
            let step = (self.small_block_size / self.sl_count.max(1)).max(1);
            return (0, size / step);
        }
        // size 0 gets here only with a zero small_block_size, which no Params has (every
        // constructor sets it to 1 << fl_shift); checked all the same. sl_log2 <= 5 likewise.
        let Some(fl) = 63u64.checked_sub(u64::from(size.leading_zeros())) else {
            return (0, 0);
        };
        let sl = (size >> fl.saturating_sub(self.sl_log2)) ^ (1 << self.sl_log2);
        (fl.saturating_sub(self.fl_shift.saturating_sub(1)), sl)
    }

    /// `tlsf_fit_size`: the largest request guaranteed to fit a free block of payload `size`
    /// (TLSF is good-fit: a request is rounded up to the next size class before the search, so
    /// only sizes one class lower are sure to be found). 32-bit arithmetic, as on the chip.
    pub fn fit_size(&self, size: u64) -> u64 {
        let Ok(size) = u32::try_from(size) else {
            return 0;
        };
        if size == 0 {
            return 0;
        }
        let pow = 1u32 << (31 - size.leading_zeros());
        let interval = pow / u32::try_from(self.sl_count.max(1)).unwrap_or(u32::MAX);
        u64::from(size & !interval.wrapping_sub(1))
    }
}

/// The heap's TLSF parameters: from the control structure, validated against what
/// `control_construct` would have computed; a damaged structure is an anomaly and the computed
/// parameters are used instead.
pub(super) fn params_of(
    img: &MemImage,
    spec: &PoolSpec<'_>,
    control: u64,
    pool_size: u64,
    st: &mut HeapState,
) -> Option<Params> {
    let word = |a: u64| img.u32(a).map(u64::from);
    match spec.control {
        ControlLayout::Fixed { .. } => Params::fixed(control, spec.control),
        ControlLayout::Dynamic {
            bits,
            size,
            fl_bitmap,
            sl_bitmap,
            blocks,
            struct_size,
        } => {
            let Some(bytes) = img.bytes(control, *struct_size) else {
                st.anomaly(
                    AnomalyKind::OutOfRange,
                    Some(control),
                    format!("control_t at {control:#010x} is outside the memory read"),
                );
                return None;
            };
            let get = |f: &super::layout::BitField| f.get(&bytes).unwrap_or(0);
            let read = Params {
                fl_count: get(&bits.fl_index_count),
                sl_count: get(&bits.sl_index_count),
                sl_log2: get(&bits.sl_index_count_log2),
                fl_shift: get(&bits.fl_index_shift),
                small_block_size: get(&bits.small_block_size),
                tlsf_size: word(control + size).unwrap_or(0),
                fl_bitmap: control + fl_bitmap,
                sl_bitmap: word(control + sl_bitmap).unwrap_or(0),
                blocks: word(control + blocks).unwrap_or(0),
            };
            let fl_max = get(&bits.fl_index_max);
            let expected = Params::constructed(control, pool_size, *struct_size);
            let consistent = read.sl_log2 <= 5
                && read.sl_count == 1 << read.sl_log2
                && read.fl_shift == read.sl_log2 + 2
                && read.small_block_size == 1 << read.fl_shift
                && read.fl_count >= 1
                && read.fl_count <= 32
                && fl_max.checked_add(1) == Some(read.fl_count + read.fl_shift)
                && read.tlsf_size
                    == struct_size + 4 * read.fl_count + 4 * read.fl_count * read.sl_count
                && read.sl_bitmap == control + struct_size
                && read.blocks == read.sl_bitmap + 4 * read.fl_count;
            if consistent {
                Some(read)
            } else {
                st.anomaly(
                    AnomalyKind::BadHeader,
                    Some(control),
                    format!(
                        "control_t at {control:#010x} is inconsistent (fl_index_count {}, sl_index_count {}, size {}, sl_bitmap {:#010x}, blocks {:#010x}); using the layout a {pool_size}-byte heap gets",
                        read.fl_count, read.sl_count, read.tlsf_size, read.sl_bitmap, read.blocks
                    ),
                );
                Some(expected)
            }
        }
        ControlLayout::Unknown => {
            // Dynamic when sl_bitmap points right behind the 36-byte struct.
            if word(control + 28) == Some(control + 36) {
                let dynamic = ControlLayout::dynamic_default();
                let spec = PoolSpec {
                    control: &dynamic,
                    ..*spec
                };
                return params_of(img, &spec, control, pool_size, st);
            }
            // Fixed: the FL_INDEX_COUNT whose pool walk ends exactly on the sentinel.
            (1..=25).find_map(|fl| {
                let p = Params::fixed(control, &ControlLayout::fixed_default(fl))?;
                tiles(img, spec.block, control + p.tlsf_size, pool_size.checked_sub(p.tlsf_size)?)
                    .then_some(p)
            })
            .or_else(|| {
                st.anomaly(
                    AnomalyKind::BadHeader,
                    Some(control),
                    format!("no control_t type in DWARF and no TLSF layout fits the heap at {control:#010x}"),
                );
                None
            })
        }
    }
}

/// Whether the blocks from `pool - 4` end exactly on the pool's sentinel.
fn tiles(img: &MemImage, bl: &BlockLayout, pool: u64, pool_len: u64) -> bool {
    let sentinel = pool + (pool_len.saturating_sub(POOL_OVERHEAD) & !3);
    let Some(mut b) = pool.checked_sub(4) else {
        return false;
    };
    for _ in 0..pool_len / (BLOCK_SIZE_MIN + 4) + 2 {
        let Some(raw) = img.u32(b + bl.size) else {
            return false;
        };
        let size = u64::from(raw & !3);
        if size == 0 {
            return b == sentinel;
        }
        b += 4 + size;
        if b > sentinel {
            return false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed_layout(sl_count: u64, offset: u64) -> ControlLayout {
        ControlLayout::Fixed {
            fl_bitmap: offset,
            sl_bitmap: offset,
            blocks: offset,
            fl_count: 24,
            sl_count,
            struct_size: 3124,
        }
    }

    /// Counts and offsets from a damaged ELF's DWARF: an `sl_count` of 2^62 shifted past 64 bits
    /// (`1 << fl_shift`) and offsets near 2^64 overflowed `control + offset`.
    #[test]
    fn fixed_layout_from_garbage_dwarf_is_refused_or_saturates() {
        assert!(Params::fixed(0x3fc8_0000, &fixed_layout(1 << 62, 16)).is_none());
        assert!(Params::fixed(0x3fc8_0000, &fixed_layout(0, 16)).is_none());
        assert!(Params::fixed(0x3fc8_0000, &fixed_layout(24, 16)).is_none());
        let p = Params::fixed(0x3fc8_0000, &fixed_layout(32, u64::MAX)).unwrap();
        assert_eq!((p.fl_bitmap, p.small_block_size), (u64::MAX, 128));
    }

    #[test]
    fn mapping_of_zero_with_no_small_blocks_does_not_underflow() {
        let mut p = Params::constructed(0x3fc8_0000, 64 * 1024, 36);
        p.small_block_size = 0;
        assert_eq!(p.mapping(0), (0, 0));
    }

    /// A pool at address 0 (heap_data 0 in a region starting at 0, a zero tlsf_size from
    /// DWARF): its first header would sit at `0 - 4`, which underflowed.
    #[test]
    fn a_pool_at_address_zero_does_not_tile() {
        let img = MemImage::from_spans(vec![(0, vec![0; 256])]);
        assert!(!tiles(&img, &BlockLayout::default(), 0, 256));
    }
}
