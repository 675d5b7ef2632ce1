//! The register file of a halted Cortex-M core: r0..r15 and xPSR.

use super::{GDB_XPSR, LR, PC, SP};
use crate::{Register, Registers, Result};

/// Bytes of a `g` packet for [`super::GDB_TARGET_XML`]: 17 little-endian words.
pub const GDB_G_LEN: usize = 17 * 4;

/// r0..r15 and xPSR of a Cortex-M core.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CoreRegisters {
    /// r0..r15 (sp = 13, lr = 14, pc = 15).
    pub r: [u32; 16],
    /// xPSR: flags in bits 31..28, the Thumb bit 24, IT state in bits 26..25 and 15..10,
    /// the exception number in 8..0.
    pub xpsr: u32,
}

impl CoreRegisters {
    /// Registers from their values.
    pub fn new(r: [u32; 16], xpsr: u32) -> Self {
        CoreRegisters { r, xpsr }
    }

    /// The stack pointer (r13).
    pub fn sp(&self) -> u32 {
        self.r[SP]
    }

    /// The link register (r14).
    pub fn lr(&self) -> u32 {
        self.r[LR]
    }

    /// The program counter (r15).
    pub fn pc(&self) -> u32 {
        self.r[PC]
    }

    /// Reads r0..r15 and xPSR by GDB number from a halted target.
    pub fn read<R: Registers + ?Sized>(target: &mut R) -> Result<Self> {
        let mut regs = Self::read_r0_to_r15(target)?;
        // A 32-bit core's registers fit in 32 bits.
        regs.xpsr = target.read_register(Register::Numbered(GDB_XPSR))? as u32;
        Ok(regs)
    }

    /// Reads r0..r15 only, leaving xPSR 0: for unwinding, which never looks at xPSR, where a
    /// probe would pay one more transfer for it at every traced allocation. Backends serve these
    /// from one `g` reply; `read_all_registers` would also fetch the FPU bank one register at a
    /// time.
    pub fn read_r0_to_r15<R: Registers + ?Sized>(target: &mut R) -> Result<Self> {
        let mut regs = CoreRegisters::default();
        for (n, slot) in (0u16..).zip(regs.r.iter_mut()) {
            *slot = target.read_register(Register::Numbered(n))? as u32;
        }
        Ok(regs)
    }

    /// Writes to `target` every register that differs from `before` (what it holds now), by
    /// GDB number: r0..r15, then xPSR.
    pub fn write_changed<R: Registers + ?Sized>(
        &self,
        target: &mut R,
        before: &CoreRegisters,
    ) -> Result<()> {
        for (n, (new, old)) in (0u16..).zip(self.r.iter().zip(before.r.iter())) {
            if new != old {
                target.write_register(Register::Numbered(n), u64::from(*new))?;
            }
        }
        if self.xpsr != before.xpsr {
            target.write_register(Register::Numbered(GDB_XPSR), u64::from(self.xpsr))?;
        }
        Ok(())
    }

    /// Registers from `(name, value)` pairs as a backend or a snapshot lists them (`r0`..`r12`,
    /// `sp`/`r13`, `lr`/`r14`, `pc`/`r15`, `xpsr`; other names are ignored). `None` unless `pc`
    /// and `sp` are both present; other missing registers read as 0.
    pub fn from_named(regs: &[(String, u64)]) -> Option<Self> {
        let mut out = CoreRegisters::default();
        let (mut sp, mut pc) = (false, false);
        for (name, value) in regs {
            // Register values of a 32-bit core fit in 32 bits; wider values are a backend bug.
            let value = *value as u32;
            if name == "xpsr" {
                out.xpsr = value;
                continue;
            }
            let Some(n) = core_index(name) else {
                continue;
            };
            out.r[n] = value;
            sp |= n == SP;
            pc |= n == PC;
        }
        (sp && pc).then_some(out)
    }

