//! The script-facing side of allocation-failure injection (see [`crate::observers::inject`]):
//! a request checked and armed, with tracing turned on for it (its breakpoints on the
//! allocator's entry are where the failure is made), and a phase call's allocation sites to
//! choose from.

use super::facade::Debugger;
use crate::error::AuditError;
use crate::observers::inject::{FailRequest, sites_of};
use crate::observers::{AllocSite, FailChoice};

impl Debugger {
    /// Makes the allocation `choice` selects return NULL (see `crate::observers::inject`).
    /// Needs allocation tracing (turned on here); replaces a request not yet served.
    pub fn fail_alloc(&mut self, choice: FailChoice) -> Result<(), AuditError> {
        let site = choice
            .site
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let phase = match choice.phase.as_deref().map(str::trim) {
            Some("") => None,
            Some(p) => {
                let function = self.settings.config.phase_function(p).to_string();
                self.function(&function)?;
                Some(function)
            }
            None => None,
        };
        if (site.is_none() && phase.is_none()) || choice.nth == 0 {
            return Err(AuditError::Config(format!(
                "fail_alloc needs a site (a function or file:line) or a phase, and n >= 1, not site {:?}, phase {:?}, n {}",
                site.unwrap_or_default(),
                phase.unwrap_or_default(),
                choice.nth
            )));
        }
        if !self.trace.is_wanted() {
            self.set_tracing(true)?;
        }
        // Its breakpoint on the allocator's entry is where the failure is made.
        self.trace.set_requests(&mut self.session, true)?;
        self.injection
            .arm(FailRequest::new(site, phase, choice.nth));
        Ok(())
    }

    /// The allocation sites of the last completed call of `phase` (a role or a function), in
    /// the order they first allocated; the trace must have been on during that call.
    pub fn alloc_sites(&self, phase: &str) -> Result<Vec<AllocSite>, AuditError> {
        let function = self.settings.config.phase_function(phase);
        let record = self
            .records()
            .iter()
            .rev()
            .find(|r| r.function == function || r.alias.as_deref() == Some(phase))
            .ok_or_else(|| {
                AuditError::Config(format!(
                    "alloc_sites(\"{phase}\"): no call of {function} was observed yet (run t.cycle() first)"
                ))
            })?;
        Ok(sites_of(self.events().iter().filter(|e| {
            (record.seq_begin..record.seq_end).contains(&e.seq)
        })))
    }
}
