//! `DCRSR.REGSEL` (the Cortex-M debug register selector) as GDB register numbers.
//!
//! The debugger names a core register by a 7-bit selector (ARMv7-M `DCRSR`): 0-12 are r0-r12,
//! 13 the active sp, 14 lr, 15 the return address (pc), 16 xPSR, 17 msp, 18 psp, 20 the packed
//! `CONTROL[31:24]` `FAULTMASK[23:16]` `BASEPRI[15:8]` `PRIMASK[7:0]`, 0x21 FPSCR and 0x40+n
//! FP `s<n>`. QEMU's gdbstub names registers in its target description; this table maps each
//! selector to those names once, at connection, so an unknown selector or a register QEMU does
//! not describe is a [`RegselError`] that names it.

use std::collections::HashMap;

use memlife_rsp::RegisterInfo;

/// Where one selector's value lives in the GDB register file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A 32-bit GDB register.
    Reg(u16),
    /// Half of a 64-bit GDB register (`s<2n>` is the low word of `d<n>`).
    Half {
        /// The 64-bit register.
        reg: u16,
        /// The high word (odd `s<n>`).
        high: bool,
    },
    /// The four special registers packed into one word (selector 20), GDB numbers in the order
    /// PRIMASK, BASEPRI, FAULTMASK, CONTROL (byte 0 to 3).
    Packed([u16; 4]),
}

/// Selector 20: CONTROL, FAULTMASK, BASEPRI, PRIMASK in one word.
pub const REGSEL_SPECIAL: u8 = 0x14;
/// Selector of FPSCR.
pub const REGSEL_FPSCR: u8 = 0x21;
/// Selector of `s0`; `s<n>` is this plus n.
pub const REGSEL_S0: u8 = 0x40;

/// Why a `DCRSR.REGSEL` selector has no register behind it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegselError {
    /// The selector is none of those the virtual probe models.
    #[error(
        "DCRSR.REGSEL {selector:#04x} is not a register the virtual probe models (0-18, 0x14, 0x21, 0x40-0x5f)"
    )]
    Unknown {
        /// The 7-bit selector.
        selector: u8,
    },
    /// QEMU's target description lacks a register the selector needs.
    #[error(
        "DCRSR.REGSEL {selector:#04x} ({stands_for}): QEMU's target description has no register `{missing}`"
    )]
    NotDescribed {
        /// The 7-bit selector.
        selector: u8,
        /// What the selector names (`msp`, `CONTROL/FAULTMASK/BASEPRI/PRIMASK`).
        stands_for: String,
        /// The register the description lacks (`msp`, `basepri`).
        missing: String,
    },
    /// A single-precision register the description has neither as `s<n>` nor as half of a
    /// 64-bit `d<n/2>`.
    #[error(
        "DCRSR.REGSEL {selector:#04x} (s{single}): QEMU's target description has neither `s{single}` nor a 64-bit `d{}`",
        single / 2
    )]
    NoFloatRegister {
        /// The 7-bit selector.
        selector: u8,
        /// The `s<n>` register number.
        single: u8,
    },
}

/// The selector table of one target description.
#[derive(Debug, Clone, Default)]
pub struct RegMap {
    by_name: HashMap<String, (u16, u32)>,
}

impl RegMap {
    /// From the target description's registers (name, GDB number, size in bits).
    pub fn new<'a>(regs: impl IntoIterator<Item = &'a RegisterInfo>) -> RegMap {
        let by_name = regs
            .into_iter()
            .filter_map(|r| {
                u16::try_from(r.regnum)
                    .ok()
                    .map(|n| (r.name.to_ascii_lowercase(), (n, r.bitsize)))
            })
            .collect();
        RegMap { by_name }
    }

    fn reg(&self, name: &str) -> Option<u16> {
        self.by_name.get(name).map(|&(n, _)| n)
    }

    /// Where selector `sel` lives, or which register is missing.
    pub fn source(&self, sel: u8) -> Result<Source, RegselError> {
        let not_described = |stands_for: &str, missing: &str| RegselError::NotDescribed {
            selector: sel,
            stands_for: stands_for.to_string(),
            missing: missing.to_string(),
        };
        let named = |name: &str| {
            self.reg(name)
                .map(Source::Reg)
                .ok_or_else(|| not_described(name, name))
        };
        match sel {
            0..=12 => named(&format!("r{sel}")),
            13 => named("sp"),
            14 => named("lr"),
            15 => named("pc"),
            16 => named("xpsr"),
            17 => named("msp"),
            18 => named("psp"),
            REGSEL_SPECIAL => {
                let mut nums = [0u16; 4];
                for (slot, name) in
                    nums.iter_mut()
                        .zip(["primask", "basepri", "faultmask", "control"])
                {
                    *slot = self
                        .reg(name)
                        .ok_or_else(|| not_described("CONTROL/FAULTMASK/BASEPRI/PRIMASK", name))?;
                }
                Ok(Source::Packed(nums))
            }
            REGSEL_FPSCR => named("fpscr"),
            s if (REGSEL_S0..REGSEL_S0 + 32).contains(&s) => {
                let n = s - REGSEL_S0;
                if let Some(r) = self.reg(&format!("s{n}")) {
                    return Ok(Source::Reg(r));
                }
                match self.by_name.get(&format!("d{}", n / 2)) {
                    Some(&(reg, 64)) => Ok(Source::Half {
                        reg,
                        high: n % 2 == 1,
                    }),
                    _ => Err(RegselError::NoFloatRegister {
                        selector: sel,
                        single: n,
                    }),
                }
            }
            other => Err(RegselError::Unknown { selector: other }),
        }
    }
}

