//! What memlife's tests share, so that no test file carries its own copy: a dev-dependency
//! only, never part of memlife itself.
//!
//! ```no_run
//! use memlife_testkit::{firmware, ram};
//!
//! // A bundled firmware ELF (built on first use), and fake RAM at 0x2000_0000.
//! let elf = firmware::elf("heap4", "healthy");
//! let mut bytes = vec![0u8; 64];
//! ram::put_u32(&mut bytes, 0, 0x2000_0010);
//! let snapshot = ram::at(0x2000_0000, bytes);
//! # let _ = (elf, snapshot);
//! ```
//!
//! # Layout
//! - [`firmware`]: the repository, and the bundled firmware ELFs, built on first use (once, under
//!   a lock, so parallel tests and test binaries do not race `make`).
//! - [`process`]: children under guards that kill what they started, commands with a deadline,
//!   gdb-multiarch in batch mode, fresh temporary directories.
//! - [`host_elf`]: 64-bit ELFs built with the host's `cc`, for addresses no firmware has.
//! - [`cross_elf`]: small Cortex-M ELFs from a test's own C++ (`arm-none-eabi-g++`), for class
//!   layouts the firmware does not have.
//! - [`fuzz`]: a seeded xorshift generator and the loop of random cases around it.
//! - [`live`]: a live target without QEMU (run control, breakpoints, watchpoints and writes over
//!   a snapshot, its core following a script), for `memlife serve`'s bridge and fuzz target.
//! - [`ram`]: fake target RAM (a one-region [`memlife_core::Snapshot`]) and little-endian words.
//! - [`rsp`]: scripted GDB servers on loopback: the exact bytes a client must send, and what
//!   the server answers.

#![deny(missing_docs)]
#![allow(clippy::unwrap_used, clippy::panic, clippy::expect_used)]

pub mod cross_elf;
pub mod firmware;
pub mod fuzz;
pub mod host_elf;
pub mod live;
pub mod process;
pub mod ram;
pub mod rsp;
