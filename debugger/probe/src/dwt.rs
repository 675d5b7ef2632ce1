//! Data watchpoints on Cortex-M through the DWT comparators.
//!
//! probe-rs 0.32 has no watchpoint API, so memlife programs the DWT itself with plain memory
//! writes to the debug registers (the core must be halted, as for every other write):
//!
//! - `DEMCR.TRCENA` (bit 24 at `0xE000EDFC`) powers the DWT; without it every DWT write is lost.
//! - `DWT_CTRL.NUMCOMP` (bits 31:28 at `0xE0001000`) says how many comparators there are.
//! - Comparator `n` is `COMPn`, `MASKn`, `FUNCTIONn` at `0xE0001020 + 16·n` (+0, +4, +8).
//!
//! The `FUNCTION` encoding differs by architecture version:
//!
//! - ARMv6-M/ARMv7-M: `FUNCTION[3:0]` is 5 (read), 6 (write) or 7 (read or write), and `MASK`
//!   is log2 of the watched size: the comparator ignores that many low address bits, so the
//!   range must be a naturally aligned power of two. The largest mask is implementation defined;
//!   memlife writes it and reads it back to find out.
//! - ARMv8-M: no `MASK`; `FUNCTION` has `MATCH[3:0]` (4 read or write, 5 write, 6 read),
//!   `ACTION[5:4]` (1 = halt the core) and `DATAVSIZE[11:10]` (log2 of 1, 2 or 4 bytes). Ranges
//!   need a pair of linked comparators, which memlife does not do: 1, 2 or 4 aligned bytes.
//!
//! Both set `FUNCTION.MATCHED` (bit 24) when the comparator fired, cleared by reading it: after a
//! watchpoint halt that bit names the comparator, hence the address and kind gdb is told.
//! Whether a comparator supports data address matching at all is checked by reading `FUNCTION`
//! back: an unsupported match type does not stick.

use memlife_core::{Result, TargetError, WatchKind};

/// Debug Exception and Monitor Control Register.
pub const DEMCR: u64 = 0xE000_EDFC;
/// `DEMCR.TRCENA`: enables the DWT and ITM.
pub const DEMCR_TRCENA: u32 = 1 << 24;
/// DWT control register (`NUMCOMP` in bits 31:28).
pub const DWT_CTRL: u64 = 0xE000_1000;
/// `COMP0`; comparator `n` is 16·n bytes further.
pub const DWT_COMP0: u64 = 0xE000_1020;
/// `FUNCTION.MATCHED`.
pub const FUNCTION_MATCHED: u32 = 1 << 24;

/// Which DWT programming model the core has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DwtVersion {
    /// ARMv6-M and ARMv7-M (Cortex-M0/M0+/M3/M4/M7): `FUNCTION` 5/6/7 and `MASK`.
    V7m,
    /// ARMv8-M (Cortex-M23/M33/M55...): `MATCH`/`ACTION`/`DATAVSIZE`.
    V8m,
}

/// The three register values of one comparator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comparator {
    /// `COMPn`: the (aligned) address.
    pub comp: u32,
    /// `MASKn` (ARMv7-M only).
    pub mask: Option<u32>,
    /// `FUNCTIONn`.
    pub function: u32,
}

/// Why a range cannot be watched by one comparator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WatchRangeError {
    /// The DWT compares 32-bit addresses.
    #[error("address {addr:#010x} is beyond 32 bits")]
    Beyond32Bits {
        /// The address asked for.
        addr: u64,
    },
    /// The range is empty, not a power of two long, or not aligned to its length.
    #[error(
        "a DWT comparator watches a naturally aligned power-of-two range; {len} bytes at {addr:#010x} is not one"
    )]
    NotNaturallyAligned {
        /// First byte.
        addr: u64,
        /// Bytes.
        len: u64,
    },
    /// Longer than any `MASK` can cover.
    #[error("{len} bytes is too large a watch range")]
    TooLarge {
        /// Bytes.
        len: u64,
    },
    /// On ARMv8-M one comparator watches 1, 2 or 4 bytes (`DATAVSIZE`).
    #[error("on ARMv8-M memlife watches 1, 2 or 4 bytes per comparator, not {len}")]
    V8mSize {
        /// Bytes.
        len: u64,
    },
}

