//! Bulk reads: a few address ranges read whole, then parsed on the host.
//!
//! Ranges closer than [`MERGE_GAP`] are merged into one read, so an allocator's globals (which
//! the linker puts side by side in `.bss`) cost one transaction, and the arena costs as many as
//! the link's largest packet needs.

use memlife_core::{Memory, TargetError};

/// Ranges closer than this are read as one.
pub const MERGE_GAP: u64 = 256;

/// A sparse, read-only image of target memory.
#[derive(Debug, Default, Clone)]
pub struct MemImage {
    spans: Vec<(u64, Vec<u8>)>,
}

impl MemImage {
    /// Reads every `(addr, len)` range, merging neighbours; zero-length ranges are skipped.
    pub fn read(mem: &mut dyn Memory, ranges: &[(u64, u64)]) -> Result<Self, TargetError> {
        let mut wanted: Vec<(u64, u64)> = ranges
            .iter()
            .filter(|(_, len)| *len > 0)
            .map(|&(a, l)| (a, a.saturating_add(l)))
            .collect();
        wanted.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (start, end) in wanted {
            match merged.last_mut() {
                Some(last) if start <= last.1.saturating_add(MERGE_GAP) => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        let mut wanted = Vec::with_capacity(merged.len());
        for &(start, end) in &merged {
            // end >= start: each end is `start.saturating_add(len)`, and merging only raises it.
            let len = usize::try_from(end - start).map_err(|_| TargetError::Unmapped {
                addr: start,
                len: usize::MAX,
            })?;
            wanted.push((start, len));
        }
        let data = mem.read_ranges(&wanted)?;
        Ok(MemImage {
            spans: merged.iter().map(|r| r.0).zip(data).collect(),
        })
    }

    /// Builds an image from given bytes (tests, snapshots).
    pub fn from_spans(spans: Vec<(u64, Vec<u8>)>) -> Self {
        MemImage { spans }
    }

    /// The bytes at `[addr, addr+len)` if the image holds all of them.
    pub fn bytes(&self, addr: u64, len: u64) -> Option<&[u8]> {
        // Checked throughout: addresses and lengths come from target RAM, and a span may end
        // at the top of the address space.
        addr.checked_add(len)?;
        let len = usize::try_from(len).ok()?;
        self.spans.iter().find_map(|(start, data)| {
            let off = usize::try_from(addr.checked_sub(*start)?).ok()?;
            data.get(off..off.checked_add(len)?)
        })
    }

    /// A little-endian 32-bit word.
    pub fn u32(&self, addr: u64) -> Option<u32> {
        let b = self.bytes(addr, 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A little-endian word of `size` bytes (1, 2, 4 or 8).
    pub fn uint(&self, addr: u64, size: u64) -> Option<u64> {
        let b = self.bytes(addr, size)?;
        let mut v = [0u8; 8];
        v[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
        Some(u64::from_le_bytes(v))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    struct Counting {
        reads: usize,
    }
    impl Memory for Counting {
        fn read(&mut self, addr: u64, buf: &mut [u8]) -> memlife_core::Result<()> {
            self.reads += 1;
            for (i, b) in buf.iter_mut().enumerate() {
                *b = (addr as usize + i) as u8;
            }
            Ok(())
        }
    }

    #[test]
    fn merges_neighbouring_ranges_into_one_read() {
        let mut m = Counting { reads: 0 };
        let img =
            MemImage::read(&mut m, &[(0x100, 4), (0x108, 4), (0x2000, 8), (0x104, 0)]).unwrap();
        assert_eq!(m.reads, 2);
        assert_eq!(img.u32(0x108).unwrap(), u32::from_le_bytes([8, 9, 10, 11]));
        assert_eq!(img.bytes(0x10b, 1).unwrap(), &[0x0b]);
        assert!(img.bytes(0x10c, 1).is_none());
        assert!(img.u32(0x1ffe).is_none());
        assert!(img.u32(u64::MAX - 1).is_none());
    }

    /// A span at the top of the address space: `start + data.len()` overflowed before.
    #[test]
    fn a_span_ending_past_the_top_is_read_without_overflow() {
        let img = MemImage::from_spans(vec![(u64::MAX - 3, vec![1, 2, 3, 4, 5, 6, 7, 8])]);
        assert_eq!(img.bytes(u64::MAX - 3, 3).unwrap(), &[1, 2, 3]);
        assert_eq!(img.bytes(u64::MAX - 1, 1).unwrap(), &[3]);
        // Bytes past 2^64 are no address (a range's end must be one).
        assert!(img.bytes(u64::MAX - 3, 4).is_none());
        assert!(img.u32(u64::MAX - 3).is_none());
        assert!(img.u32(0).is_none());
        assert!(img.bytes(u64::MAX - 1, u64::MAX).is_none());
    }
}
