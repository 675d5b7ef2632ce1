//! The script-facing side of allocation-failure injection (see [`crate::observers::inject`]):
//! a request checked (its site against the ELF, at once) and armed, with tracing turned on for
//! it (its breakpoints on the allocator's entry are where the failure is made), and a phase
//! call's allocation sites to choose from.

use memlife_dwarf::{LocationError, LocationSpec};

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
            .filter(|s| !s.is_empty())
            .map(|s| self.checked_site(&s))
            .transpose()?;
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

    /// A site `fail_alloc` is asked for, checked against the ELF at once (not after a whole
    /// cycle that never made it): a function the ELF has (or has inlined), or a `file:line`
    /// with code, given as the trace names sites (the file's base name). Anything else is
    /// refused with the nearest name or lines.
    fn checked_site(&self, site: &str) -> Result<String, AuditError> {
        let refused = |why: String| AuditError::Config(format!("fail_alloc: site `{site}`: {why}"));
        let spec = LocationSpec::parse(site).map_err(|e| refused(e.to_string()))?;
        match (&spec, self.symbols().resolve_location(site)) {
            (LocationSpec::Address(_), _) => Err(refused(
                "a site is a function or FILE:LINE, not an address".into(),
            )),
            (LocationSpec::Line { file, line }, Ok(_)) => {
                let base = file.rsplit('/').next().unwrap_or(file);
                Ok(format!("{base}:{line}"))
            }
            (LocationSpec::Function(name), Ok(_) | Err(LocationError::Inlined { .. })) => {
                Ok(name.clone())
            }
            (LocationSpec::Function(name), Err(LocationError::NoFunction { hint, .. })) => {
                let hint = if hint.is_empty() {
                    crate::config::nearest(name, self.function_names())
                } else {
                    hint
                };
                Err(refused(format!(
                    "no function `{name}` in the ELF (an allocation site is a function, or FILE:LINE){hint}"
                )))
            }
            (_, Err(e)) => Err(refused(e.to_string())),
        }
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
