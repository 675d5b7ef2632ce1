//! Struct layouts of the ESP-IDF heap, resolved from DWARF with the documented fallbacks
//! (docs/allocators/esp-idf-tlsf.md).
//!
//! Everything here is resolved once from the ELF; nothing reads target memory. Where a type is
//! missing (ROM TLSF builds compile no `tlsf.c`, stripped builds have no DWARF) the 32-bit layouts
//! of ESP-IDF v5.x are used, and the control structure's variant is decided from memory at walk
//! time (see [`ControlLayout::Unknown`]).

use memlife_dwarf::{Symbols, Type, TypeTable};

/// `struct heap_t_` (one `registered_heaps` entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeapTLayout {
    /// `caps[]`: offset and number of prioritised masks.
    pub caps: (u64, u64),
    /// `start`.
    pub start: u64,
    /// `end` (exclusive).
    pub end: u64,
    /// `heap_mux.owner`: the spinlock's owner word.
    pub mux_owner: u64,
    /// `heap`: the `struct multi_heap_info *`.
    pub heap: u64,
    /// `next.sle_next`.
    pub next: u64,
    /// `sizeof(struct heap_t_)`.
    pub size: u64,
}

impl Default for HeapTLayout {
    /// ESP-IDF v5.x on a 32-bit core without `CONFIG_HEAP_TASK_TRACKING`.
    fn default() -> Self {
        HeapTLayout {
            caps: (0, 3),
            start: 12,
            end: 16,
            mux_owner: 20,
            heap: 28,
            next: 32,
            size: 36,
        }
    }
}

/// `struct multi_heap_info` (the per-heap state at the start of each region).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfoLayout {
    /// `lock`.
    pub lock: u64,
    /// `free_bytes`.
    pub free_bytes: u64,
    /// `minimum_free_bytes`.
    pub minimum_free_bytes: u64,
    /// `pool_size`.
    pub pool_size: u64,
    /// `heap_data` (the TLSF control structure).
    pub heap_data: u64,
    /// `sizeof(struct multi_heap_info)`.
    pub size: u64,
}

impl Default for InfoLayout {
    fn default() -> Self {
        InfoLayout {
            lock: 0,
            free_bytes: 4,
            minimum_free_bytes: 8,
            pool_size: 12,
            heap_data: 16,
            size: 20,
        }
    }
}

/// A bit field: first bit (from the start of the struct) and width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BitField {
    /// Bit position from the start of the struct (little-endian bit numbering).
    pub bit: u64,
    /// Width in bits.
    pub width: u64,
}

impl BitField {
    /// Extracts the field from the struct's bytes.
    pub fn get(&self, bytes: &[u8]) -> Option<u64> {
        let first = usize::try_from(self.bit / 8).ok()?;
        let shift = self.bit % 8;
        let mut v = 0u64;
        for (i, b) in bytes.get(first..)?.iter().take(8).enumerate() {
            v |= u64::from(*b) << (8 * i);
        }
        let mask = if self.width >= 64 {
            u64::MAX
        } else {
            (1u64 << self.width) - 1
        };
        Some((v >> shift) & mask)
    }
}

/// The dynamic control structure's parameter bit fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlBits {
    /// `fl_index_count`.
    pub fl_index_count: BitField,
    /// `fl_index_shift`.
    pub fl_index_shift: BitField,
    /// `fl_index_max`.
    pub fl_index_max: BitField,
    /// `sl_index_count`.
    pub sl_index_count: BitField,
    /// `sl_index_count_log2`.
    pub sl_index_count_log2: BitField,
    /// `small_block_size`.
    pub small_block_size: BitField,
}

impl Default for ControlBits {
    /// GCC's little-endian packing of the six fields into the word at offset 16.
    fn default() -> Self {
        let f = |bit: u64, width: u64| BitField {
            bit: 128 + bit,
            width,
        };
        ControlBits {
            fl_index_count: f(0, 5),
            fl_index_shift: f(5, 3),
            fl_index_max: f(8, 6),
            sl_index_count: f(14, 6),
            sl_index_count_log2: f(20, 3),
            small_block_size: f(23, 8),
        }
    }
}

