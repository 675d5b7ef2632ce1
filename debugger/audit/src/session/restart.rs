//! Starting the target again where a reset cannot: a QEMU that ended with its firmware's exit
//! (semihosting `SYS_EXIT`) has no target left to reset. Whoever opened the target knows how
//! it was started and hands the engine a [`Restart`] when it can start it again (the CLI, for
//! a QEMU it started itself: `--qemu`, `--chip ... --probe qemu`); a target memlife did not
//! start (`--gdb`) has none, and a reset there fails as before.
//!
//! The session swaps the fresh target in ([`Session::replace_target`]): none of memlife's
//! breakpoints are in it yet, so the set forgets what it had inserted, and the target's
//! breakpoint count and fault catching are asked again; the breakpoints wanted are inserted at
//! the next resume.

use memlife_core::{ErrorKind, Target};

use super::live::Session;
use super::roles::{EntryRole, ReturnRole};
use super::starter::Restart;
use crate::error::AuditError;

impl<E: EntryRole, R: ReturnRole> Session<E, R> {
    /// Hands the session a way to start the target again (see the module doc).
    pub fn set_restart(&mut self, restart: Box<dyn Restart>) {
        self.restart = Some(restart);
    }

    /// Resets the target and halts it at the reset vector. When the target is gone (`exited`:
    /// the firmware's exit ended it, or the reset says so) and a [`Restart`] was handed over,
    /// a fresh one is started instead.
    pub fn reset(&mut self, exited: bool) -> Result<(), AuditError> {
        let reset = match self.target.control() {
            Some(c) => c.reset(true),
            None => return Ok(()),
        };
        let gone = match reset {
            Ok(()) => return Ok(()),
            Err(e) if exited || e.kind() == ErrorKind::Gone => e,
            Err(e) => return Err(e.into()),
        };
        let Some(restart) = self.restart.as_mut() else {
            return Err(gone.into());
        };
        let what = restart.describe();
        tracing::info!("the target is gone ({gone}): starting {what}");
        let fresh = restart.restart().map_err(|why| AuditError::Restart {
            gone: gone.to_string(),
            what,
            why,
        })?;
        self.replace_target(fresh)
    }

    /// Replaces the target with a fresh one from a restart; the old one is dropped.
    pub fn replace_target(&mut self, target: Box<dyn Target>) -> Result<(), AuditError> {
        self.target = target;
        self.bps.forget_inserted();
        self.cache.clear();
        self.check_live()?;
        self.init_budget(self.options.vector_catch)
    }
}
