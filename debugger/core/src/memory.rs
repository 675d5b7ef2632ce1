//! Reading and writing target memory.
//!
//! Only [`Memory::read`] is required; the typed helpers are provided. Implementations should make
//! one `read` as few link transactions as the link allows: heap walkers read whole arenas at once
//! because on a real probe every round trip costs about half a millisecond.

use crate::Result;

/// Read access to target memory (live or offline).
pub trait Memory {
    /// Fills `buf` with the bytes at `addr`.
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<()>;

    /// Reads `len` bytes into a new vector.
    fn read_vec(&mut self, addr: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = vec![0; len];
        self.read(addr, &mut buf)?;
        Ok(buf)
    }

    /// Reads several ranges. Backends with a request/reply link override this to send all the
    /// requests before waiting for the replies, so a walk costs one round trip, not one per read.
    fn read_ranges(&mut self, ranges: &[(u64, usize)]) -> Result<Vec<Vec<u8>>> {
        ranges
            .iter()
            .map(|&(addr, len)| self.read_vec(addr, len))
            .collect()
    }

    /// Reads a little-endian 32-bit word.
    fn read_u32(&mut self, addr: u64) -> Result<u32> {
        let mut b = [0; 4];
        self.read(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }
}

/// Write access to target memory (live targets only).
pub trait MemoryWrite {
    /// Writes `data` at `addr`.
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<()>;
}

impl<M: Memory + ?Sized> Memory for &mut M {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<()> {
        (**self).read(addr, buf)
    }

    fn read_ranges(&mut self, ranges: &[(u64, usize)]) -> Result<Vec<Vec<u8>>> {
        (**self).read_ranges(ranges)
    }
}