/// The TLSF `control_t`, in one of its two generations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlLayout {
    /// IDF v4.3.5+/v4.4.4+/v5.0.1+: parameters in bit fields, `size`, pointers to the arrays.
    Dynamic {
        /// The parameter bit fields.
        bits: ControlBits,
        /// `size` (bytes of control_t + sl_bitmap + blocks, i.e. `tlsf_size()`).
        size: u64,
        /// `fl_bitmap`.
        fl_bitmap: u64,
        /// `sl_bitmap` (a pointer).
        sl_bitmap: u64,
        /// `blocks` (a pointer to `fl_index_count * sl_index_count` list heads).
        blocks: u64,
        /// `sizeof(control_t)` (the arrays follow it).
        struct_size: u64,
    },
    /// IDF v4.3–v4.3.4, v4.4–v4.4.3, v5.0: arrays inside the struct, sizes fixed at build time.
    Fixed {
        /// `fl_bitmap`.
        fl_bitmap: u64,
        /// `sl_bitmap[FL_INDEX_COUNT]`.
        sl_bitmap: u64,
        /// `blocks[FL_INDEX_COUNT][SL_INDEX_COUNT]`.
        blocks: u64,
        /// `FL_INDEX_COUNT`.
        fl_count: u64,
        /// `SL_INDEX_COUNT`.
        sl_count: u64,
        /// `sizeof(control_t)`, which is `tlsf_size()`.
        struct_size: u64,
    },
    /// No `control_t` in DWARF: dynamic if the word at offset 28 points right behind the
    /// 36-byte struct (its `sl_bitmap`), else fixed with `SL_INDEX_COUNT` 32 and the
    /// `FL_INDEX_COUNT` whose pool walk ends on the sentinel.
    Unknown,
}

impl ControlLayout {
    /// The documented dynamic layout (docs/allocators/esp-idf-tlsf.md).
    pub fn dynamic_default() -> Self {
        ControlLayout::Dynamic {
            bits: ControlBits::default(),
            size: 20,
            fl_bitmap: 24,
            sl_bitmap: 28,
            blocks: 32,
            struct_size: 36,
        }
    }

    /// The documented fixed layout for a given `FL_INDEX_COUNT` (SL_INDEX_COUNT 32).
    pub fn fixed_default(fl_count: u64) -> Self {
        ControlLayout::Fixed {
            fl_bitmap: 16,
            sl_bitmap: 20,
            blocks: 20 + 4 * fl_count,
            fl_count,
            sl_count: 32,
            struct_size: 20 + 4 * fl_count + 4 * fl_count * 32,
        }
    }

    /// `"dynamic"`, `"fixed"` or `"unknown"`, for `memlife symbols`.
    pub fn variant(&self) -> &'static str {
        match self {
            ControlLayout::Dynamic { .. } => "dynamic",
            ControlLayout::Fixed { .. } => "fixed",
            ControlLayout::Unknown => "unknown",
        }
    }
}

/// `block_header_t`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockLayout {
    /// `prev_phys_block` (valid only when the block's prev-free bit is set).
    pub prev_phys: u64,
    /// `size` (payload bytes; bit 0 free, bit 1 previous free).
    pub size: u64,
    /// `next_free`.
    pub next_free: u64,
    /// `prev_free`.
    pub prev_free: u64,
}

impl Default for BlockLayout {
    fn default() -> Self {
        BlockLayout {
            prev_phys: 0,
            size: 4,
            next_free: 8,
            prev_free: 12,
        }
    }
}

