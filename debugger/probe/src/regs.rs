//! Register numbering: what memlife's callers say (gdb's Cortex-M numbers, roles) in probe-rs's
//! `RegisterId`s.
//!
//! On Cortex-M memlife speaks gdb's numbering, as its GDB server does: r0..r15 are 0..15 and
//! xpsr is 25. probe-rs numbers registers as the core's `DCRSR.REGSEL` field does: r0..r12,
//! sp, lr, pc are 0..15 too, xPSR is 16, MSP 17, PSP 18. Only gdb's xpsr needs translating.
//!
//! On Xtensa (ESP32-S3) there is no gdb numbering to honour: roles map to probe-rs's own role
//! registers (pc, a1 as sp, a0 as return address, a2.. as arguments, a2 as return value under the
//! windowed ABI as probe-rs describes it) and `Numbered(n)` is probe-rs's n-th core register.

use memlife_core::Register;
use memlife_core::registers::arm_register_number;

/// gdb's register number of xpsr on Cortex-M.
pub const GDB_XPSR: u16 = 25;
/// probe-rs's (`DCRSR.REGSEL`) number of xPSR.
pub const PROBE_RS_XPSR: u16 = 16;
/// probe-rs's number of MSP.
pub const PROBE_RS_MSP: u16 = 17;
/// probe-rs's number of PSP.
pub const PROBE_RS_PSP: u16 = 18;

/// The probe-rs register id of a gdb Cortex-M register number, if memlife maps it.
pub fn cortex_m_id(gdb: u16) -> Option<u16> {
    match gdb {
        0..=15 => Some(gdb),
        GDB_XPSR => Some(PROBE_RS_XPSR),
        _ => None,
    }
}

/// The probe-rs register id of a register role on Cortex-M.
pub fn cortex_m_role(reg: Register) -> Option<u16> {
    arm_register_number(reg).and_then(cortex_m_id)
}

/// The registers a Cortex-M snapshot or `read_all_registers` lists: name and probe-rs id.
pub const CORTEX_M_ALL: [(&str, u16); 19] = [
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
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn gdb_core_registers_map_one_to_one() {
        for n in 0..=15 {
            assert_eq!(cortex_m_id(n), Some(n));
        }
    }

    #[test]
    fn gdb_xpsr_is_probe_rs_16() {
        assert_eq!(cortex_m_id(25), Some(16));
        // gdb's 16..24 are the old FPA registers; nothing memlife reads.
        assert_eq!(cortex_m_id(16), None);
        assert_eq!(cortex_m_id(24), None);
        assert_eq!(cortex_m_id(26), None);
    }

    #[test]
    fn roles() {
        assert_eq!(cortex_m_role(Register::ProgramCounter), Some(15));
        assert_eq!(cortex_m_role(Register::StackPointer), Some(13));
        assert_eq!(cortex_m_role(Register::ReturnAddress), Some(14));
        assert_eq!(cortex_m_role(Register::Argument(2)), Some(2));
        assert_eq!(cortex_m_role(Register::Argument(4)), None);
        assert_eq!(cortex_m_role(Register::ReturnValue), Some(0));
        assert_eq!(cortex_m_role(Register::Numbered(25)), Some(16));
    }

    #[test]
    fn snapshot_names_match_the_snapshot_reader() {
        // memlife_core::Snapshot looks registers up by these names.
        let names: Vec<&str> = CORTEX_M_ALL.iter().map(|r| r.0).collect();
        for want in ["pc", "sp", "lr", "r0", "r3", "xpsr"] {
            assert!(names.contains(&want), "{want}");
        }
        let ids: std::collections::BTreeSet<u16> = CORTEX_M_ALL.iter().map(|r| r.1).collect();
        assert_eq!(ids.len(), CORTEX_M_ALL.len(), "ids are unique");
    }
}
