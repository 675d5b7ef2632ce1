//! The Cortex-M architecture for gdbstub: the `org.gnu.gdb.arm.m-profile` register set, as
//! [`memlife_core::cortex_m`] describes it (numbering, target description, `g` packet layout).

use std::num::NonZeroUsize;

use gdbstub::arch::{Arch, RegId, Registers};
use memlife_core::cortex_m::{self, CoreRegisters, GDB_TARGET_XML, GDB_XPSR};

/// The Cortex-M (ARMv6-M/v7-M/v8-M) core, type-level only.
pub enum CortexM {}

impl Arch for CortexM {
    type Usize = u32;
    type Registers = CortexMRegs;
    // gdb sends 2 (Thumb), 3 (Thumb-2) or 4 (ARM); the backend picks its own.
    type BreakpointKind = usize;
    type RegId = CortexMRegId;

    fn target_description_xml() -> Option<&'static str> {
        Some(GDB_TARGET_XML)
    }
}

/// The core registers in gdbstub's register trait (a foreign trait needs a local type), with
/// those the server does not know (a task's registers an exception frame it cannot read holds).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CortexMRegs(pub CoreRegisters, pub Unknown);

/// Registers not known: bit n is r<n>, bit 16 xPSR. gdb shows them `<unavailable>` (the `g`
/// packet sends `xx` for each of their bytes).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Unknown(pub u32);

impl Unknown {
    /// Every register.
    pub const ALL: Unknown = Unknown(0x1_FFFF);

    /// Whether the register at `index` (0..=15 for r0..r15, 16 for xPSR) is unknown.
    pub fn has(self, index: usize) -> bool {
        index < 17 && self.0 & (1 << index) != 0
    }
}

impl Registers for CortexMRegs {
    type ProgramCounter = u32;

    fn pc(&self) -> u32 {
        self.0.pc()
    }

    fn gdb_serialize(&self, mut write_byte: impl FnMut(Option<u8>)) {
        for (i, word) in self.0.to_gdb_g_bytes().chunks_exact(4).enumerate() {
            let known = !self.1.has(i);
            for &b in word {
                write_byte(known.then_some(b));
            }
        }
    }

    fn gdb_deserialize(&mut self, bytes: &[u8]) -> Result<(), ()> {
        self.0 = CoreRegisters::from_gdb_g_bytes(bytes).ok_or(())?;
        self.1 = Unknown::default();
        Ok(())
    }
}

/// One register by gdb number: r0..r15 are 0..15, xpsr is 25.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CortexMRegId {
    /// r0..r15 (13 = sp, 14 = lr, 15 = pc).
    Core(u8),
    /// xpsr.
    Xpsr,
}

impl CortexMRegId {
    /// The gdb register number, which memlife's backends use too.
    pub fn number(self) -> u16 {
        match self {
            CortexMRegId::Core(n) => u16::from(n),
            CortexMRegId::Xpsr => GDB_XPSR,
        }
    }
}

impl RegId for CortexMRegId {
    fn from_raw_id(id: usize) -> Option<(Self, Option<NonZeroUsize>)> {
        let n = u16::try_from(id).ok()?;
        let reg = if usize::from(n) <= cortex_m::PC {
            CortexMRegId::Core(u8::try_from(n).ok()?)
        } else if n == GDB_XPSR {
            CortexMRegId::Xpsr
        } else {
            return None;
        };
        Some((reg, NonZeroUsize::new(4)))
    }

    fn to_raw_id(&self) -> Option<usize> {
        Some(usize::from(self.number()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn g_packet_is_r0_to_pc_then_xpsr() {
        let mut regs = CortexMRegs::default();
        for (i, r) in regs.0.r.iter_mut().enumerate() {
            *r = i as u32;
        }
        regs.0.xpsr = 0x0100_0000;
        let mut bytes = Vec::new();
        regs.gdb_serialize(|b| bytes.push(b.unwrap()));
        assert_eq!(bytes.len(), 68);
        assert_eq!(&bytes[64..68], &0x0100_0000u32.to_le_bytes());
        let mut back = CortexMRegs::default();
        back.gdb_deserialize(&bytes).unwrap();
        assert_eq!(back, regs);
        assert!(back.gdb_deserialize(&bytes[..60]).is_err());
    }

    /// Unknown registers go out as `xx` bytes (None), the others as they are.
    #[test]
    fn unknown_registers_are_unavailable_in_the_g_packet() {
        let mut regs = CortexMRegs::default();
        regs.0.r[15] = 0x0800_1234;
        regs.1 = Unknown(1 << 4 | 1 << 16);
        let mut bytes = Vec::new();
        regs.gdb_serialize(|b| bytes.push(b));
        assert_eq!(bytes.len(), 68);
        assert!(bytes[16..20].iter().all(Option::is_none), "r4");
        assert!(bytes[64..68].iter().all(Option::is_none), "xpsr");
        assert_eq!(
            bytes[60..64],
            [Some(0x34), Some(0x12), Some(0x00), Some(0x08)]
        );
        let mut all = CortexMRegs(CoreRegisters::default(), Unknown::ALL);
        let mut n = 0;
        all.gdb_serialize(|b| n += usize::from(b.is_none()));
        assert_eq!(n, 68);
        all.gdb_deserialize(&[0; 68]).unwrap();
        assert_eq!(all.1, Unknown::default());
    }

    #[test]
    fn register_numbers_match_gdb() {
        assert_eq!(
            CortexMRegId::from_raw_id(25).map(|r| r.0),
            Some(CortexMRegId::Xpsr)
        );
        assert_eq!(
            CortexMRegId::from_raw_id(15).map(|r| r.0),
            Some(CortexMRegId::Core(15))
        );
        assert!(CortexMRegId::from_raw_id(16).is_none());
    }
}
