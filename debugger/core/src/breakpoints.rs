//! Breakpoints and watchpoints.

use crate::Result;

/// How a breakpoint is implemented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakpointKind {
    /// Patched instruction (or whatever the server does for `Z0`).
    Software,
    /// A hardware comparator (needed in flash on real chips).
    Hardware,
}

/// Which accesses a watchpoint reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WatchKind {
    /// Stores.
    Write,
    /// Loads.
    Read,
    /// Loads and stores.
    Access,
}

/// Code breakpoints.
pub trait Breakpoints {
    /// Inserts a breakpoint at `addr` (thumb bit cleared by the caller).
    fn add_breakpoint(&mut self, addr: u64, kind: BreakpointKind) -> Result<()>;
    /// Removes a breakpoint inserted with the same address and kind.
    fn remove_breakpoint(&mut self, addr: u64, kind: BreakpointKind) -> Result<()>;
    /// The breakpoints currently inserted, with their kinds. (Named apart from
    /// [`Target::breakpoints`](crate::Target::breakpoints), which is the capability itself.)
    fn inserted(&self) -> Vec<(u64, BreakpointKind)>;

    /// How many breakpoints at distinct addresses the target can have at once (its hardware
    /// comparators); `None` when it has no such limit (a simulator's gdbstub).
    fn capacity(&self) -> Option<usize> {
        None
    }
}

/// Data watchpoints.
pub trait Watchpoints {
    /// Watches `len` bytes at `addr`.
    fn add_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> Result<()>;
    /// Removes a watchpoint added with the same arguments.
    fn remove_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> Result<()>;
}
