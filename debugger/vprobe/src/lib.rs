//! A virtual SWD debug probe backed by QEMU: probe-rs's own ARM stack (DP/AP discovery,
//! MEM-AP transfers, `Core` halt/run/step/registers, FPB breakpoints, DWT watchpoints, reset)
//! runs unchanged on top of it, without a board.
//!
//! The probe implements probe-rs's driver interface at the raw DAP register level, as a
//! CMSIS-DAP probe does, and emulates what sits behind the wire: an STM32F4's SW-DP, its
//! AHB-AP, the ROM table and CoreSight identification registers, and the Cortex-M debug
//! registers, which it translates to GDB remote requests to QEMU's gdbstub (through
//! `memlife-rsp`). A register or address it does not model is an error naming it: a
//! [`VirtualProbeError`], which reaches probe-rs as probe-rs's own error types (a bus fault as
//! the `FAULT` acknowledge, the rest as this driver's error, which a caller can downcast).
//!
//! ```no_run
//! use std::path::Path;
//! use memlife_rsp::QemuProcess;
//! use memlife_vprobe::VirtualProbe;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let qemu = QemuProcess::start("netduinoplus2", Path::new("fw.elf"), &[])?;
//! let probe = VirtualProbe::over_qemu(qemu.connect()?)?.into_probe();
//! let session = probe.attach("STM32F405RGTx", probe_rs::Permissions::new())?;
//! # drop(session);
//! # Ok(())
//! # }
//! ```
//!
//! What the register model refuses says why, in terms a caller can match on:
//!
//! ```no_run
//! use memlife_vprobe::{VirtualProbe, VirtualProbeError};
//! # use std::path::Path;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let qemu = memlife_rsp::QemuProcess::start("netduinoplus2", Path::new("fw.elf"), &[])?;
//! let mut probe = VirtualProbe::over_qemu(qemu.connect()?)?;
//! match probe.dap().machine.read_word(0x6000_0000) {
//!     Ok(word) => println!("{word:#010x}"),
//!     Err(e) if e.is_bus_fault() => println!("no memory there: {e}"),
//!     Err(VirtualProbeError::UnmodelledAddress { addr }) => println!("{addr:#010x}: not modelled"),
//!     Err(e) => return Err(e.into()),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//! - `probe`: [`VirtualProbe`], the probe-rs traits.
//! - `dap`: the DP and MEM-AP registers; `port_error`: [`PortError`], what they refuse.
//! - `machine`: the bus behind the MEM-AP: debug registers, run control, memory.
//! - `fpb`, `dwt`: the comparators, as breakpoints and watchpoints ([`FpbError`], [`DwtError`]).
//! - `rom`: ROM table and CoreSight IDs.
//! - `regsel`: `DCRSR.REGSEL` to GDB register numbers ([`RegselError`]).
//! - `error`: [`VirtualProbeError`] and its mapping into probe-rs's error types.

#![deny(missing_docs)]

pub mod dap;
pub mod dwt;
mod error;
pub mod fpb;
pub mod machine;
mod port_error;
mod probe;
pub mod regsel;
pub mod rom;
#[cfg(test)]
mod tests;

pub use dap::PortError;
pub use dwt::DwtError;
pub use error::{Access, Capability, Result, VirtualProbeError};
pub use fpb::FpbError;
pub use machine::Chip;
pub use probe::{NAME, VirtualProbe};
pub use regsel::RegselError;