/// All layouts the walker needs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Layouts {
    /// `struct heap_t_`.
    pub heap_t: HeapTLayout,
    /// `struct multi_heap_info`.
    pub info: InfoLayout,
    /// `control_t`.
    pub control: Option<ControlLayout>,
    /// `block_header_t`.
    pub block: BlockLayout,
    /// Which of the above came from DWARF (for `memlife symbols`).
    pub from_dwarf: Vec<&'static str>,
}

impl Layouts {
    /// Resolves every layout from the ELF's DWARF, falling back member by member.
    pub fn resolve(symbols: &Symbols) -> Layouts {
        let types = symbols.types();
        let mut out = Layouts::default();
        if let Some(t) = types.find_struct("heap_t_") {
            out.from_dwarf.push("heap_t_");
            let d = HeapTLayout::default();
            let off =
                |name: &str, default: u64| types.member(t, name).map_or(default, |m| m.offset);
            let caps = types.member(t, "caps").map_or(d.caps, |m| {
                let count = m
                    .type_id
                    .and_then(|id| array_dims(types, id))
                    .and_then(|dims| dims.first().copied().flatten())
                    .unwrap_or(3);
                (m.offset, count)
            });
            let mux_owner = types.member(t, "heap_mux").map_or(d.mux_owner, |m| {
                let inner = m
                    .type_id
                    .and_then(|id| types.member(id, "owner"))
                    .map_or(0, |o| o.offset);
                m.offset.saturating_add(inner)
            });
            let next = types.member(t, "next").map_or(d.next, |m| {
                let inner = m
                    .type_id
                    .and_then(|id| types.member(id, "sle_next"))
                    .map_or(0, |o| o.offset);
                m.offset.saturating_add(inner)
            });
            out.heap_t = HeapTLayout {
                caps,
                start: off("start", d.start),
                end: off("end", d.end),
                mux_owner,
                heap: off("heap", d.heap),
                next,
                size: types.size_of(t).unwrap_or(d.size),
            };
        }
        if let Some(t) = types.find_struct("multi_heap_info") {
            out.from_dwarf.push("multi_heap_info");
            let d = InfoLayout::default();
            let off =
                |name: &str, default: u64| types.member(t, name).map_or(default, |m| m.offset);
            out.info = InfoLayout {
                lock: off("lock", d.lock),
                free_bytes: off("free_bytes", d.free_bytes),
                minimum_free_bytes: off("minimum_free_bytes", d.minimum_free_bytes),
                pool_size: off("pool_size", d.pool_size),
                heap_data: off("heap_data", d.heap_data),
                size: types.size_of(t).unwrap_or(d.size),
            };
        }
        if let Some(t) = types.find_struct("block_header_t") {
            out.from_dwarf.push("block_header_t");
            let d = BlockLayout::default();
            let off =
                |name: &str, default: u64| types.member(t, name).map_or(default, |m| m.offset);
            out.block = BlockLayout {
                prev_phys: off("prev_phys_block", d.prev_phys),
                size: off("size", d.size),
                next_free: off("next_free", d.next_free),
                prev_free: off("prev_free", d.prev_free),
            };
        }
        out.control = Some(match types.find_struct("control_t") {
            Some(t) => {
                out.from_dwarf.push("control_t");
                control_from_dwarf(types, t)
            }
            None => ControlLayout::Unknown,
        });
        out
    }
}

