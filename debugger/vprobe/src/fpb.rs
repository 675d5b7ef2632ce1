//! The Flash Patch and Breakpoint unit (FPB, revision 1 as on a Cortex-M4): six code
//! comparators and two literal comparators, as an STM32F4 has.
//!
//! - `FP_CTRL` (`0xE0002000`): bit 0 `ENABLE`, bit 1 `KEY` (a write without it is ignored),
//!   `NUM_CODE` in bits 14:12 and 7:4, `NUM_LIT` in 11:8, `REV` in 31:28 (0: revision 1).
//! - `FP_REMAP` (`0xE0002004`): reads 0, remapping not supported (bit 29 clear).
//! - `FP_COMPn` (`0xE0002008 + 4n`): bit 0 `ENABLE`, bits 28:2 the word address, bits 31:30
//!   `REPLACE` (1: break on the lower halfword, 2: the upper, 3: both).
//!
//! An enabled code comparator under an enabled unit is a hardware breakpoint (`Z1`) at its
//! address; the literal comparators remap data, which QEMU cannot do, so enabling one is an error.

/// `FP_CTRL`.
pub const FP_CTRL: u32 = 0xE000_2000;
/// `FP_REMAP`.
pub const FP_REMAP: u32 = 0xE000_2004;
/// `FP_COMP0`.
pub const FP_COMP0: u32 = 0xE000_2008;
/// Code comparators on an STM32F4.
pub const NUM_CODE: usize = 6;
/// Literal comparators on an STM32F4.
pub const NUM_LIT: usize = 2;

/// A write the FPB model refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FpbError {
    /// `FP_REMAP` written: flash patching, which QEMU cannot do.
    #[error(
        "FP_REMAP ({:#010x}) write {value:#010x}: flash patching is not modelled (QEMU cannot remap flash)",
        FP_REMAP
    )]
    FlashPatch {
        /// The value written.
        value: u32,
    },
    /// The address is none of the unit's registers.
    #[error("{addr:#010x} is not an FPB register")]
    NotARegister {
        /// The address written.
        addr: u32,
    },
    /// A literal comparator enabled: literal remapping, which QEMU cannot do.
    #[error(
        "FP_COMP{index} ({addr:#010x}) is a literal comparator: literal remapping is not modelled"
    )]
    LiteralComparator {
        /// Comparator number (`FP_COMPn`).
        index: usize,
        /// Its address.
        addr: u32,
    },
    /// A code comparator enabled with `REPLACE` 0: code remapping, not a breakpoint.
    #[error(
        "FP_COMP{index} ({addr:#010x}) = {value:#010x}: REPLACE 0 remaps code, which is not modelled"
    )]
    CodeRemap {
        /// Comparator number (`FP_COMPn`).
        index: usize,
        /// Its address.
        addr: u32,
        /// The value written.
        value: u32,
    },
}

/// The unit's state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fpb {
    enabled: bool,
    comps: [u32; NUM_CODE + NUM_LIT],
}

impl Fpb {
    /// Whether `addr` is one of the unit's registers (not its ID block).
    pub fn contains(addr: u32) -> bool {
        addr == FP_CTRL || addr == FP_REMAP || Self::comp_index(addr).is_some()
    }

    fn comp_index(addr: u32) -> Option<usize> {
        let off = addr.checked_sub(FP_COMP0)?;
        let i = (off / 4) as usize;
        (off % 4 == 0 && i < NUM_CODE + NUM_LIT).then_some(i)
    }

    /// Reads one register.
    pub fn read(&self, addr: u32) -> u32 {
        if addr == FP_CTRL {
            let code = NUM_CODE as u32;
            ((code >> 4) & 0x7) << 12
                | (NUM_LIT as u32) << 8
                | (code & 0xF) << 4
                | u32::from(self.enabled)
        } else if addr == FP_REMAP {
            0
        } else {
            Self::comp_index(addr).map_or(0, |i| self.comps[i])
        }
    }

