//! The target session: one live target held for an audit, and everything that touches it
//! directly. It arms breakpoints, runs the target to its next stop and reads memory, and knows
//! nothing of phases, traces or what a breakpoint is for: the roles are the engine's
//! ([`crate::events`]), the session only asks them how to arm them.
//!
//! # Layout
//! - `live`: [`Session`]: the target, the symbols, the heap walker, the stop's memory cache.
//! - `run`: run control: arm, resume, wait for a stop with the park watch and the deadline,
//!   read the registers once per stop ([`Regs`]).
//! - `breakpoints`: [`BreakpointSet`]: what each address is for, the returns awaited, what is
//!   inserted.
//! - `budget`: which breakpoints are armed on a target with few (an FPB's six).
//! - `clock`: [`FirmwareClock`]: the wall time the firmware ran and was held halted, and its
//!   tick counter.
//! - `roles`: what a role tells the budget: [`EntryRole`] (when it is armed: [`Arm`]),
//!   [`ReturnRole`].
//! - `resume`: leaving a breakpoint by executing its instruction on the host.
//! - `starter`: [`Restart`], the caller's way to start the target again.
//! - `restart`: starting the target again where a reset cannot (a QEMU that
//!   exited with its firmware).
//! - [`park`]: a firmware parked in a loop, told from one still working, while waiting (the
//!   CLI's waits use it too).
//! - `fault`: the fault handlers' entries, and a stop there decoded (fault status registers,
//!   the call chain from the exception frame).

mod breakpoints;
mod budget;
mod clock;
mod fault;
mod live;
pub mod park;
mod restart;
mod resume;
mod roles;
mod run;
mod starter;

pub use breakpoints::BreakpointSet;
pub use budget::{BreakpointUse, Budget};
pub use clock::FirmwareClock;
pub use live::{Session, SessionOptions};
pub use roles::{Arm, EntryRole, ReturnRole, ReturnWatch};
pub use run::Regs;
pub use starter::Restart;
