//! The heap protector (`configENABLE_HEAP_PROTECTOR`, FreeRTOS V11 and later): every place the
//! walk depends on it is a method here.
//!
//! With the protector on, heap_4 and heap_5 store free-list links XORed with the random
//! `xHeapCanary`, and an allocated block's `pxNextFreeBlock` holds either NULL or the canary,
//! depending on the kernel version (docs/allocators/freertos-heap4-heap5.md). Without the
//! protector (no `xHeapCanary` in the ELF) the canary is 0 and every method is the identity.
//!
//! The variable `pxEnd` itself is stored plain (only links inside blocks and `xStart` are
//! encoded), so [`Protector::end_marker`] does not decode it.

use crate::image::MemImage;

/// Links are 32-bit on every port memlife walks.
const LINK_MASK: u64 = 0xffff_ffff;

/// How stored heap pointers decode for one walk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Protector {
    canary: u64,
}

impl Protector {
    /// The canary as the image holds it at `canary` (the `xHeapCanary` variable); off when the
    /// ELF has no such variable or it cannot be read.
    pub(super) fn read(img: &MemImage, canary: Option<u64>) -> Protector {
        Protector {
            canary: canary.and_then(|a| img.u32(a)).map_or(0, u64::from),
        }
    }

    /// A free-list link (`xStart.pxNextFreeBlock`, a free block's `pxNextFreeBlock`) as stored,
    /// decoded to the address it points to.
    pub(super) fn link(self, stored: u64) -> u64 {
        (stored ^ self.canary) & LINK_MASK
    }

    /// The `pxEnd` variable as stored: the end marker's address, plain even with the protector
    /// on; 0 while the heap is not initialised.
    pub(super) fn end_marker(self, stored: u64) -> u64 {
        stored & LINK_MASK
    }

    /// Whether an allocated block's `pxNextFreeBlock` (or an end marker's) holds what the
    /// allocator leaves there: NULL, stored raw up to V11.1.0 and as `NULL ^ canary` (the canary
    /// itself) from V11.2.0; both are accepted. Anything else means the header was overwritten.
    pub(super) fn is_allocated_link(self, stored: u64) -> bool {
        stored == 0 || stored == self.canary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_canary_links_are_plain_addresses() {
        let p = Protector::default();
        assert_eq!(p.link(0x2000_0140), 0x2000_0140);
        assert_eq!(p.end_marker(0), 0);
        assert!(p.is_allocated_link(0));
        assert!(!p.is_allocated_link(0x2000_0140));
    }

    #[test]
    fn with_a_canary_links_are_unxored_and_the_canary_marks_allocated_blocks() {
        let img = MemImage::from_spans(vec![(0x100, 0x5a5a_1234u32.to_le_bytes().to_vec())]);
        let p = Protector::read(&img, Some(0x100));
        assert_eq!(p.link(0x2000_0140 ^ 0x5a5a_1234), 0x2000_0140);
        assert_eq!(p.end_marker(0), 0, "an uninitialised pxEnd stays 0");
        assert_eq!(
            p.end_marker(0x2000_03f8),
            0x2000_03f8,
            "pxEnd is stored plain"
        );
        assert!(p.is_allocated_link(0x5a5a_1234));
        assert!(p.is_allocated_link(0));
        assert!(!p.is_allocated_link(0x2000_0140));
        // A canary the image does not hold reads as no protector.
        assert_eq!(Protector::read(&img, Some(0x200)), Protector::default());
    }
}
