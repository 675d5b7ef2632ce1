//! What ends a run early instead of at its timeout: a stop at a fault handler's entry (the
//! target faulted: the run ends at once with what the core says), and a firmware parked in a
//! loop it never leaves after an injected allocation failure (the session's park watch, turned
//! on here while the failure's handling is awaited).

use crate::error::AuditError;
use crate::events::{AuditSession, Role};

/// The fault handlers' breakpoints and the park watch's policy.
#[derive(Debug, Default)]
pub struct Faults {
    /// A failure's handling is awaited: the park watch turns on as soon as an allocation is
    /// made to fail.
    watch_after_failure: bool,
}

impl Faults {
    /// Breaks at every fault handler the ELF has (once; roles are deduplicated).
    pub fn arm(&self, session: &mut AuditSession) {
        for (addr, fault) in session.fault_handlers() {
            session.add_entry(addr, Role::Fault { fault });
        }
    }

    /// The error for a stop at `fault`'s handler, `during` what (`phase graph_build`).
    pub fn on_fault(&self, session: &mut AuditSession, fault: &str, during: &str) -> AuditError {
        session.fault(fault, during)
    }

    /// A run that awaits the handling of an injected failure begins: the park watch is on when
    /// the failure was already made, and turns on when it is made during the run.
    pub fn begin_failure_wait(&mut self, session: &mut AuditSession, failure_made: bool) {
        session.set_park_watch(failure_made);
        self.watch_after_failure = true;
    }

    /// That run ended.
    pub fn end_failure_wait(&mut self, session: &mut AuditSession) {
        session.set_park_watch(false);
        self.watch_after_failure = false;
    }

    /// An allocation was just made to fail.
    pub fn on_failure_injected(&self, session: &mut AuditSession) {
        if self.watch_after_failure {
            session.set_park_watch(true);
        }
    }
}
