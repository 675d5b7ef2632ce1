//! Fake target RAM for walker and reader tests: a [`Snapshot`] with one region is a read-only
//! target whose reads outside the region fail as unmapped memory would.

use memlife_core::{Memory, Snapshot};

/// A target whose memory is `bytes` at `base` (and nothing else).
pub fn at(base: u64, bytes: Vec<u8>) -> Snapshot {
    let mut snap = Snapshot::default();
    snap.add_region(base, bytes).unwrap();
    snap
}

/// Memory that counts what is asked of it, so a test can bound a reader's work (requests and
/// bytes), not only its output.
pub struct Counted<M> {
    /// The memory read.
    pub inner: M,
    /// Read requests so far.
    pub reads: u64,
    /// Bytes asked for so far.
    pub bytes: u64,
}

impl<M> Counted<M> {
    /// Wraps `inner` with zero counts.
    pub fn new(inner: M) -> Self {
        Counted {
            inner,
            reads: 0,
            bytes: 0,
        }
    }

    /// Panics when more than `max_reads` requests or `max_bytes` bytes were asked for.
    pub fn assert_within(&self, max_reads: u64, max_bytes: u64, what: &str) {
        assert!(
            self.reads <= max_reads && self.bytes <= max_bytes,
            "{what}: {} reads, {} bytes (bound: {max_reads} reads, {max_bytes} bytes)",
            self.reads,
            self.bytes
        );
    }
}

impl<M: Memory> Memory for Counted<M> {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> memlife_core::Result<()> {
        self.reads += 1;
        self.bytes += buf.len() as u64;
        self.inner.read(addr, buf)
    }
}

/// Writes a little-endian word at byte offset `off` of `ram`.
pub fn put_u32(ram: &mut [u8], off: usize, value: u32) {
    ram[off..off + 4].copy_from_slice(&value.to_le_bytes());
}

/// The little-endian word at byte offset `off` of `ram`.
pub fn get_u32(ram: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(ram[off..off + 4].try_into().unwrap())
}

#[cfg(test)]
mod tests {
    use memlife_core::{Memory, TargetError};

    use super::*;

    #[test]
    fn reads_inside_the_region_only() {
        let mut ram = vec![0u8; 16];
        put_u32(&mut ram, 4, 0xdead_beef);
        assert_eq!(get_u32(&ram, 4), 0xdead_beef);
        let mut t = at(0x2000_0000, ram);
        assert_eq!(t.read_u32(0x2000_0004).unwrap(), 0xdead_beef);
        assert!(matches!(
            t.read_u32(0x2000_000e),
            Err(TargetError::Unmapped { .. })
        ));
    }
}