/// The register addresses of one comparator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ComparatorRegisters {
    /// `COMPn`.
    pub comp: u64,
    /// `MASKn`.
    pub mask: u64,
    /// `FUNCTIONn`.
    pub function: u64,
}

/// Register addresses of comparator `n`.
pub fn registers(n: usize) -> ComparatorRegisters {
    let base = DWT_COMP0 + 16 * n as u64;
    ComparatorRegisters {
        comp: base,
        mask: base + 4,
        function: base + 8,
    }
}

/// Encodes a watchpoint on `len` bytes at `addr` for one comparator.
pub fn encode(
    version: DwtVersion,
    addr: u64,
    len: u64,
    kind: WatchKind,
) -> Result<Comparator, WatchRangeError> {
    let comp = u32::try_from(addr).map_err(|_| WatchRangeError::Beyond32Bits { addr })?;
    if len == 0 || !len.is_power_of_two() || !addr.is_multiple_of(len) {
        return Err(WatchRangeError::NotNaturallyAligned { addr, len });
    }
    let log2 = len.trailing_zeros();
    match version {
        DwtVersion::V7m => {
            if log2 > 31 {
                return Err(WatchRangeError::TooLarge { len });
            }
            let function = match kind {
                WatchKind::Read => 5,
                WatchKind::Write => 6,
                WatchKind::Access => 7,
            };
            Ok(Comparator {
                comp,
                mask: Some(log2),
                function,
            })
        }
        DwtVersion::V8m => {
            if log2 > 2 {
                return Err(WatchRangeError::V8mSize { len });
            }
            let matching = match kind {
                WatchKind::Access => 0b0100,
                WatchKind::Write => 0b0101,
                WatchKind::Read => 0b0110,
            };
            const ACTION_DEBUG_EVENT: u32 = 0b01 << 4;
            Ok(Comparator {
                comp,
                mask: None,
                function: matching | ACTION_DEBUG_EVENT | (log2 << 10),
            })
        }
    }
}

/// The bits of `FUNCTION` that hold what was written (the rest are status or read-only IDs).
fn function_setting_bits(version: DwtVersion) -> u32 {
    match version {
        DwtVersion::V7m => 0xF,
        DwtVersion::V8m => 0xF | (0b11 << 4) | (0b11 << 10),
    }
}

/// 32-bit access to the debug registers (a halted core, or a mock in tests).
pub trait WordAccess {
    /// Reads one word.
    fn read_word(&mut self, addr: u64) -> Result<u32>;
    /// Writes one word.
    fn write_word(&mut self, addr: u64, value: u32) -> Result<()>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    addr: u64,
    len: u64,
    kind: WatchKind,
}

/// The DWT comparators memlife owns and what each watches.
#[derive(Debug)]
pub struct Dwt {
    version: DwtVersion,
    /// `None` until the first watchpoint reads `NUMCOMP`.
    slots: Option<Vec<Option<Slot>>>,
}

impl Dwt {
    /// A DWT of this version, not touched yet.
    pub fn new(version: DwtVersion) -> Self {
        Dwt {
            version,
            slots: None,
        }
    }

    fn slots(&mut self, mem: &mut dyn WordAccess) -> Result<&mut Vec<Option<Slot>>> {
        if self.slots.is_none() {
            let demcr = mem.read_word(DEMCR)?;
            if demcr & DEMCR_TRCENA == 0 {
                mem.write_word(DEMCR, demcr | DEMCR_TRCENA)?;
            }
            let count = (mem.read_word(DWT_CTRL)? >> 28) as usize;
            self.slots = Some(vec![None; count]);
        }
        Ok(self.slots.get_or_insert_with(Vec::new))
    }

