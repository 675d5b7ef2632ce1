//! ESP-IDF heap poisoning (docs/allocators/esp-idf-tlsf.md, "Heap poisoning"): which mode the
//! firmware was built with, and the host-side checks of every block's canaries and, in
//! comprehensive mode, of the free fill, at every walk. No target access: the pool image is
//! already read.
//!
//! A block in use carries, inside its TLSF payload: a head `{0xABBA1234, alloc_size}`, the
//! caller's `alloc_size` bytes, then the tail canary 0xBAAD5678 (unaligned, right after the data).
//! In comprehensive mode every free byte the allocator does not use for its own links holds 0xFE.

use std::str::FromStr;

use memlife_dwarf::Symbols;

use crate::image::MemImage;
use crate::state::{AnomalyKind, HeapState};

/// The head canary.
pub const HEAD_CANARY: u32 = 0xABBA_1234;
/// The tail canary.
pub const TAIL_CANARY: u32 = 0xBAAD_5678;
/// Head (canary + size) and tail bytes per block in use.
pub const POISON_OVERHEAD: u64 = 12;
/// What comprehensive mode fills free memory with.
pub const FREE_FILL: u8 = 0xFE;

/// The heap-poisoning mode built into the firmware.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Poisoning {
    /// No canaries.
    #[default]
    None,
    /// Head and tail canaries (`CONFIG_HEAP_POISONING_LIGHT`).
    Light,
    /// Canaries, and free memory filled with 0xFE (`CONFIG_HEAP_POISONING_COMPREHENSIVE`).
    Comprehensive,
}

impl Poisoning {
    /// The name `memlife heap --json` and memlife.toml use.
    pub fn name(self) -> &'static str {
        match self {
            Poisoning::None => "none",
            Poisoning::Light => "light",
            Poisoning::Comprehensive => "comprehensive",
        }
    }

    /// From the ELF: the poison head type exists only when poisoning is built in; the routine
    /// that checks the free fill only in comprehensive mode. A firmware may also state the
    /// level in a constant global `multi_heap_poisoning_level` (1 light, 2 comprehensive).
    pub fn detect(symbols: &Symbols) -> Poisoning {
        let types = symbols.types();
        if types.find_struct("poison_head_t").is_none() {
            return Poisoning::None;
        }
        let level = symbols
            .static_location("multi_heap_poisoning_level", &[])
            .and_then(|(addr, _)| symbols.rodata(addr, 4).or_else(|| symbols.code(addr, 4)))
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        match level {
            Some(1) => return Poisoning::Light,
            Some(2) => return Poisoning::Comprehensive,
            _ => {}
        }
        let comprehensive = [
            "verify_fill_pattern",
            "multi_heap_internal_poison_fill_region",
        ]
        .iter()
        .any(|f| symbols.has_symbol(f) || symbols.function(f).is_some());
        if comprehensive {
            Poisoning::Comprehensive
        } else {
            Poisoning::Light
        }
    }
}

impl FromStr for Poisoning {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "off" => Ok(Poisoning::None),
            "light" => Ok(Poisoning::Light),
            "comprehensive" => Ok(Poisoning::Comprehensive),
            _ => Err(format!(
                "unknown heap poisoning `{s}` (none, light, comprehensive)"
            )),
        }
    }
}

/// Checks the block at `block` (its `block_header_t` address) with `size` payload bytes: a used
/// block's canaries, returning the requested size it records; a free block's fill in
/// comprehensive mode. Damage is an anomaly on `st`.
pub(super) fn check_block(
    img: &MemImage,
    mode: Poisoning,
    block: u64,
    size: u64,
    free: bool,
    st: &mut HeapState,
) -> Option<u64> {
    let payload = block + 8;
    if mode == Poisoning::None {
        return None;
    }
    if free {
        if mode == Poisoning::Comprehensive {
            check_fill(img, block, size, st);
        }
        return None;
    }
    let head = img.u32(payload)?;
    let alloc_size = u64::from(img.u32(payload + 4)?);
    if head != HEAD_CANARY || alloc_size + POISON_OVERHEAD > size {
        st.anomaly(
            AnomalyKind::Underrun,
            Some(block),
            format!(
                "block {block:#010x}: head canary {head:#010x} (expected {HEAD_CANARY:#010x}), recorded size {alloc_size} for a {size}-byte payload: something wrote before the block's data"
            ),
        );
        return None;
    }
    let tail_at = payload + 8 + alloc_size;
    let tail = img.u32(tail_at)?;
    if tail != TAIL_CANARY {
        st.anomaly(
            AnomalyKind::Overrun,
            Some(block),
            format!(
                "block {block:#010x} (requested {alloc_size} bytes, data at {:#010x}): tail canary at {tail_at:#010x} is {tail:#010x}, expected {TAIL_CANARY:#010x}: written past its end",
                payload + 8
            ),
        );
    }
    Some(alloc_size)
}

/// A free block's payload after its two list links, up to the next block's `prev_phys_block`
/// (the payload's last word), must still be 0xFE.
fn check_fill(img: &MemImage, block: u64, size: u64, st: &mut HeapState) {
    let from = block + 16;
    let to = block + 4 + size;
    if to <= from {
        return;
    }
    let Some(bytes) = img.bytes(from, to - from) else {
        return;
    };
    if let Some(i) = bytes.iter().position(|b| *b != FREE_FILL) {
        let at = from + i as u64;
        st.anomaly(
            AnomalyKind::WriteAfterFree,
            Some(block),
            format!(
                "free block {block:#010x} ({size} bytes): byte at {at:#010x} is {:#04x}, expected the free fill {FREE_FILL:#04x}: written after it was freed",
                bytes[i]
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_name() {
        for m in [Poisoning::None, Poisoning::Light, Poisoning::Comprehensive] {
            assert_eq!(m.name().parse::<Poisoning>(), Ok(m));
        }
        assert!(
            "heavy"
                .parse::<Poisoning>()
                .unwrap_err()
                .contains("`heavy`")
        );
    }
}
