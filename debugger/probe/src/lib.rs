//! The probe-rs backend of memlife: real boards through a USB debug probe (ST-Link, J-Link,
//! CMSIS-DAP, ESP USB-JTAG), implementing the `memlife-core` target traits.
//!
//! ```no_run
//! use memlife_probe::{ProbeError, ProbeOptions, ProbeSelector, ProbeTarget};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut opts = ProbeOptions::new("STM32F405RGTx");
//! opts.probe = Some(ProbeSelector::parse("0483:374b")?);
//! match ProbeTarget::open(&opts) {
//!     Ok(target) => println!("attached to {}", target.chip().name),
//!     Err(ProbeError::UnknownChip { suggestions, .. }) => println!("did you mean {suggestions:?}"),
//!     Err(ProbeError::NoProbe { found, .. }) => println!("attached are {found:?}"),
//!     Err(e) => return Err(e.into()),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! What probe-rs 0.32 gives and what memlife adds:
//!
//! - Chip names are checked against probe-rs's registry first (`chip`), with suggestions.
//! - Attaching does not reset or halt: a running device is audited as it is. `--connect-under-reset`
//!   holds reset while attaching, for firmware that disables the debug pins or sleeps deeply.
//! - Memory goes out as aligned 32-bit transfers (`words`), never byte by byte.
//! - Every breakpoint is a hardware breakpoint (`hwbp`): code runs from flash.
//! - Data watchpoints are programmed into the Cortex-M DWT by hand (`dwt`); probe-rs has no
//!   watchpoint API.
//! - Registers: gdb's Cortex-M numbering (xpsr = 25) becomes probe-rs's
//!   ([`memlife_core::cortex_m::probe_rs_number`]).
//! - A reset that fails on the link (a board that drops the debug connection while it resets)
//!   is retried once on a new session when the target can open its probe again
//!   ([`ProbeTarget::set_reopen`]; `open` sets it for a USB probe): breakpoints are programmed
//!   again. A firmware that exited under memlife's virtual probe is the target's end
//!   ([`memlife_core::TargetError::Exited`]), not a broken link, so whoever started it can start
//!   it again.
//! - Feature `esp32`: registers the `probe-rs-espressif` plugin (ESP32 family chips and the
//!   ESP USB-JTAG probe); on ESP32-S3 both cores halt together (`target`).
//!
//! # Layout
//! - `chip`: registry, chip name validation and suggestions, plugin registration.
//! - `selector`: `--probe VID:PID[:SERIAL]` ([`ProbeSelector`], [`SelectorError`]).
//! - `options`: [`ProbeOptions`], how to reach a board (`--chip`, `--probe`, `--speed`,
//!   `--connect-under-reset`).
//! - `list`: attached probes (`memlife probes`) and choosing one; `usb`: whether this machine
//!   can see a USB probe at all ([`usb_hint`]).
//! - `target`: [`ProbeTarget`], the trait implementations; `target::reattach`: attaching again
//!   after a failed reset ([`Reopen`]).
//! - `dwt`, `hwbp`, `words`: the pure logic, unit-tested without hardware.
//! - `error`: [`ProbeError`] and the mapping of probe-rs errors into
//!   [`memlife_core::TargetError`].

#![deny(missing_docs)]

mod chip;
mod dwt;
mod error;
mod hwbp;
mod list;
mod options;
mod selector;
mod target;
mod usb;
mod words;

pub use chip::{ChipCore, ChipInfo, registry, resolve_chip};
pub use error::ProbeError;
pub use list::{ProbeEntry, list_probes};
pub use options::ProbeOptions;
pub use selector::{IdPart, IdProblem, ProbeSelector, SelectorError};
pub use target::{ProbeTarget, Reopen};
pub use usb::usb_hint;

/// Whether this build includes the ESP32 family (the `esp32` feature).
pub const ESP32: bool = cfg!(feature = "esp32");
