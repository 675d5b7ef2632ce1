//! The Cortex-M architecture for gdbstub: the `org.gnu.gdb.arm.m-profile` register set.
//!
//! gdb numbers r0..r15 as 0..15 and xpsr as 25; the target description below says so, and gdb
//! then lays out the `g` packet as r0..r15 followed by xpsr (registers in regnum order, gaps
//! skipped).

use std::num::NonZeroUsize;

use gdbstub::arch::{Arch, RegId, Registers};

/// gdb's register number of xpsr in the m-profile feature.
pub const XPSR_REGNUM: u16 = 25;

/// The target description gdb reads with `qXfer:features:read`.
pub const TARGET_XML: &str = r#"<?xml version="1.0"?>
<!DOCTYPE target SYSTEM "gdb-target.dtd">
<target version="1.0">
  <architecture>arm</architecture>
  <feature name="org.gnu.gdb.arm.m-profile">
    <reg name="r0" bitsize="32" regnum="0"/>
    <reg name="r1" bitsize="32"/>
    <reg name="r2" bitsize="32"/>
    <reg name="r3" bitsize="32"/>
    <reg name="r4" bitsize="32"/>
    <reg name="r5" bitsize="32"/>
    <reg name="r6" bitsize="32"/>
    <reg name="r7" bitsize="32"/>
    <reg name="r8" bitsize="32"/>
    <reg name="r9" bitsize="32"/>
    <reg name="r10" bitsize="32"/>
    <reg name="r11" bitsize="32"/>
    <reg name="r12" bitsize="32"/>
    <reg name="sp" bitsize="32" type="data_ptr"/>
    <reg name="lr" bitsize="32"/>
    <reg name="pc" bitsize="32" type="code_ptr"/>
    <reg name="xpsr" bitsize="32" regnum="25"/>
  </feature>
</target>
"#;

/// The Cortex-M (ARMv6-M/v7-M/v8-M) core, type-level only.
pub enum CortexM {}

impl Arch for CortexM {
    type Usize = u32;
    type Registers = CortexMRegs;
    // gdb sends 2 (Thumb), 3 (Thumb-2) or 4 (ARM); the backend picks its own.
    type BreakpointKind = usize;
    type RegId = CortexMRegId;

    fn target_description_xml() -> Option<&'static str> {
        Some(TARGET_XML)
    }
}

/// The core registers, in `g` packet order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CortexMRegs {
    /// r0..r12, sp (r13), lr (r14), pc (r15).
    pub r: [u32; 16],
    /// The combined program status register.
    pub xpsr: u32,
}

impl Registers for CortexMRegs {
    type ProgramCounter = u32;

    fn pc(&self) -> u32 {
        self.r[15]
    }

    fn gdb_serialize(&self, mut write_byte: impl FnMut(Option<u8>)) {
        for v in self.r.iter().chain(std::iter::once(&self.xpsr)) {
            for b in v.to_le_bytes() {
                write_byte(Some(b));
            }
        }
    }

    fn gdb_deserialize(&mut self, bytes: &[u8]) -> Result<(), ()> {
        if bytes.len() < 17 * 4 {
            return Err(());
        }
        let mut words = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        for r in &mut self.r {
            *r = words.next().ok_or(())?;
        }
        self.xpsr = words.next().ok_or(())?;
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
            CortexMRegId::Xpsr => XPSR_REGNUM,
        }
    }
}

impl RegId for CortexMRegId {
    fn from_raw_id(id: usize) -> Option<(Self, Option<NonZeroUsize>)> {
        let reg = match id {
            0..=15 => CortexMRegId::Core(u8::try_from(id).ok()?),
            25 => CortexMRegId::Xpsr,
            _ => return None,
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
        for (i, r) in regs.r.iter_mut().enumerate() {
            *r = i as u32;
        }
        regs.xpsr = 0x0100_0000;
        let mut bytes = Vec::new();
        regs.gdb_serialize(|b| bytes.push(b.unwrap()));
        assert_eq!(bytes.len(), 68);
        assert_eq!(&bytes[60..64], &15u32.to_le_bytes());
        assert_eq!(&bytes[64..68], &0x0100_0000u32.to_le_bytes());
        let mut back = CortexMRegs::default();
        back.gdb_deserialize(&bytes).unwrap();
        assert_eq!(back, regs);
        assert!(back.gdb_deserialize(&bytes[..60]).is_err());
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
        assert!(TARGET_XML.contains(r#"<reg name="xpsr" bitsize="32" regnum="25"/>"#));
        assert!(TARGET_XML.contains("org.gnu.gdb.arm.m-profile"));
    }
}
