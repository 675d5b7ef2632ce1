//! Run control of a live target.

use std::time::Duration;

use crate::Result;

/// Why the core stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Stopped at a breakpoint at this address.
    Breakpoint(u64),
    /// A watchpoint fired on this data address.
    Watchpoint {
        /// Watched address that was accessed.
        addr: u64,
        /// Kind of access.
        kind: crate::WatchKind,
    },
    /// A single step completed.
    Step,
    /// Halted on request (interrupt).
    Halted,
    /// Stopped by a signal the backend reports (GDB signal number).
    Signal(u8),
    /// The program exited with this status.
    Exited(i32),
    /// The program was terminated by a signal.
    Terminated(u8),
}

/// Halt, resume and step a live core.
pub trait Control {
    /// Stops the core and returns why it stopped.
    fn halt(&mut self) -> Result<StopReason>;

    /// Lets the core run. Backends step off a breakpoint at the current pc first.
    fn resume(&mut self) -> Result<()>;

    /// Executes one instruction.
    fn step(&mut self) -> Result<StopReason>;

    /// Waits until the core stops, at most `timeout`; `None` when it is still running.
    fn wait_for_stop(&mut self, timeout: Duration) -> Result<Option<StopReason>>;

    /// Resets the target, halted at the reset vector when `halt` is set.
    fn reset(&mut self, halt: bool) -> Result<()>;

    /// Whether the core is known to be halted.
    fn is_halted(&self) -> bool;

    /// Turns halting on fault exceptions by vector catch on or off (Cortex-M `DEMCR`
    /// `VC_HARDERR`, `VC_INTERR`, `VC_BUSERR`, `VC_STATERR`, `VC_CHKERR`, `VC_NOCPERR`,
    /// `VC_MMERR`): the core then halts at the first instruction of the fault's handler, as a
    /// breakpoint there would, without using one. `Ok(false)` when the target cannot (the
    /// caller then sets breakpoints on the handlers).
    fn catch_faults(&mut self, on: bool) -> Result<bool> {
        let _ = on;
        Ok(false)
    }
}
