//! Reading and writing target memory.
//!
//! Only [`Memory::read`] is required; the typed helpers are provided. Implementations should make
//! one `read` as few link transactions as the link allows, and [`Memory::read_ranges`] one round
//! trip where the link pipelines: heap walkers read whole arenas at once (bulk) or many small
//! chunks per request (sparse), because on a real probe every round trip costs about half a
//! millisecond.

use crate::{ErrorKind, Result};

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

/// Reads as much of `buf` as the target will give from `addr` on, for a reader that accepts a
/// short answer (gdb's `m`, which then asks for the rest and learns where memory ends): the
/// length of the readable prefix, found by halving. Needs about `log2(len)` reads beyond the
/// failed one; the error of the whole read when not even one byte is readable, or when the
/// failure is not inaccessible memory.
pub fn read_available(mem: &mut dyn Memory, addr: u64, buf: &mut [u8]) -> Result<usize> {
    let first = match mem.read(addr, buf) {
        Ok(()) => return Ok(buf.len()),
        Err(e) if inaccessible(&e) => e,
        Err(e) => return Err(e),
    };
    // Failed reads go to scratch, so `buf[..readable]` keeps the bytes of the last good one.
    let mut scratch = vec![0u8; buf.len()];
    let (mut readable, mut unreadable) = (0, buf.len());
    while unreadable - readable > 1 {
        let mid = readable + (unreadable - readable) / 2;
        match mem.read(addr, &mut scratch[..mid]) {
            Ok(()) => {
                buf[..mid].copy_from_slice(&scratch[..mid]);
                readable = mid;
            }
            Err(e) if inaccessible(&e) => unreadable = mid,
            Err(e) => return Err(e),
        }
    }
    if readable == 0 {
        Err(first)
    } else {
        Ok(readable)
    }
}

fn inaccessible(e: &crate::TargetError) -> bool {
    matches!(e.kind(), ErrorKind::Unmapped | ErrorKind::Refused)
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::TargetError;

    /// RAM at `0x1000..0x1100`, filled with the low byte of each address; counts reads.
    struct Ram {
        reads: usize,
    }

    impl Memory for Ram {
        fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<()> {
            self.reads += 1;
            let end = addr + buf.len() as u64;
            if addr < 0x1000 || end > 0x1100 {
                // Scribble first, as a backend that fails half way might.
                buf.fill(0xee);
                return Err(TargetError::Unmapped {
                    addr,
                    len: buf.len(),
                });
            }
            for (i, b) in buf.iter_mut().enumerate() {
                *b = (addr + i as u64) as u8;
            }
            Ok(())
        }
    }

    #[test]
    fn a_read_across_the_end_of_memory_gets_what_exists() {
        let mut ram = Ram { reads: 0 };
        let mut buf = [0u8; 32];
        assert_eq!(read_available(&mut ram, 0x10f0, &mut buf).unwrap(), 16);
        let expected: Vec<u8> = (0xf0..=0xff).collect();
        assert_eq!(buf[..16], expected[..]);
        assert!(ram.reads <= 1 + 6, "{} reads", ram.reads);
    }

    #[test]
    fn a_whole_read_is_one_read() {
        let mut ram = Ram { reads: 0 };
        let mut buf = [0u8; 16];
        assert_eq!(read_available(&mut ram, 0x1000, &mut buf).unwrap(), 16);
        assert_eq!(ram.reads, 1);
    }

    #[test]
    fn nothing_readable_is_the_first_error() {
        let mut ram = Ram { reads: 0 };
        let mut buf = [0u8; 8];
        let err = read_available(&mut ram, 0x1100, &mut buf).unwrap_err();
        assert!(
            matches!(
                err,
                TargetError::Unmapped {
                    addr: 0x1100,
                    len: 8
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn other_errors_are_not_searched() {
        struct Dead;
        impl Memory for Dead {
            fn read(&mut self, _: u64, _: &mut [u8]) -> Result<()> {
                Err(TargetError::Gone("closed".into()))
            }
        }
        let mut buf = [0u8; 8];
        assert!(matches!(
            read_available(&mut Dead, 0, &mut buf),
            Err(TargetError::Gone(_))
        ));
    }
}
