//! Attaching again after a failed reset: some boards drop the debug connection while they reset
//! (the debug port powers down with the core, a watchdog or a low-power mode takes the SWD
//! lines), and probe-rs's session is then unusable. A [`ProbeTarget`] that was given a way to
//! open its probe again ([`ProbeTarget::set_reopen`]: `open` does it for a USB probe, the
//! command line for the virtual probe) lets the old session go, opens the probe, attaches with
//! the options it was opened with, programs its breakpoints again (probe-rs clears every
//! comparator when it attaches) and retries the reset, once. A second failure is the reset's
//! error, with the first one named.

use memlife_core::{ErrorKind, Result, TargetError};

use super::{ProbeTarget, Reopen};
use crate::ProbeError;

impl ProbeTarget {
    /// Gives the target a way to open its probe again, used when a reset fails (see the module
    /// doc).
    pub fn set_reopen(&mut self, reopen: Reopen) {
        self.reopen = Some(reopen);
    }

    /// Resets as [`memlife_core::Control::reset`]; a reset that failed on the link is retried
    /// once on a new session when the target can open its probe again.
    pub(super) fn reset_or_reattach(&mut self, halt: bool) -> Result<()> {
        let first = match self.reset_once(halt) {
            Err(e) if e.kind() == ErrorKind::Transport && self.reopen.is_some() => e,
            other => return other,
        };
        tracing::warn!(
            probe = self.probe,
            "resetting failed ({first}); attaching again"
        );
        if let Err(again) = self.reattach() {
            return Err(TargetError::transport(
                format!("resetting failed ({first}), and attaching again failed"),
                again,
            ));
        }
        self.reset_once(halt).map_err(|e| {
            TargetError::transport(
                format!("resetting failed ({first}), and again after attaching again"),
                e,
            )
        })
    }

    /// Lets the old session go, opens the probe and attaches again.
    fn reattach(&mut self) -> std::result::Result<(), ProbeError> {
        let Some(reopen) = self.reopen.as_mut() else {
            return Err(ProbeError::Target {
                context: "attaching again".into(),
                source: TargetError::Unsupported("opening this probe again"),
            });
        };
        // The old session holds the probe (a USB device, the gdbstub's one connection).
        drop(self.session.take());
        let probe = reopen()?;
        let (session, _) = super::attach_session(probe, &self.probe, &self.options)?;
        self.session = Some(session);
        // probe-rs cleared every comparator when it attached: the ones asked for go back.
        let mut addrs: Vec<u64> = self.breakpoints.list().iter().map(|b| b.0).collect();
        addrs.sort_unstable();
        addrs.dedup();
        let mut core = self.core0().map_err(|source| ProbeError::Target {
            context: "opening core 0 after attaching again".into(),
            source,
        })?;
        for addr in addrs {
            core.set_hw_breakpoint(addr)
                .map_err(super::probe_err(format!(
                    "setting the breakpoint at {addr:#010x} again"
                )))?;
        }
        drop(core);
        tracing::info!(probe = self.probe, "attached again");
        Ok(())
    }
}