    /// Writes one register.
    pub fn write(&mut self, addr: u32, value: u32) -> Result<(), FpbError> {
        if addr == FP_CTRL {
            if value & 0b10 != 0 {
                self.enabled = value & 1 != 0;
            }
            return Ok(());
        }
        if addr == FP_REMAP {
            return Err(FpbError::FlashPatch { value });
        }
        let Some(index) = Self::comp_index(addr) else {
            return Err(FpbError::NotARegister { addr });
        };
        if index >= NUM_CODE && value & 1 != 0 {
            return Err(FpbError::LiteralComparator { index, addr });
        }
        if index < NUM_CODE && value & 1 != 0 && value >> 30 == 0 {
            return Err(FpbError::CodeRemap { index, addr, value });
        }
        self.comps[index] = value;
        Ok(())
    }

    /// The breakpoint addresses the unit halts on now.
    pub fn breakpoints(&self) -> Vec<u64> {
        if !self.enabled {
            return Vec::new();
        }
        let mut out = Vec::new();
        for &c in &self.comps[..NUM_CODE] {
            if c & 1 == 0 {
                continue;
            }
            let word = u64::from(c & 0x1FFF_FFFC);
            let replace = c >> 30;
            if replace & 1 != 0 {
                out.push(word);
            }
            if replace & 2 != 0 {
                out.push(word + 2);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctrl_reports_six_code_and_two_literal_comparators() {
        let f = Fpb::default();
        let ctrl = f.read(FP_CTRL);
        let num_code = ((ctrl >> 8) & 0x70) | ((ctrl >> 4) & 0xF);
        assert_eq!(num_code, 6);
        assert_eq!((ctrl >> 8) & 0xF, 2);
        assert_eq!(ctrl >> 28, 0, "revision 1");
        assert_eq!(f.read(FP_REMAP), 0);
    }

    #[test]
    fn enabled_comparators_are_breakpoints_only_while_the_unit_is_enabled() {
        let mut f = Fpb::default();
        f.write(FP_COMP0, 0x0800_0100 | 1 << 30 | 1).unwrap();
        f.write(FP_COMP0 + 4, 0x0800_0200 | 2 << 30 | 1).unwrap();
        f.write(FP_COMP0 + 8, 0x0800_0300 | 1 << 30).unwrap(); // not enabled
        assert!(f.breakpoints().is_empty(), "unit disabled");
        f.write(FP_CTRL, 1).unwrap(); // no KEY: ignored
        assert!(f.breakpoints().is_empty());
        f.write(FP_CTRL, 0b11).unwrap();
        assert_eq!(f.read(FP_CTRL) & 1, 1);
        assert_eq!(f.breakpoints(), vec![0x0800_0100, 0x0800_0202]);
        f.write(FP_COMP0, 0).unwrap();
        assert_eq!(f.breakpoints(), vec![0x0800_0202]);
        f.write(FP_CTRL, 0b10).unwrap();
        assert!(f.breakpoints().is_empty());
    }

    #[test]
    fn both_halfwords() {
        let mut f = Fpb::default();
        f.write(FP_CTRL, 0b11).unwrap();
        f.write(FP_COMP0, 0x0800_0100 | 3 << 30 | 1).unwrap();
        assert_eq!(f.breakpoints(), vec![0x0800_0100, 0x0800_0102]);
    }

    #[test]
    fn what_qemu_cannot_do_is_refused_by_name() {
        let mut f = Fpb::default();
        let e = f.write(FP_COMP0 + 4 * 6, 0x2000_0000 | 1).unwrap_err();
        assert_eq!(
            e,
            FpbError::LiteralComparator {
                index: 6,
                addr: 0xE000_2020
            }
        );
        let text = e.to_string();
        assert!(
            text.contains("FP_COMP6") && text.contains("literal"),
            "{text}"
        );
        let e = f.write(FP_REMAP, 0x2000_0000).unwrap_err();
        assert_eq!(e, FpbError::FlashPatch { value: 0x2000_0000 });
        assert!(e.to_string().contains("FP_REMAP (0xe0002004)"), "{e}");
        let e = f.write(FP_COMP0, 0x0800_0100 | 1).unwrap_err();
        assert!(matches!(e, FpbError::CodeRemap { index: 0, .. }), "{e}");
        assert!(e.to_string().contains("REPLACE"), "{e}");
        let e = f.write(FP_COMP0 + 4 * 8, 0).unwrap_err();
        assert_eq!(e, FpbError::NotARegister { addr: 0xE000_2028 });
        assert_eq!(e.to_string(), "0xe0002028 is not an FPB register");
        // Nothing refused was kept.
        assert_eq!(f.read(FP_COMP0), 0);
    }
}
