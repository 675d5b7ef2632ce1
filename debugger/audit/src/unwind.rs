//! Cheap memory access at a stop: prefetched ranges, and backtraces served from them.
//!
//! A backtrace at every traced allocation must be cheap on the link: the stack above sp and the
//! block header are read together in one pipelined request ([`Prefetch::load`]), and the
//! unwinder's and the walker's reads are served from that copy; only frames deeper than the
//! window cost extra reads.

use memlife_core::cortex_m::CoreRegisters;
use memlife_core::{Memory, Result, Target};
use memlife_dwarf::Symbols;

/// Bytes of stack read at a traced allocation (the firmware's allocation paths are a few
/// frames of a few dozen bytes each).
pub const STACK_WINDOW: usize = 768;

/// Memory read at a stop, serving reads inside it and passing others to the target.
pub struct Prefetch<'a> {
    target: &'a mut dyn Memory,
    ranges: Vec<(u64, Vec<u8>)>,
}

impl<'a> Prefetch<'a> {
    /// Reads `ranges` in one request. A range that cannot be read whole (a stack window past
    /// the end of RAM) is retried smaller, then left out.
    pub fn load(target: &'a mut dyn Memory, ranges: &[(u64, usize)]) -> Self {
        let data = match target.read_ranges(ranges) {
            Ok(d) => ranges.iter().map(|r| r.0).zip(d).collect(),
            Err(_) => {
                let mut got = Vec::new();
                for &(addr, len) in ranges {
                    let mut len = len;
                    while len >= 8 {
                        if let Ok(b) = target.read_vec(addr, len) {
                            got.push((addr, b));
                            break;
                        }
                        len /= 2;
                    }
                }
                got
            }
        };
        Prefetch {
            target,
            ranges: data,
        }
    }

    /// Serves `ranges` (already read) before the target.
    pub fn from_parts(target: &'a mut dyn Memory, ranges: Vec<(u64, Vec<u8>)>) -> Self {
        Prefetch { target, ranges }
    }

    /// The ranges read, to keep for later at the same stop.
    pub fn into_ranges(self) -> Vec<(u64, Vec<u8>)> {
        self.ranges
    }
}

impl Memory for Prefetch<'_> {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<()> {
        for (start, data) in &self.ranges {
            // Checked: `addr` comes from target registers and stack words.
            let bytes = addr
                .checked_sub(*start)
                .and_then(|off| usize::try_from(off).ok())
                .and_then(|off| data.get(off..off.checked_add(buf.len())?));
            if let Some(bytes) = bytes {
                buf.copy_from_slice(bytes);
                return Ok(());
            }
        }
        self.target.read(addr, buf)
    }
}

/// Return addresses from the current pc outwards (frame 0 is the pc; inlined frames folded into
/// their physical frame), at most `max` frames.
pub fn backtrace(
    symbols: &Symbols,
    regs: &CoreRegisters,
    mem: &mut dyn Memory,
    max: usize,
) -> Vec<u64> {
    let frames = memlife_dwarf::unwind::backtrace(symbols, mem, regs, max * 2);
    let mut pcs: Vec<u64> = Vec::new();
    for f in frames.iter().filter(|f| !f.inlined) {
        if pcs.len() >= max {
            break;
        }
        pcs.push(f.pc);
    }
    pcs
}

/// r0..r15 of a halted target (served from the backend's register cache).
pub fn registers(target: &mut dyn Target) -> Option<CoreRegisters> {
    CoreRegisters::read_r0_to_r15(target).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A read near the top of the address space (an address from a garbage stack word) overflowed
    /// `addr + len` before; now it misses the prefetched range and goes to the target.
    #[test]
    fn prefetch_read_at_the_top_of_the_address_space_does_not_overflow() {
        let mut target = memlife_core::Snapshot::default();
        let mut p = Prefetch::from_parts(&mut target, vec![(u64::MAX - 4, vec![1, 2, 3, 4])]);
        let mut buf = [0u8; 8];
        assert!(p.read(u64::MAX - 2, &mut buf).is_err());
        let mut buf = [0u8; 2];
        p.read(u64::MAX - 2, &mut buf).unwrap();
        assert_eq!(buf, [3, 4]);
    }
}
