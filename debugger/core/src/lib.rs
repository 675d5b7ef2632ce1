//! The seam between memlife's analysis code and the things it debugs.
//!
//! Analysis code (heap walkers, DWARF value readers, the audit engine) only ever sees
//! [`Memory`]; live-only capabilities sit behind `Option`-returning accessors on [`Target`], so an
//! offline [`Snapshot`] and a live backend (a GDB remote server, a probe) fit the same seam. A plan
//! that needs a capability the backend lacks fails before it runs.
//!
//! ```no_run
//! use std::path::Path;
//! use memlife_core::{Memory, Register, Registers, Snapshot};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A snapshot is RAM and registers saved from a halted target (`memlife snapshot`).
//! let mut snap = Snapshot::load(Path::new("fw.snap"))?;
//! let pc = snap.read_register(Register::ProgramCounter)?;
//! let words = snap.read_vec(0x2000_0000, 16)?;
//! println!("halted at {pc:#010x}, RAM starts {words:02x?}");
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//! - [`error`]: [`TargetError`] and its coarse [`ErrorKind`].
//! - [`memory`]: [`Memory`] (bulk reads) and [`MemoryWrite`].
//! - [`registers`]: [`Registers`] and the architecture-neutral [`Register`] roles.
//! - [`control`]: [`Control`] (halt, resume, step, wait) and [`StopReason`].
//! - [`breakpoints`]: [`Breakpoints`] and [`Watchpoints`].
//! - [`cortex_m`]: the architecture memlife debugs: register numbering (roles, GDB, probe-rs),
//!   [`cortex_m::CoreRegisters`], Thumb decoding and the exception frame.
//! - [`interrupt`]: the user's stop request (Ctrl-C) and a wait that honours it.
//! - [`target`]: [`Target`], the composite every backend implements, and [`LinkStats`].
//! - [`snapshot`]: the versioned offline RAM + registers format, itself a read-only [`Target`].
//! - [`output`]: writing output files atomically, without following planted links.
//! - [`limits`]: what a timeout in seconds may be, and [`limits::Deadline`], a wait's end that
//!   never overflows the clock.
//! - [`input`]: reading the files users name: regular files only, of a bounded size.
//! - [`text`]: strings from files and targets made safe for a terminal and for XML.

#![deny(missing_docs)]

pub mod breakpoints;
pub mod control;
pub mod cortex_m;
pub mod error;
pub mod input;
pub mod interrupt;
pub mod limits;
pub mod memory;
pub mod output;
pub mod registers;
pub mod snapshot;
pub mod target;
pub mod text;

pub use breakpoints::{BreakpointKind, Breakpoints, WatchKind, Watchpoints};
pub use control::{Control, StopReason};
pub use error::{ErrorKind, Result, TargetError};
pub use interrupt::Wait;
pub use memory::{Memory, MemoryWrite};
pub use registers::{Register, Registers};
pub use snapshot::{Snapshot, SnapshotRegion};
pub use target::{LinkStats, ReadStrategy, Target};
