//! [`Restart`]: the caller's way to start the target again where a reset cannot (see
//! `restart`); apart from `restart` because the session holds one.

use memlife_core::Target;

/// Starts the target afresh when it is gone (see the module doc).
pub trait Restart {
    /// A fresh target, halted at its reset vector, running the same firmware; what the old
    /// one left behind (a process, a connection) is let go.
    fn restart(&mut self) -> Result<Box<dyn Target>, String>;

    /// What a restart starts, for messages (`a fresh qemu-system-arm -M netduinoplus2`).
    fn describe(&self) -> String;
}
