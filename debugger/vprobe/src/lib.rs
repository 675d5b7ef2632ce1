//! A virtual SWD debug probe backed by QEMU: probe-rs's own ARM stack (DP/AP discovery,
//! MEM-AP transfers, `Core` halt/run/step/registers, FPB breakpoints, DWT watchpoints, reset)
//! runs unchanged on top of it, without a board.
//!
//! The probe implements probe-rs's driver interface at the raw DAP register level, as a
//! CMSIS-DAP probe does, and emulates what sits behind the wire: an STM32F4's SW-DP, its
//! AHB-AP, the ROM table and CoreSight identification registers, and the Cortex-M debug
//! registers, which it translates to GDB remote requests to QEMU's gdbstub (through
//! `memlife-rsp`). A register or address it does not model is an error naming it.
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
//! # Layout
//! - `probe`: [`VirtualProbe`], the probe-rs traits.
//! - `dap`: the DP and MEM-AP registers.
//! - `machine`: the bus behind the MEM-AP: debug registers, run control, memory.
//! - `fpb`, `dwt`: the comparators, as breakpoints and watchpoints.
//! - `rom`: ROM table and CoreSight IDs.
//! - `regsel`: `DCRSR.REGSEL` to GDB register numbers.

#![warn(missing_docs)]

pub mod dap;
pub mod dwt;
pub mod fpb;
pub mod machine;
mod probe;
pub mod regsel;
pub mod rom;
#[cfg(test)]
mod tests;

pub use machine::Chip;
pub use probe::{NAME, VirtualProbe};
