//! What the firmware's own heap API would return at the moment of a walk, computed from the walk:
//! the figures users compare with their UART logs (`vPortGetHeapStats`, `mallinfo()`,
//! `heap_caps_get_info`...). Field names are the C API's own, so the JSON reads like the
//! firmware's print. The rules each allocator follows are in docs/allocators/.

use serde::Serialize;

/// The firmware's own view of its heap, by API family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "api")]
pub enum FirmwareView {
    /// FreeRTOS heap_4 / heap_5.
    #[serde(rename = "freertos")]
    FreeRtos(FreeRtosView),
    /// newlib's `mallinfo()` (nano or dlmalloc).
    #[serde(rename = "newlib")]
    Newlib(NewlibView),
    /// ESP-IDF's `multi_heap` / `heap_caps` API.
    #[serde(rename = "esp-idf")]
    EspIdf(EspIdfView),
    /// Rust's `embedded-alloc` (`LlffHeap`, `TlsfHeap`).
    #[serde(rename = "embedded-alloc")]
    EmbeddedAlloc(EmbeddedAllocView),
}

/// What `embedded_alloc::LlffHeap::used()/free()` or `TlsfHeap::used()/free()` return.
/// (embedded-alloc 0.7.0's `TlsfHeap::used()` itself panics, borrowing its RefCell twice: the
/// figure is what it is meant to return, the pool size minus `free()`.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EmbeddedAllocView {
    /// `used()`.
    pub used: u64,
    /// `free()`.
    pub free: u64,
}

/// `HeapStats_t` as `vPortGetHeapStats` fills it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[allow(non_snake_case)]
pub struct HeapStats {
    /// `xFreeBytesRemaining`.
    pub xAvailableHeapSpaceInBytes: u64,
    /// Largest `xBlockSize` on the free list (header included).
    pub xSizeOfLargestFreeBlockInBytes: u64,
    /// Smallest `xBlockSize` on the free list (heap_5: markers excluded); `SIZE_MAX` (the
    /// allocator's starting value) when the list is empty.
    pub xSizeOfSmallestFreeBlockInBytes: u64,
    /// Entries on the free list, heap_5's zero-size region markers still linked included.
    pub xNumberOfFreeBlocks: u64,
    /// `xMinimumEverFreeBytesRemaining`.
    pub xMinimumEverFreeBytesRemaining: u64,
    /// `xNumberOfSuccessfulAllocations`.
    pub xNumberOfSuccessfulAllocations: u64,
    /// `xNumberOfSuccessfulFrees`.
    pub xNumberOfSuccessfulFrees: u64,
}

/// FreeRTOS heap_4/heap_5's API.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[allow(non_snake_case)]
pub struct FreeRtosView {
    /// `vPortGetHeapStats`.
    pub heap_stats: HeapStats,
    /// `xPortGetFreeHeapSize()`.
    pub xPortGetFreeHeapSize: u64,
    /// `xPortGetMinimumEverFreeHeapSize()`.
    pub xPortGetMinimumEverFreeHeapSize: u64,
}

/// newlib's `struct mallinfo` as `mallinfo()` returns it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Mallinfo {
    /// Bytes obtained from sbrk.
    pub arena: u64,
    /// Free chunks.
    pub ordblks: u64,
    /// Fast-bin blocks.
    pub smblks: u64,
    /// mmapped regions.
    pub hblks: u64,
    /// Bytes in mmapped regions.
    pub hblkhd: u64,
    /// Highest arena (dlmalloc).
    pub usmblks: u64,
    /// Bytes in fast-bin blocks.
    pub fsmblks: u64,
    /// Bytes allocated.
    pub uordblks: u64,
    /// Bytes free.
    pub fordblks: u64,
    /// Top-most releasable bytes.
    pub keepcost: u64,
}

/// newlib's API.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct NewlibView {
    /// `mallinfo()`.
    pub mallinfo: Mallinfo,
}

/// ESP-IDF's `multi_heap_info_t`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MultiHeapInfo {
    /// Free bytes.
    pub total_free_bytes: u64,
    /// Allocated bytes (TLSF and poisoning overheads excluded).
    pub total_allocated_bytes: u64,
    /// The largest request that fits.
    pub largest_free_block: u64,
    /// Low-water mark of the free bytes.
    pub minimum_free_bytes: u64,
    /// Blocks in use.
    pub allocated_blocks: u64,
    /// Free blocks.
    pub free_blocks: u64,
    /// All blocks.
    pub total_blocks: u64,
}

