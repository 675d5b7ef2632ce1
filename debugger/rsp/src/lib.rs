//! A GDB Remote Serial Protocol client: memlife's backend for any GDB server (QEMU's `-gdb`,
//! OpenOCD, the J-Link GDB server, pyOCD).
//!
//! [`GdbRemote`] connects over TCP, reads the server's features and target description, and
//! implements every `memlife-core` capability: [`memlife_core::Memory`] (reads split to the
//! server's packet size and counted in [`memlife_core::LinkStats`]),
//! [`memlife_core::MemoryWrite`], [`memlife_core::Registers`], [`memlife_core::Control`],
//! [`memlife_core::Breakpoints`] and [`memlife_core::Watchpoints`]. [`QemuProcess`] starts
//! `qemu-system-arm` halted on a free loopback port and kills it when dropped.
//!
//! Every read from the socket has a deadline: a peer that stops answering gives
//! [`memlife_core::TargetError::Timeout`], one that hangs up gives
//! [`memlife_core::TargetError::Gone`], one that sends garbage gives
//! [`memlife_core::TargetError::Protocol`]; none of them panics or hangs.
//!
//! ```no_run
//! use std::path::Path;
//! use std::time::Duration;
//! use memlife_core::{Breakpoints, BreakpointKind, Control, Memory, StopReason};
//! use memlife_rsp::QemuProcess;
//!
//! # fn main() -> memlife_core::Result<()> {
//! let qemu = QemuProcess::start("netduinoplus2", Path::new("fw.elf"), &[])?;
//! let mut target = qemu.connect()?;
//! target.add_breakpoint(0x0800_0124, BreakpointKind::Software)?;
//! target.resume()?;
//! assert_eq!(target.wait_for_stop(Duration::from_secs(5))?, Some(StopReason::Breakpoint(0x0800_0124)));
//! let ram = target.read_vec(0x2000_0000, 4096)?;
//! # let _ = ram;
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//! - [`packet`]: framing (`$data#cs`), escaping, run-length decoding, replies, hex helpers.
//! - `conn`: the socket under the client: acks, retransmission, deadlines, buffering.
//! - `packets`: one module per packet kind: the request as sent and its reply as read.
//! - `tdesc`: target descriptions (`target.xml` with includes) and the `g` layout.
//! - `client`: [`GdbRemote`]: handshake, memory, registers, breakpoints, run control.
//! - `target`: the `memlife-core` trait implementations on [`GdbRemote`].
//! - `semihosting_dir`: [`SemihostingDir`], the one host directory a firmware's semihosting
//!   file calls may use (`--semihosting-dir`).
//! - `qemu`: [`QemuProcess`], QEMU started halted on a free port, killed on drop.
//! - `spawn`: [`spawn_dying_with_parent`], a child the kernel signals when its starting thread
//!   ends (QEMU, a wide run's memlife children).

#![deny(missing_docs)]

mod client;
mod conn;
pub mod packet;
mod packets;
mod qemu;
mod semihosting_dir;
mod spawn;
mod target;
mod tdesc;

pub use client::reset::Server;
pub use client::{ConnectOptions, Features, GdbRemote};
pub use qemu::{QemuProcess, Serial};
pub use semihosting_dir::{DEFAULT_MAX_WRITE, SemihostingDir};
pub use spawn::{Spawned, spawn_dying_with_parent};
pub use tdesc::{RegisterInfo, RegisterLayout};
