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
    /// How a heap walk read the arena (absent for other reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<ReadStrategy>,
    /// The link's round-trip time in microseconds, as the walk's cost model took it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<u64>,
    /// The link's bandwidth in bytes of memory per second, as the walk's cost model took it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_s: Option<u64>,
    /// Round trips the reads took (pipelined requests answered together count once).
    #[serde(default)]
    pub round_trips: u64,
    /// Bytes of target memory read (the same as `bytes`, under the name the walk's cost uses).
    #[serde(default)]
    pub bytes_read: u64,
    /// Wall time of the walk in microseconds (reads and parsing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub walk_us: Option<u64>,
}

/// How a heap walk read target memory: what the `strategy` of the `link` object says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadStrategy {
    /// The arena whole, in as few large reads as the link allows.
    Bulk,
    /// Small aligned chunks where the walk looked, cached across the walk.
    Sparse,
    /// Sparse until the walk had cost what a bulk read would, then the rest in bulk.
    SparseThenBulk,
}

impl ReadStrategy {
    /// The name the JSON and the text table use.
    pub fn name(self) -> &'static str {
        match self {
            ReadStrategy::Bulk => "bulk",
            ReadStrategy::Sparse => "sparse",
            ReadStrategy::SparseThenBulk => "sparse-then-bulk",
        }
    }
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
