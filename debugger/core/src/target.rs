//! The composite trait every backend implements.
//!
//! Capabilities that only a live target has are reached through `Option` accessors (the pattern
//! gdbstub calls "inlineable dyn extension traits"): an offline snapshot answers `None` and the
//! caller reports "needs a live target" before starting, rather than failing half way.

use crate::{Breakpoints, Control, Memory, MemoryWrite, Registers, Watchpoints};

/// How much a session cost on the link: what the `link` object of `memlife heap --json` shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LinkStats {
    /// Memory read transactions (packets, probe transfers).
    pub reads: u64,
    /// Bytes of target memory read.
    pub bytes: u64,
    /// Largest single memory transaction the link allows, in bytes of memory.
    pub max_read: u64,
}

/// A debuggable target: memory and registers always, the rest when live.
pub trait Target: Memory + Registers {
    /// A short description ("gdb-remote 127.0.0.1:1234", "snapshot foo.mlsnap").
    fn describe(&self) -> String;

    /// Run control, when live.
    fn control(&mut self) -> Option<&mut dyn Control> {
        None
    }

    /// Breakpoints, when live.
    fn breakpoints(&mut self) -> Option<&mut dyn Breakpoints> {
        None
    }

    /// Watchpoints, when the backend has them.
    fn watchpoints(&mut self) -> Option<&mut dyn Watchpoints> {
        None
    }

    /// Memory writes, when live.
    fn memory_write(&mut self) -> Option<&mut dyn MemoryWrite> {
        None
    }

    /// Reads and bytes so far.
    fn link_stats(&self) -> LinkStats {
        LinkStats::default()
    }

    /// Ends the session: with `resume` the target runs on (GDB's `detach`), otherwise it is
    /// left halted where it is. Offline targets have nothing to do.
    fn disconnect(&mut self, resume: bool) -> crate::Result<()> {
        let _ = resume;
        Ok(())
    }

    /// Upcast for analysis code that only needs memory.
    fn as_memory(&mut self) -> &mut dyn Memory;
}
