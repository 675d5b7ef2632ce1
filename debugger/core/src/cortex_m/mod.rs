//! Cortex-M (ARMv6-M, ARMv7-M, ARMv8-M): what memlife knows about the architecture it debugs,
//! in one place for every crate (the GDB remote client, the GDB server, the probe backend, the
//! unwinder and the audit engine). No dependencies beyond this crate's.
//!
//! Register numbering, three ways:
//! - by role ([`Register`](crate::Register)): analysis code says "the stack pointer", not "r13";
//! - GDB's, from the `org.gnu.gdb.arm.m-profile` target description ([`GDB_TARGET_XML`]):
//!   r0..r12 are 0..12, sp 13, lr 14, pc 15, and xPSR 25 (16..24 are the old FPA registers
//!   gdb keeps the numbers of). memlife's backends and its GDB server speak this numbering;
//! - probe-rs's, which follows the `REGSEL` field of the core's `DCRSR` register: r0..r15 are
//!   0..15 too, xPSR 16, MSP 17, PSP 18 ([`probe_rs_number`]).
//!
//! # Layout
//! - [`numbering`]: the register numbers by role, GDB's and probe-rs's, and [`GDB_TARGET_XML`].
//! - [`regs`]: [`CoreRegisters`], the 16 core registers and xPSR of a halted core.
//! - [`thumb`]: executing one Thumb instruction on the host, and finding return instructions.
//! - [`decode`]: reading a function's calls, branches and literal loads without running it,
//!   for call graphs.
//! - [`exception`]: `EXC_RETURN` values and the exception frame the core stacks on entry.

pub mod decode;
pub mod exception;
pub mod numbering;
pub mod regs;
pub mod thumb;

pub use exception::{ExcReturn, ExceptionFrame};
pub use numbering::{
    GDB_TARGET_XML, GDB_XPSR, LR, LR_AT_RESET, PC, PROBE_RS_MSP, PROBE_RS_PSP,
    PROBE_RS_SNAPSHOT_REGISTERS, PROBE_RS_XPSR, SP, gdb_number, probe_rs_number, probe_rs_role,
};
pub use regs::CoreRegisters;