/// Register descriptions as QEMU's would list them, from (name, GDB number, bits).
#[cfg(test)]
pub(crate) fn described(regs: &[(&str, u32, u32)]) -> Vec<RegisterInfo> {
    regs.iter()
        .map(|&(name, regnum, bitsize)| RegisterInfo {
            name: name.to_string(),
            regnum,
            bitsize,
            offset: 0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qemu_like() -> RegMap {
        let mut names: Vec<String> = (0..13).map(|i| format!("r{i}")).collect();
        names.extend((0..16).map(|i| format!("d{i}")));
        let mut regs: Vec<(&str, u32, u32)> = names[..13]
            .iter()
            .zip(0..)
            .map(|(n, i)| (n.as_str(), i, 32))
            .collect();
        regs.extend([
            ("sp", 13, 32),
            ("lr", 14, 32),
            ("pc", 15, 32),
            ("xpsr", 25, 32),
        ]);
        regs.extend(
            names[13..]
                .iter()
                .zip(26..)
                .map(|(n, i)| (n.as_str(), i, 64)),
        );
        regs.extend([
            ("fpscr", 42, 32),
            ("msp", 43, 32),
            ("psp", 44, 32),
            ("primask", 45, 32),
            ("basepri", 46, 32),
            ("faultmask", 47, 32),
            ("control", 48, 32),
        ]);
        RegMap::new(&described(&regs))
    }
    #[test]
    fn core_registers_map_by_name() {
        let m = qemu_like();
        assert_eq!(m.source(0), Ok(Source::Reg(0)));
        assert_eq!(m.source(13), Ok(Source::Reg(13)));
        assert_eq!(m.source(15), Ok(Source::Reg(15)));
        assert_eq!(m.source(16), Ok(Source::Reg(25)));
        assert_eq!(m.source(17), Ok(Source::Reg(43)));
        assert_eq!(m.source(18), Ok(Source::Reg(44)));
        assert_eq!(
            m.source(REGSEL_SPECIAL),
            Ok(Source::Packed([45, 46, 47, 48]))
        );
        assert_eq!(m.source(REGSEL_FPSCR), Ok(Source::Reg(42)));
    }

    #[test]
    fn single_precision_registers_are_halves_of_doubles() {
        let m = qemu_like();
        assert_eq!(
            m.source(REGSEL_S0 + 3),
            Ok(Source::Half {
                reg: 27,
                high: true
            })
        );
        assert_eq!(
            m.source(REGSEL_S0 + 4),
            Ok(Source::Half {
                reg: 28,
                high: false
            })
        );
    }

    #[test]
    fn unknown_selectors_and_missing_registers_are_named() {
        let m = qemu_like();
        let e = m.source(19).unwrap_err();
        assert_eq!(e, RegselError::Unknown { selector: 0x13 });
        assert!(e.to_string().contains("0x13"), "{e}");
        let bare = RegMap::new(&described(&[("r0", 0, 32)]));
        let e = bare.source(17).unwrap_err();
        assert_eq!(
            e,
            RegselError::NotDescribed {
                selector: 17,
                stands_for: "msp".into(),
                missing: "msp".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "DCRSR.REGSEL 0x11 (msp): QEMU's target description has no register `msp`"
        );
        let e = bare.source(REGSEL_SPECIAL).unwrap_err();
        assert!(
            matches!(&e, RegselError::NotDescribed { missing, .. } if missing == "primask"),
            "{e}"
        );
        assert!(
            e.to_string().contains("CONTROL/FAULTMASK/BASEPRI/PRIMASK"),
            "{e}"
        );
        let e = bare.source(REGSEL_S0).unwrap_err();
        assert_eq!(
            e,
            RegselError::NoFloatRegister {
                selector: REGSEL_S0,
                single: 0
            }
        );
        let text = e.to_string();
        assert!(text.contains("`s0`") && text.contains("`d0`"), "{text}");
        let e = bare.source(REGSEL_S0 + 3).unwrap_err();
        assert!(e.to_string().contains("`d1`"), "{e}");
    }
}
