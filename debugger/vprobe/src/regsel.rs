//! `DCRSR.REGSEL` (the Cortex-M debug register selector) as GDB register numbers.
//!
//! The debugger names a core register by a 7-bit selector (ARMv7-M `DCRSR`): 0-12 are r0-r12,
//! 13 the active sp, 14 lr, 15 the return address (pc), 16 xPSR, 17 msp, 18 psp, 20 the packed
//! CONTROL[31:24] FAULTMASK[23:16] BASEPRI[15:8] PRIMASK[7:0], 0x21 FPSCR and 0x40+n FP `s<n>`.
//! QEMU's gdbstub names registers in its target description; this table maps each selector to
//! those names once, at connection, so an unknown selector or a register QEMU does not describe
//! is an error that names it.

use std::collections::HashMap;

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

/// The selector table of one target description.
#[derive(Debug, Clone, Default)]
pub struct RegMap {
    by_name: HashMap<String, (u16, u32)>,
}

impl RegMap {
    /// From the target description's registers: (name, GDB number, size in bits).
    pub fn new<'a>(regs: impl IntoIterator<Item = (&'a str, u32, u32)>) -> RegMap {
        let by_name = regs
            .into_iter()
            .filter_map(|(name, num, bits)| {
                u16::try_from(num)
                    .ok()
                    .map(|n| (name.to_ascii_lowercase(), (n, bits)))
            })
            .collect();
        RegMap { by_name }
    }

    fn reg(&self, name: &str) -> Option<u16> {
        self.by_name.get(name).map(|&(n, _)| n)
    }

    /// Where selector `sel` lives, or a message naming what is missing.
    pub fn source(&self, sel: u8) -> Result<Source, String> {
        let named = |name: &str| {
            self.reg(name).map(Source::Reg).ok_or_else(|| {
                format!(
                    "DCRSR.REGSEL {sel:#04x} ({name}): QEMU's target description has no register `{name}`"
                )
            })
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
                    *slot = self.reg(name).ok_or_else(|| {
                        format!(
                            "DCRSR.REGSEL {sel:#04x} (CONTROL/FAULTMASK/BASEPRI/PRIMASK): QEMU's target description has no register `{name}`"
                        )
                    })?;
                }
                Ok(Source::Packed(nums))
            }
            REGSEL_FPSCR => named("fpscr"),
            s if (REGSEL_S0..REGSEL_S0 + 32).contains(&s) => {
                let n = s - REGSEL_S0;
                if let Some(r) = self.reg(&format!("s{n}")) {
                    return Ok(Source::Reg(r));
                }
                let d = format!("d{}", n / 2);
                match self.by_name.get(&d) {
                    Some(&(reg, 64)) => Ok(Source::Half {
                        reg,
                        high: n % 2 == 1,
                    }),
                    _ => Err(format!(
                        "DCRSR.REGSEL {sel:#04x} (s{n}): QEMU's target description has neither `s{n}` nor a 64-bit `{d}`"
                    )),
                }
            }
            other => Err(format!(
                "DCRSR.REGSEL {other:#04x} is not a register the virtual probe models (0-18, 0x14, 0x21, 0x40-0x5f)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qemu_like() -> RegMap {
        let mut regs: Vec<(String, u32, u32)> = (0..13).map(|i| (format!("r{i}"), i, 32)).collect();
        regs.extend([
            ("sp".into(), 13, 32),
            ("lr".into(), 14, 32),
            ("pc".into(), 15, 32),
            ("xpsr".into(), 25, 32),
        ]);
        regs.extend((0..16).map(|i| (format!("d{i}"), 26 + i, 64)));
        regs.extend([
            ("fpscr".into(), 42, 32),
            ("msp".into(), 43, 32),
            ("psp".into(), 44, 32),
            ("primask".into(), 45, 32),
            ("basepri".into(), 46, 32),
            ("faultmask".into(), 47, 32),
            ("control".into(), 48, 32),
        ]);
        RegMap::new(regs.iter().map(|(n, r, b)| (n.as_str(), *r, *b)))
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
        assert!(e.contains("0x13"), "{e}");
        let bare = RegMap::new([("r0", 0, 32)]);
        let e = bare.source(17).unwrap_err();
        assert!(e.contains("msp"), "{e}");
        let e = bare.source(REGSEL_S0).unwrap_err();
        assert!(e.contains("s0") && e.contains("d0"), "{e}");
    }
}