/// One registered heap as the ESP-IDF API reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EspIdfHeap {
    /// `heap_t_.start`.
    pub start: u64,
    /// The union of the heap's prioritised capability masks (what `heap_caps_get_*` match).
    pub caps: u32,
    /// `multi_heap_get_info`.
    pub info: MultiHeapInfo,
    /// `multi_heap_free_size`.
    pub free_size: u64,
    /// `multi_heap_minimum_free_size`.
    pub minimum_free_size: u64,
}

/// The `heap_caps_*` figures for one capability mask.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapsFigures {
    /// The mask asked.
    pub caps: u32,
    /// Its bit names joined with `|`.
    pub name: String,
    /// `heap_caps_get_info(caps)`.
    pub info: MultiHeapInfo,
    /// `heap_caps_get_free_size(caps)`.
    pub free_size: u64,
    /// `heap_caps_get_largest_free_block(caps)`.
    pub largest_free_block: u64,
    /// `heap_caps_get_minimum_free_size(caps)`.
    pub minimum_free_size: u64,
}

/// ESP-IDF's API: per heap (in `registered_heaps` order), and for the common capability masks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EspIdfView {
    /// Heap poisoning built in: `none`, `light` or `comprehensive` (the public figures then leave
    /// out the poisoning overhead).
    pub poisoning: &'static str,
    /// Every registered heap, in list order.
    pub heaps: Vec<EspIdfHeap>,
    /// `heap_caps_*` for [`COMMON_CAPS`].
    pub heap_caps: Vec<CapsFigures>,
}

/// The masks `firmware_view.heap_caps` lists: those users print most.
pub const COMMON_CAPS: &[u32] = &[
    1 << 2,  // 8BIT
    1 << 1,  // 32BIT
    1 << 12, // DEFAULT
    1 << 11, // INTERNAL
    1 << 3,  // DMA
    1 << 10, // SPIRAM
    (1 << 11) | (1 << 2),
];

impl EspIdfView {
    /// The heaps `heap_caps_*` would use for `caps`: those having every asked bit.
    fn matching(&self, caps: u32) -> impl Iterator<Item = &EspIdfHeap> {
        self.heaps.iter().filter(move |h| h.caps & caps == caps)
    }

    /// `heap_caps_get_info(caps)`: sums over the matching heaps, largest block the maximum.
    pub fn heap_caps_get_info(&self, caps: u32) -> MultiHeapInfo {
        self.matching(caps)
            .fold(MultiHeapInfo::default(), |mut a, h| {
                a.total_free_bytes += h.info.total_free_bytes;
                a.total_allocated_bytes += h.info.total_allocated_bytes;
                a.largest_free_block = a.largest_free_block.max(h.info.largest_free_block);
                a.minimum_free_bytes += h.info.minimum_free_bytes;
                a.allocated_blocks += h.info.allocated_blocks;
                a.free_blocks += h.info.free_blocks;
                a.total_blocks += h.info.total_blocks;
                a
            })
    }

    /// `heap_caps_get_free_size(caps)`.
    pub fn heap_caps_get_free_size(&self, caps: u32) -> u64 {
        self.matching(caps).map(|h| h.free_size).sum()
    }

    /// `heap_caps_get_minimum_free_size(caps)`.
    pub fn heap_caps_get_minimum_free_size(&self, caps: u32) -> u64 {
        self.matching(caps).map(|h| h.minimum_free_size).sum()
    }

    /// `heap_caps_get_largest_free_block(caps)`.
    pub fn heap_caps_get_largest_free_block(&self, caps: u32) -> u64 {
        self.heap_caps_get_info(caps).largest_free_block
    }

    /// All `heap_caps_*` figures for one mask.
    pub fn figures(&self, caps: u32) -> CapsFigures {
        CapsFigures {
            caps,
            name: crate::walkers::caps_names(caps).join("|"),
            info: self.heap_caps_get_info(caps),
            free_size: self.heap_caps_get_free_size(caps),
            largest_free_block: self.heap_caps_get_largest_free_block(caps),
            minimum_free_size: self.heap_caps_get_minimum_free_size(caps),
        }
    }