    /// How many comparators the core has (reads `NUMCOMP` the first time).
    #[cfg(test)]
    fn count(&mut self, mem: &mut dyn WordAccess) -> Result<usize> {
        Ok(self.slots(mem)?.len())
    }

    /// Programs a free comparator; a clear error when all are in use or the range cannot be.
    pub fn add(
        &mut self,
        mem: &mut dyn WordAccess,
        addr: u64,
        len: u64,
        kind: WatchKind,
    ) -> Result<()> {
        let version = self.version;
        // A range the hardware cannot match is refused (gdb then says it cannot set the
        // watchpoint), not a broken link that would end a gdb session.
        let enc =
            encode(version, addr, len, kind).map_err(|e| TargetError::Rejected(e.to_string()))?;
        let slots = self.slots(mem)?;
        let total = slots.len();
        if total == 0 {
            return Err(TargetError::Unsupported(
                "data watchpoints (this core's DWT has no comparators)",
            ));
        }
        let Some(n) = slots.iter().position(Option::is_none) else {
            return Err(TargetError::Exhausted {
                what: "DWT watchpoint comparators",
                count: total as u32,
            });
        };
        let regs = registers(n);
        // Disable first, so a half-programmed comparator never fires.
        mem.write_word(regs.function, 0)?;
        mem.write_word(regs.comp, enc.comp)?;
        if let Some(m) = enc.mask {
            mem.write_word(regs.mask, m)?;
            let stuck = mem.read_word(regs.mask)?;
            if stuck != m {
                return Err(TargetError::Rejected(format!(
                    "this DWT watches at most {} bytes per comparator, not {len}",
                    1u64 << stuck
                )));
            }
        }
        mem.write_word(regs.function, enc.function)?;
        let settings = function_setting_bits(version);
        let back = mem.read_word(regs.function)?;
        if back & settings != enc.function & settings {
            mem.write_word(regs.function, 0)?;
            return Err(TargetError::Unsupported(
                "data address matching on this DWT comparator",
            ));
        }
        if let Some(slots) = self.slots.as_mut() {
            slots[n] = Some(Slot { addr, len, kind });
        }
        Ok(())
    }

    /// Disables the comparator that watches exactly this range and kind.
    pub fn remove(
        &mut self,
        mem: &mut dyn WordAccess,
        addr: u64,
        len: u64,
        kind: WatchKind,
    ) -> Result<()> {
        let want = Slot { addr, len, kind };
        let Some(slots) = self.slots.as_mut() else {
            return Err(TargetError::Rejected(format!(
                "no watchpoint at {addr:#010x} to remove"
            )));
        };
        let Some(n) = slots.iter().position(|s| *s == Some(want)) else {
            return Err(TargetError::Rejected(format!(
                "no watchpoint at {addr:#010x} ({len} bytes) to remove"
            )));
        };
        mem.write_word(registers(n).function, 0)?;
        slots[n] = None;
        Ok(())
    }

    /// After a watchpoint halt: the watch whose comparator fired (reading clears `MATCHED`).
    pub fn matched(&mut self, mem: &mut dyn WordAccess) -> Result<Option<(u64, WatchKind)>> {
        let used: Vec<(usize, Slot)> = match &self.slots {
            Some(slots) => slots
                .iter()
                .enumerate()
                .filter_map(|(n, s)| s.map(|s| (n, s)))
                .collect(),
            None => return Ok(None),
        };
        let mut hit = None;
        // Read every used FUNCTION register, so no stale MATCHED bit is left for the next stop.
        for (n, slot) in used {
            if mem.read_word(registers(n).function)? & FUNCTION_MATCHED != 0 && hit.is_none() {
                hit = Some((slot.addr, slot.kind));
            }
        }
        Ok(hit)
    }