    /// The `g` packet image: r0..r15 then xPSR, little-endian.
    pub fn to_gdb_g_bytes(&self) -> [u8; GDB_G_LEN] {
        let mut out = [0u8; GDB_G_LEN];
        for (slot, v) in out
            .chunks_exact_mut(4)
            .zip(self.r.iter().chain(std::iter::once(&self.xpsr)))
        {
            slot.copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// Registers from a `g` packet image; `None` when it is shorter than 17 words (extra bytes,
    /// such as FPU registers a client sends, are ignored).
    pub fn from_gdb_g_bytes(bytes: &[u8]) -> Option<Self> {
        let mut words = bytes
            .get(..GDB_G_LEN)?
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        let mut out = CoreRegisters::default();
        for r in &mut out.r {
            *r = words.next()?;
        }
        out.xpsr = words.next()?;
        Some(out)
    }
}

/// r0..r15 by the names GDB target descriptions use.
fn core_index(name: &str) -> Option<usize> {
    match name {
        "sp" => Some(SP),
        "lr" => Some(LR),
        "pc" => Some(PC),
        other => other
            .strip_prefix('r')
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n < 16),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn g_packet_is_r0_to_pc_then_xpsr() {
        let mut regs = CoreRegisters::default();
        for (i, r) in regs.r.iter_mut().enumerate() {
            *r = i as u32;
        }
        regs.xpsr = 0x0100_0000;
        let bytes = regs.to_gdb_g_bytes();
        assert_eq!(&bytes[60..64], &15u32.to_le_bytes());
        assert_eq!(&bytes[64..68], &0x0100_0000u32.to_le_bytes());
        assert_eq!(CoreRegisters::from_gdb_g_bytes(&bytes), Some(regs));
        assert_eq!(CoreRegisters::from_gdb_g_bytes(&bytes[..60]), None);
        let mut longer = bytes.to_vec();
        longer.extend_from_slice(&[0xff; 8]);
        assert_eq!(CoreRegisters::from_gdb_g_bytes(&longer), Some(regs));
    }

    #[test]
    fn named_registers_need_pc_and_sp() {
        let named = |pairs: &[(&str, u64)]| {
            let v: Vec<(String, u64)> = pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect();
            CoreRegisters::from_named(&v)
        };
        let r = named(&[
            ("r0", 1),
            ("r13", 0x2000_1000),
            ("pc", 0x0800_0100),
            ("xpsr", 0x0100_0000),
            ("msp", 7),
        ])
        .unwrap();
        assert_eq!(
            (r.r[0], r.sp(), r.pc(), r.xpsr),
            (1, 0x2000_1000, 0x0800_0100, 0x0100_0000)
        );
        assert_eq!(named(&[("pc", 1)]), None);
        assert_eq!(named(&[("sp", 1), ("r16", 2)]), None);
    }

    /// A register file by GDB number that records writes.
    #[derive(Default)]
    struct Fake {
        regs: std::collections::BTreeMap<u16, u64>,
        writes: Vec<u16>,
    }

    impl Registers for Fake {
        fn read_register(&mut self, reg: Register) -> Result<u64> {
            let n = super::super::gdb_number(reg).unwrap();
            Ok(self.regs.get(&n).copied().unwrap_or(0))
        }
        fn write_register(&mut self, reg: Register, value: u64) -> Result<()> {
            let n = super::super::gdb_number(reg).unwrap();
            self.writes.push(n);
            self.regs.insert(n, value);
            Ok(())
        }
        fn read_all_registers(&mut self) -> Result<Vec<(String, u64)>> {
            Ok(Vec::new())
        }
    }

    #[test]
    fn reads_by_gdb_number_and_writes_only_what_changed() {
        let mut t = Fake::default();
        for n in 0..16 {
            t.regs.insert(n, 0x100 + u64::from(n));
        }
        t.regs.insert(GDB_XPSR, 0x6100_0000);
        let before = CoreRegisters::read(&mut t).unwrap();
        assert_eq!((before.r[7], before.xpsr), (0x107, 0x6100_0000));
        assert_eq!(CoreRegisters::read_r0_to_r15(&mut t).unwrap().xpsr, 0);
        let mut after = before;
        after.r[SP] -= 8;
        after.xpsr = 0x2100_0000;
        after.write_changed(&mut t, &before).unwrap();
        assert_eq!(t.writes, vec![13, GDB_XPSR]);
        assert_eq!(CoreRegisters::read(&mut t).unwrap(), after);
    }
}
