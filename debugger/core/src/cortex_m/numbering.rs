//! The register numbers of the three numberings `cortex_m` describes (roles, GDB's, probe-rs's)
//! and the target description gdb is given. Kept apart from `cortex_m`'s table of contents
//! because the register file, the Thumb executor and the exception frame read them.

use crate::Register;

/// Index of the stack pointer (r13) in [`CoreRegisters::r`](super::CoreRegisters::r), and its
/// number everywhere.
pub const SP: usize = 13;
/// Index of the link register (r14).
pub const LR: usize = 14;
/// Index of the program counter (r15).
pub const PC: usize = 15;

/// The value of `lr` out of reset (ARMv7-M): the end of every call chain.
pub const LR_AT_RESET: u32 = 0xFFFF_FFFF;

/// GDB's number of xPSR in the m-profile target description.
pub const GDB_XPSR: u16 = 25;

/// probe-rs's (`DCRSR.REGSEL`) number of xPSR.
pub const PROBE_RS_XPSR: u16 = 16;
/// probe-rs's number of the main stack pointer.
pub const PROBE_RS_MSP: u16 = 17;
/// probe-rs's number of the process stack pointer.
pub const PROBE_RS_PSP: u16 = 18;

/// The target description memlife's GDB server gives gdb (`qXfer:features:read`): the
/// m-profile core registers with their GDB numbers. gdb then lays out the `g` packet as r0..r15
/// followed by xPSR (registers in number order, gaps skipped), which
/// [`CoreRegisters::to_gdb_g_bytes`](super::CoreRegisters::to_gdb_g_bytes) writes.
pub const GDB_TARGET_XML: &str = r#"<?xml version="1.0"?>
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

/// GDB's register number for a role (r0..r3 are the first four arguments and r0 the return
/// value under the AAPCS); `None` for an argument past the fourth, which is on the stack.
pub fn gdb_number(reg: Register) -> Option<u16> {
    match reg {
        Register::ProgramCounter => Some(PC as u16),
        Register::StackPointer => Some(SP as u16),
        Register::ReturnAddress => Some(LR as u16),
        Register::Argument(n) if n < 4 => Some(u16::from(n)),
        Register::Argument(_) => None,
        Register::ReturnValue => Some(0),
        Register::Numbered(n) => Some(n),
    }
}

/// probe-rs's number of a register given by its GDB number, for the registers memlife uses
/// (r0..r15 and xPSR).
pub fn probe_rs_number(gdb: u16) -> Option<u16> {
    match gdb {
        0..=15 => Some(gdb),
        GDB_XPSR => Some(PROBE_RS_XPSR),
        _ => None,
    }
}

/// probe-rs's number of a register role.
pub fn probe_rs_role(reg: Register) -> Option<u16> {
    gdb_number(reg).and_then(probe_rs_number)
}

/// The registers a snapshot lists, by the names
/// [`CoreRegisters::from_named`](super::CoreRegisters::from_named) and the snapshot reader look
/// up, with probe-rs's numbers.
pub const PROBE_RS_SNAPSHOT_REGISTERS: [(&str, u16); 19] = [
    ("r0", 0),
    ("r1", 1),
    ("r2", 2),
    ("r3", 3),
    ("r4", 4),
    ("r5", 5),
    ("r6", 6),
    ("r7", 7),
    ("r8", 8),
    ("r9", 9),
    ("r10", 10),
    ("r11", 11),
    ("r12", 12),
    ("sp", 13),
    ("lr", 14),
    ("pc", 15),
    ("xpsr", PROBE_RS_XPSR),
    ("msp", PROBE_RS_MSP),
    ("psp", PROBE_RS_PSP),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_have_gdb_numbers() {
        assert_eq!(gdb_number(Register::ProgramCounter), Some(15));
        assert_eq!(gdb_number(Register::StackPointer), Some(13));
        assert_eq!(gdb_number(Register::ReturnAddress), Some(14));
        assert_eq!(gdb_number(Register::Argument(3)), Some(3));
        assert_eq!(gdb_number(Register::Argument(4)), None);
        assert_eq!(gdb_number(Register::ReturnValue), Some(0));
        assert_eq!(gdb_number(Register::Numbered(GDB_XPSR)), Some(25));
    }

    #[test]
    fn gdb_core_registers_map_one_to_one_to_probe_rs_and_xpsr_is_16() {
        for n in 0..=15 {
            assert_eq!(probe_rs_number(n), Some(n));
        }
        assert_eq!(probe_rs_number(GDB_XPSR), Some(16));
        // gdb's 16..24 are the old FPA registers; nothing memlife reads.
        for n in [16, 24, 26] {
            assert_eq!(probe_rs_number(n), None);
        }
        assert_eq!(probe_rs_role(Register::Numbered(25)), Some(16));
        assert_eq!(probe_rs_role(Register::Argument(2)), Some(2));
        assert_eq!(probe_rs_role(Register::Argument(4)), None);
    }

    #[test]
    fn the_target_description_numbers_xpsr_25() {
        assert!(GDB_TARGET_XML.contains(r#"<reg name="xpsr" bitsize="32" regnum="25"/>"#));
        assert!(GDB_TARGET_XML.contains("org.gnu.gdb.arm.m-profile"));
        assert!(GDB_TARGET_XML.contains(r#"<reg name="r0" bitsize="32" regnum="0"/>"#));
    }

    #[test]
    fn snapshot_registers_are_unique_and_named_as_the_readers_expect() {
        let names: Vec<&str> = PROBE_RS_SNAPSHOT_REGISTERS.iter().map(|r| r.0).collect();
        for want in ["pc", "sp", "lr", "r0", "r3", "xpsr"] {
            assert!(names.contains(&want), "{want}");
        }
        let ids: std::collections::BTreeSet<u16> =
            PROBE_RS_SNAPSHOT_REGISTERS.iter().map(|r| r.1).collect();
        assert_eq!(ids.len(), PROBE_RS_SNAPSHOT_REGISTERS.len());
    }
}
