//! Core registers by role, so analysis code stays architecture-neutral.

use crate::Result;

/// A core register named by what it does rather than by its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Register {
    /// Program counter.
    ProgramCounter,
    /// Stack pointer (the active one).
    StackPointer,
    /// Return address of the current call (ARM `lr`).
    ReturnAddress,
    /// The n-th integer argument register at a function entry (ARM `r0`..`r3`).
    Argument(u8),
    /// The integer return value register at a function return (ARM `r0`).
    ReturnValue,
    /// A register by its GDB number.
    Numbered(u16),
}

/// Register access on a halted core.
pub trait Registers {
    /// Reads one register.
    fn read_register(&mut self, reg: Register) -> Result<u64>;

    /// Writes one register.
    fn write_register(&mut self, reg: Register, value: u64) -> Result<()>;

    /// Every register the backend knows, by name, in its own order (used by snapshots).
    fn read_all_registers(&mut self) -> Result<Vec<(String, u64)>>;
}

/// ARM (Cortex-M) register number for a role: r0..r15 are 0..15.
pub fn arm_register_number(reg: Register) -> Option<u16> {
    match reg {
        Register::ProgramCounter => Some(15),
        Register::StackPointer => Some(13),
        Register::ReturnAddress => Some(14),
        Register::Argument(n) if n < 4 => Some(u16::from(n)),
        Register::Argument(_) => None,
        Register::ReturnValue => Some(0),
        Register::Numbered(n) => Some(n),
    }
}