    /// Disables every comparator memlife programmed (on disconnect).
    pub fn clear_all(&mut self, mem: &mut dyn WordAccess) -> Result<()> {
        if let Some(slots) = self.slots.as_mut() {
            for (n, s) in slots.iter_mut().enumerate() {
                if s.take().is_some() {
                    mem.write_word(registers(n).function, 0)?;
                }
            }
        }
        Ok(())
    }

    /// True when memlife has a watchpoint set.
    pub fn any(&self) -> bool {
        self.slots
            .as_ref()
            .is_some_and(|s| s.iter().any(Option::is_some))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::HashMap;

    use super::*;

    /// A DWT in memory: `NUMCOMP` comparators, a MASK that holds at most `max_mask`, FUNCTION
    /// registers that keep only the bits a real one would.
    struct FakeDwt {
        words: HashMap<u64, u32>,
        max_mask: u32,
        function_bits: u32,
        writes: Vec<(u64, u32)>,
    }

    impl FakeDwt {
        fn new(numcomp: u32, max_mask: u32, version: DwtVersion) -> Self {
            let mut words = HashMap::new();
            words.insert(DWT_CTRL, numcomp << 28 | 0x0400_0000);
            words.insert(DEMCR, 0);
            FakeDwt {
                words,
                max_mask,
                function_bits: function_setting_bits(version) | FUNCTION_MATCHED,
                writes: Vec::new(),
            }
        }
        fn is_function(addr: u64) -> bool {
            addr >= DWT_COMP0 && (addr - DWT_COMP0) % 16 == 8
        }
        fn is_mask(addr: u64) -> bool {
            addr >= DWT_COMP0 && (addr - DWT_COMP0) % 16 == 4
        }
    }

    impl WordAccess for FakeDwt {
        fn read_word(&mut self, addr: u64) -> Result<u32> {
            let v = self.words.get(&addr).copied().unwrap_or(0);
            if Self::is_function(addr) {
                self.words.insert(addr, v & !FUNCTION_MATCHED);
            }
            Ok(v)
        }
        fn write_word(&mut self, addr: u64, value: u32) -> Result<()> {
            self.writes.push((addr, value));
            let v = if Self::is_mask(addr) {
                value.min(self.max_mask)
            } else if Self::is_function(addr) {
                value & self.function_bits & !FUNCTION_MATCHED
            } else {
                value
            };
            self.words.insert(addr, v);
            Ok(())
        }
    }

    #[test]
    fn v7m_encoding() {
        let c = encode(DwtVersion::V7m, 0x2000_0100, 4, WatchKind::Write).unwrap();
        assert_eq!(
            c,
            Comparator {
                comp: 0x2000_0100,
                mask: Some(2),
                function: 6
            }
        );
        assert_eq!(
            encode(DwtVersion::V7m, 0x2000_0000, 1, WatchKind::Read)
                .unwrap()
                .function,
            5
        );
        let a = encode(DwtVersion::V7m, 0x2000_0000, 256, WatchKind::Access).unwrap();
        assert_eq!((a.mask, a.function), (Some(8), 7));
    }

    #[test]
    fn v8m_encoding() {
        let w = encode(DwtVersion::V8m, 0x2000_0100, 4, WatchKind::Write).unwrap();
        // DATAVSIZE[11:10] = 2 (word), ACTION[5:4] = 1 (debug event), MATCH[3:0] = 5 (write).
        assert_eq!(w.function, (2 << 10) | (1 << 4) | 5);
        assert_eq!(w.function, 0x815);
        assert_eq!(w.mask, None);
        let r = encode(DwtVersion::V8m, 0x2000_0101, 1, WatchKind::Read).unwrap();
        assert_eq!(r.function, (1 << 4) | 6);
        let a = encode(DwtVersion::V8m, 0x2000_0102, 2, WatchKind::Access).unwrap();
        assert_eq!(a.function, (1 << 10) | (1 << 4) | 4);
        assert!(encode(DwtVersion::V8m, 0x2000_0000, 8, WatchKind::Write).is_err());
    }

    #[test]
    fn invalid_ranges() {
        let v7 = |addr, len| encode(DwtVersion::V7m, addr, len, WatchKind::Write);
        for (addr, len) in [(0x2000_0002, 4), (0x2000_0000, 12), (0x2000_0000, 0)] {
            assert_eq!(
                v7(addr, len),
                Err(WatchRangeError::NotNaturallyAligned { addr, len })
            );
        }
        let e = v7(0x1_0000_0000, 4).unwrap_err();
        assert_eq!(
            e,
            WatchRangeError::Beyond32Bits {
                addr: 0x1_0000_0000
            }
        );
        assert_eq!(e.to_string(), "address 0x100000000 is beyond 32 bits");
        let e = v7(0, 1 << 32).unwrap_err();
        assert_eq!(e, WatchRangeError::TooLarge { len: 1 << 32 });
        let e = encode(DwtVersion::V8m, 0x2000_0000, 8, WatchKind::Write).unwrap_err();
        assert_eq!(e, WatchRangeError::V8mSize { len: 8 });
        assert_eq!(
            e.to_string(),
            "on ARMv8-M memlife watches 1, 2 or 4 bytes per comparator, not 8"
        );
    }

    #[test]
    fn a_range_one_comparator_cannot_match_is_refused_not_a_broken_link() {
        let mut mem = FakeDwt::new(4, 15, DwtVersion::V7m);
        let mut dwt = Dwt::new(DwtVersion::V7m);
        let e = dwt
            .add(&mut mem, 0x2000_0002, 4, WatchKind::Write)
            .unwrap_err();
        // gdb's `watch` on such a range must hear "cannot set" and go on (memlife serve ends
        // the session on a transport error).
        assert_eq!(e.kind(), memlife_core::ErrorKind::Unsupported, "{e}");
        assert_eq!(
            e.to_string(),
            "a DWT comparator watches a naturally aligned power-of-two range; 4 bytes at 0x20000002 is not one"
        );
        assert!(mem.writes.is_empty(), "nothing programmed");
    }

    #[test]
    fn register_addresses() {
        let r = |comp, mask, function| ComparatorRegisters {
            comp,
            mask,
            function,
        };
        assert_eq!(registers(0), r(0xE000_1020, 0xE000_1024, 0xE000_1028));
        assert_eq!(registers(3), r(0xE000_1050, 0xE000_1054, 0xE000_1058));
    }

    #[test]
    fn programs_comparators_and_enables_trcena() {
        let mut mem = FakeDwt::new(4, 15, DwtVersion::V7m);
        let mut dwt = Dwt::new(DwtVersion::V7m);
        dwt.add(&mut mem, 0x2000_0010, 4, WatchKind::Write).unwrap();
        assert_eq!(mem.words[&DEMCR] & DEMCR_TRCENA, DEMCR_TRCENA);
        assert_eq!(mem.words[&0xE000_1020], 0x2000_0010);
        assert_eq!(mem.words[&0xE000_1024], 2);
        assert_eq!(mem.words[&0xE000_1028], 6);
        dwt.add(&mut mem, 0x2000_0020, 2, WatchKind::Read).unwrap();
        assert_eq!(mem.words[&0xE000_1030], 0x2000_0020);
        assert_eq!(mem.words[&0xE000_1038], 5);
        assert_eq!(dwt.count(&mut mem).unwrap(), 4);
    }

    #[test]
    fn runs_out_with_the_count() {
        let mut mem = FakeDwt::new(2, 15, DwtVersion::V7m);
        let mut dwt = Dwt::new(DwtVersion::V7m);
        dwt.add(&mut mem, 0x2000_0000, 4, WatchKind::Write).unwrap();
        dwt.add(&mut mem, 0x2000_0004, 4, WatchKind::Write).unwrap();
        let e = dwt
            .add(&mut mem, 0x2000_0008, 4, WatchKind::Write)
            .unwrap_err();
        assert!(matches!(e, TargetError::Exhausted { count: 2, .. }), "{e}");
        assert!(e.to_string().contains('2'), "{e}");
        // Freeing one makes room again, in the freed comparator.
        dwt.remove(&mut mem, 0x2000_0000, 4, WatchKind::Write)
            .unwrap();
        assert_eq!(mem.words[&0xE000_1028], 0);
        dwt.add(&mut mem, 0x2000_0008, 4, WatchKind::Access)
            .unwrap();
        assert_eq!(mem.words[&0xE000_1020], 0x2000_0008);
        assert_eq!(mem.words[&0xE000_1028], 7);
    }

    #[test]
    fn mask_limit_is_read_back() {
        let mut mem = FakeDwt::new(4, 15, DwtVersion::V7m);
        let mut dwt = Dwt::new(DwtVersion::V7m);
        let e = dwt.add(&mut mem, 0, 1 << 16, WatchKind::Write).unwrap_err();
        assert!(e.to_string().contains("32768"), "{e}");
        // The failed comparator was not kept.
        for _ in 0..4 {
            dwt.add(&mut mem, 0x2000_0000, 4, WatchKind::Write).unwrap();
        }
    }

    #[test]
    fn no_comparators() {
        let mut mem = FakeDwt::new(0, 15, DwtVersion::V7m);
        let mut dwt = Dwt::new(DwtVersion::V7m);
        let e = dwt
            .add(&mut mem, 0x2000_0000, 4, WatchKind::Write)
            .unwrap_err();
        assert!(matches!(e, TargetError::Unsupported(_)), "{e}");
    }

    #[test]
    fn matched_bit_names_the_comparator() {
        let mut mem = FakeDwt::new(4, 15, DwtVersion::V8m);
        let mut dwt = Dwt::new(DwtVersion::V8m);
        dwt.add(&mut mem, 0x2000_0000, 4, WatchKind::Write).unwrap();
        dwt.add(&mut mem, 0x2000_0040, 1, WatchKind::Read).unwrap();
        assert_eq!(dwt.matched(&mut mem).unwrap(), None);
        // The hardware sets MATCHED on comparator 1.
        let f1 = registers(1).function;
        *mem.words.get_mut(&f1).unwrap() |= FUNCTION_MATCHED;
        assert_eq!(
            dwt.matched(&mut mem).unwrap(),
            Some((0x2000_0040, WatchKind::Read))
        );
        // Reading cleared it.
        assert_eq!(dwt.matched(&mut mem).unwrap(), None);
    }

    #[test]
    fn unsupported_match_type_does_not_stick() {
        let mut mem = FakeDwt::new(1, 15, DwtVersion::V8m);
        mem.function_bits = 0; // a comparator that only does cycle counting
        let mut dwt = Dwt::new(DwtVersion::V8m);
        let e = dwt
            .add(&mut mem, 0x2000_0000, 4, WatchKind::Write)
            .unwrap_err();
        assert!(matches!(e, TargetError::Unsupported(_)), "{e}");
        assert!(!dwt.any());
    }

    #[test]
    fn clear_all_disables_only_ours() {
        let mut mem = FakeDwt::new(4, 15, DwtVersion::V7m);
        let mut dwt = Dwt::new(DwtVersion::V7m);
        dwt.add(&mut mem, 0x2000_0000, 4, WatchKind::Write).unwrap();
        mem.writes.clear();
        dwt.clear_all(&mut mem).unwrap();
        assert_eq!(mem.writes, vec![(0xE000_1028, 0)]);
        assert!(!dwt.any());
    }
}