/// The control structure's layout from its DWARF type: a `size` member means the dynamic one.
fn control_from_dwarf(types: &TypeTable, t: u64) -> ControlLayout {
    let member = |name: &str| types.member(t, name);
    let off = |name: &str, default: u64| member(name).map_or(default, |m| m.offset);
    if member("size").is_some() {
        let d = ControlBits::default();
        // Only DWARF 5's DW_AT_data_bit_offset is a position we can use as is; without it (DWARF
        // 4 numbers bits from the other end) GCC's little-endian packing is assumed.
        let bit = |name: &str, default: BitField| {
            member(name)
                .and_then(|m| {
                    Some(BitField {
                        // Offsets from the ELF: a position past 2^64 bits is no field.
                        bit: m.offset.checked_mul(8)?.checked_add(m.bit_offset?)?,
                        width: m.bit_size?,
                    })
                })
                .unwrap_or(default)
        };
        return ControlLayout::Dynamic {
            bits: ControlBits {
                fl_index_count: bit("fl_index_count", d.fl_index_count),
                fl_index_shift: bit("fl_index_shift", d.fl_index_shift),
                fl_index_max: bit("fl_index_max", d.fl_index_max),
                sl_index_count: bit("sl_index_count", d.sl_index_count),
                sl_index_count_log2: bit("sl_index_count_log2", d.sl_index_count_log2),
                small_block_size: bit("small_block_size", d.small_block_size),
            },
            size: off("size", 20),
            fl_bitmap: off("fl_bitmap", 24),
            sl_bitmap: off("sl_bitmap", 28),
            blocks: off("blocks", 32),
            struct_size: types.size_of(t).unwrap_or(36),
        };
    }
    // Fixed arrays: the counts are the array bounds.
    let dims = |name: &str| {
        member(name)
            .and_then(|m| m.type_id)
            .and_then(|id| array_dims(types, id))
            .unwrap_or_default()
    };
    let sl_dims = dims("sl_bitmap");
    let block_dims = dims("blocks");
    let fl_count = sl_dims
        .first()
        .copied()
        .flatten()
        .or_else(|| block_dims.first().copied().flatten());
    let sl_count = block_dims.get(1).copied().flatten().unwrap_or(32);
    match fl_count {
        Some(fl_count) if fl_count > 0 && fl_count <= 32 => ControlLayout::Fixed {
            fl_bitmap: off("fl_bitmap", 16),
            sl_bitmap: off("sl_bitmap", 20),
            blocks: off("blocks", 20 + 4 * fl_count),
            fl_count,
            sl_count,
            struct_size: types
                .size_of(t)
                // fl_count <= 32; sl_count comes from the ELF unchecked: saturate.
                .unwrap_or((4 * fl_count).saturating_mul(sl_count.saturating_add(1)) + 20),
        },
        _ => ControlLayout::Unknown,
    }
}

/// The dimensions of an array type (through typedefs and qualifiers).
fn array_dims(types: &TypeTable, id: u64) -> Option<Vec<Option<u64>>> {
    match types.resolve(id)?.1 {
        Type::Array { dims, .. } => Some(dims.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_fields_read_little_endian() {
        // fl_index_count 11, shift 6, max 16, sl count 16, log2 4, small 64 (a 40000-byte pool).
        let word: u32 = 11 | (6 << 5) | (16 << 8) | (16 << 14) | (4 << 20) | (64 << 23);
        let mut bytes = vec![0u8; 16];
        bytes.extend_from_slice(&word.to_le_bytes());
        let b = ControlBits::default();
        assert_eq!(b.fl_index_count.get(&bytes), Some(11));
        assert_eq!(b.fl_index_shift.get(&bytes), Some(6));
        assert_eq!(b.fl_index_max.get(&bytes), Some(16));
        assert_eq!(b.sl_index_count.get(&bytes), Some(16));
        assert_eq!(b.sl_index_count_log2.get(&bytes), Some(4));
        assert_eq!(b.small_block_size.get(&bytes), Some(64));
        assert_eq!(b.small_block_size.get(&bytes[..10]), None);
    }

    #[test]
    fn fixed_default_matches_sizeof() {
        // FL_INDEX_MAX 18 → FL_INDEX_COUNT 12: 16 + 4 + 48 + 1536.
        match ControlLayout::fixed_default(12) {
            ControlLayout::Fixed {
                struct_size,
                blocks,
                ..
            } => {
                assert_eq!(struct_size, 1604);
                assert_eq!(blocks, 68);
            }
            other => panic!("{other:?}"),
        }
    }
}