    /// Builds the view from the heaps, filling `heap_caps` for [`COMMON_CAPS`].
    pub(crate) fn new(poisoning: &'static str, heaps: Vec<EspIdfHeap>) -> Self {
        let mut v = EspIdfView {
            poisoning,
            heaps,
            heap_caps: Vec::new(),
        };
        v.heap_caps = COMMON_CAPS.iter().map(|&c| v.figures(c)).collect();
        v
    }
}

/// A capability mask from its name(s) (`8BIT`, `MALLOC_CAP_DEFAULT`, `INTERNAL|8BIT`) or a
/// number (`4`, `0x1004`).
pub fn parse_caps(text: &str) -> Result<u32, String> {
    let mut mask = 0u32;
    for part in text.split('|').map(str::trim) {
        let bare = part.trim_start_matches("MALLOC_CAP_").to_ascii_uppercase();
        let bit = if let Some(hex) = bare.strip_prefix("0X") {
            u32::from_str_radix(hex, 16).ok()
        } else if let Ok(n) = bare.parse::<u32>() {
            Some(n)
        } else {
            crate::walkers::caps_bit(&bare).map(|b| 1u32 << b)
        };
        mask |= bit.ok_or_else(|| {
            format!("unknown heap capability `{part}` (a MALLOC_CAP_* name such as 8BIT, DEFAULT, INTERNAL, or a number)")
        })?;
    }
    Ok(mask)
}

/// What ESP-IDF's poisoning takes off a public figure: the 12 bytes of one head and tail, once
/// per heap; a figure not above that reads 0.
pub(crate) fn less_poison(v: u64, poisoned: bool) -> u64 {
    const POISON_OVERHEAD: u64 = 12;
    if !poisoned {
        v
    } else {
        v.saturating_sub(POISON_OVERHEAD)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn heap(start: u64, caps: u32, free: u64, largest: u64) -> EspIdfHeap {
        EspIdfHeap {
            start,
            caps,
            info: MultiHeapInfo {
                total_free_bytes: free,
                total_allocated_bytes: 100,
                largest_free_block: largest,
                minimum_free_bytes: free - 10,
                allocated_blocks: 2,
                free_blocks: 3,
                total_blocks: 5,
            },
            free_size: free,
            minimum_free_size: free - 10,
        }
    }

    #[test]
    fn heap_caps_sum_the_heaps_having_every_asked_bit() {
        let v = EspIdfView::new(
            "none",
            vec![
                heap(0x100, (1 << 2) | (1 << 12) | (1 << 11), 1000, 800),
                heap(0x900, (1 << 2) | (1 << 10), 500, 900),
            ],
        );
        assert_eq!(v.heap_caps_get_free_size(1 << 2), 1500);
        assert_eq!(v.heap_caps_get_largest_free_block(1 << 2), 900);
        assert_eq!(v.heap_caps_get_free_size((1 << 2) | (1 << 11)), 1000);
        assert_eq!(v.heap_caps_get_largest_free_block(1 << 11), 800);
        assert_eq!(v.heap_caps_get_free_size(1 << 3), 0);
        let i = v.heap_caps_get_info(1 << 2);
        assert_eq!((i.total_blocks, i.minimum_free_bytes), (10, 1480));
        assert_eq!(v.heap_caps[0].name, "8BIT");
        assert_eq!(v.heap_caps[0].free_size, 1500);
    }

    #[test]
    fn caps_parse_by_name_or_number() {
        assert_eq!(parse_caps("8BIT"), Ok(4));
        assert_eq!(parse_caps("MALLOC_CAP_DEFAULT"), Ok(1 << 12));
        assert_eq!(parse_caps("internal|8bit"), Ok((1 << 11) | 4));
        assert_eq!(parse_caps("0x1004"), Ok(0x1004));
        assert_eq!(parse_caps("4"), Ok(4));
        assert!(parse_caps("FAST").unwrap_err().contains("`FAST`"));
    }

    #[test]
    fn poisoning_takes_twelve_bytes_once() {
        assert_eq!(less_poison(100, false), 100);
        assert_eq!(less_poison(100, true), 88);
        assert_eq!(less_poison(12, true), 0);
        assert_eq!(less_poison(5, true), 0);
    }
}
