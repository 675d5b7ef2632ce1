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
    /// A register by its GDB number (on Cortex-M see [`crate::cortex_m`]).
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
