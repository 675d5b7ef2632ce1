//! Allocation-failure injection: make one chosen allocation return NULL without running the
//! allocator, so a script can watch the firmware's error path (what it frees, what it forgets).
//!
//! At the allocator's traced malloc entry, before its first instruction runs, memlife sets r0
//! (the return value) to 0 and the pc to the caller's return address (lr): to the caller it is
//! `malloc` returning NULL, and the allocator's own state is untouched. Allocation tracing must
//! be on (its breakpoints are the entry).
//!
//! What is chosen ([`FailChoice`]), counting only allocations made after the request:
//! - a site alone: the `nth` allocation from that site (the first frame outside the allocator
//!   and the configured wrappers, as the trace records it), wherever it is made;
//! - a phase alone: the `nth` allocation made during one call of that phase's function (nested
//!   calls included); a call that makes fewer passes, and the count starts over in the next;
//! - both: the `nth` allocation from that site during one call of that phase.
//!
//! When the allocation failed inside a phase, the phase's return value is read at its return
//! through the function's DWARF return type ([`Injected::returned`]).

use std::rc::Rc;

use memlife_core::Register;
use memlife_heap::HeapState;
use serde::Serialize;

use super::Debugger;
use super::alloc_trace::site_of;
use super::run::Regs;
use crate::error::AuditError;
use crate::model::Site;

/// Which allocation to fail (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FailChoice {
    /// A function name (`planner_plan`) or `file:line` (`planner.c:110`).
    pub site: Option<String>,
    /// A phase: a role (`build`) or a function (`graph_build`).
    pub phase: Option<String>,
    /// 1-based.
    pub nth: u64,
}

/// An armed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FailRequest {
    site: Option<String>,
    /// The phase's function.
    phase: Option<String>,
    nth: u64,
    /// Matching allocations still to pass before the one that fails.
    skip: u64,
    /// The phase call the count is for.
    call: Option<u64>,
}

/// An allocation memlife made fail.
#[derive(Debug, Clone, Serialize)]
pub struct Injected {
    /// Its site.
    pub site: Site,
    /// The size asked for.
    pub request: u64,
    /// The phase running, if any (its function).
    pub phase: Option<String>,
    /// The trace event number the next event will have: the events from here on came after
    /// the failure.
    pub seq: u64,
    /// What the phase call returned (`-12`, `NULL`, `ST_NOMEM (-12)`, `void`), read at its
    /// return by the function's DWARF return type; `None` until it returned (or when it never
    /// did).
    pub returned: Option<String>,
    /// The heap at the entry of the phase call it failed in.
    #[serde(skip)]
    pub before: Option<Rc<HeapState>>,
    /// The first event number of that call (of the failure itself outside phases): blocks
    /// allocated from here on and never freed were taken by the failed call or after it.
    #[serde(skip)]
    pub call_seq: u64,
    /// Its phase's return is still to come.
    #[serde(skip)]
    pub(super) awaiting_return: bool,
}

/// Armed requests and what they did.
#[derive(Debug, Default)]
pub(super) struct FailState {
    armed: Option<FailRequest>,
    done: Vec<Injected>,
}

/// Whether `site` is the one `wanted` names: its function, or its `file:line`.
fn matches(site: &Site, wanted: &str) -> bool {
    if site.function.as_deref() == Some(wanted) {
        return true;
    }
    match (&site.file, site.line) {
        (Some(f), Some(l)) => format!("{f}:{l}") == wanted,
        _ => false,
    }
}

impl Debugger {
    /// Makes the allocation `choice` selects return NULL (see the module doc). Needs allocation
    /// tracing (turned on here); replaces a request not yet served.
    pub fn fail_alloc(&mut self, choice: FailChoice) -> Result<(), AuditError> {
        let site = choice
            .site
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let phase = match choice.phase.as_deref().map(str::trim) {
            Some("") => None,
            Some(p) => {
                let function = self.config.phase_function(p).to_string();
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
        if !self.tracing() {
            // Its breakpoints on the allocator's entry are where the failure is made.
            self.set_tracing(true)?;
        }
        self.fail.armed = Some(FailRequest {
            site,
            phase,
            nth: choice.nth,
            skip: choice.nth - 1,
            call: None,
        });
        Ok(())
    }

    /// The allocations made to fail so far, oldest first.
    pub fn injected(&self) -> &[Injected] {
        &self.fail.done
    }

    /// Whether a request waits for its allocation.
    pub fn fail_pending(&self) -> bool {
        self.fail.armed.is_some()
    }

    /// A description of the request waiting, for messages.
    pub(super) fn fail_request_text(&self) -> String {
        let Some(r) = &self.fail.armed else {
            return "none".into();
        };
        let mut parts = Vec::new();
        if let Some(p) = &r.phase {
            parts.push(format!("phase {p}"));
        }
        if let Some(s) = &r.site {
            parts.push(format!("site {s}"));
        }
        parts.push(format!("nth {}", r.nth));
        parts.join(", ")
    }

    /// At the allocator's malloc entry: when this call is the one to fail, returns NULL to its
    /// caller (r0 = 0, pc = lr) and says so; the caller then skips the entry's other work.
    pub(super) fn fail_here(&mut self, regs: &Regs, size_arg: usize) -> Result<bool, AuditError> {
        let Some(req) = self.fail.armed.clone() else {
            return Ok(false);
        };
        let open = self.phases.open_call();
        if let Some(function) = &req.phase {
            if self.phases.open_function() != Some(function.as_str()) {
                return Ok(false);
            }
            let call = open.as_ref().map(|(c, _, _)| *c);
            if req.call != call
                && let Some(r) = self.fail.armed.as_mut()
            {
                // A new call of the phase: its own count.
                r.call = call;
                r.skip = r.nth - 1;
            }
        }
        let backtrace = self.backtrace_with(regs, &[]);
        let site = site_of(&self.symbols, self.trace.skip(), &backtrace);
        if let Some(wanted) = &req.site
            && !matches(&site, wanted)
        {
            return Ok(false);
        }
        if let Some(r) = self.fail.armed.as_mut()
            && r.skip > 0
        {
            r.skip -= 1;
            return Ok(false);
        }
        self.fail.armed = None;
        let t = self.target.as_mut();
        t.write_register(Register::Argument(0), 0)?;
        t.write_register(Register::ProgramCounter, regs.lr & !1)?;
        let phase = self.phases.open_function().map(str::to_string);
        let injected = Injected {
            site,
            request: regs.args.get(size_arg).copied().unwrap_or(0),
            awaiting_return: phase.is_some(),
            phase,
            seq: self.trace.seq,
            returned: None,
            call_seq: open.as_ref().map_or(self.trace.seq, |(_, _, s)| *s),
            before: open.map(|(_, before, _)| before),
        };
        ::tracing::info!(
            "made the allocation of {} B at {} return NULL",
            injected.request,
            injected.site
        );
        self.fail.done.push(injected);
        self.park_watch |= self.park_on_failure;
        Ok(true)
    }

    /// At the return of the open phase: when an allocation failed during this call, what it
    /// returned, read from r0 (and r1) by its DWARF return type.
    pub(super) fn phase_returned(&mut self, regs: &Regs) {
        let Some(function) = self.phases.open_function().map(str::to_string) else {
            return;
        };
        let Some(last) = self.fail.done.last_mut() else {
            return;
        };
        if !last.awaiting_return || last.phase.as_deref() != Some(function.as_str()) {
            return;
        }
        last.awaiting_return = false;
        last.returned = Some(
            self.symbols
                .returned(&function, regs.args[0], regs.args[1])
                .map_or_else(
                    || format!("{:#x} (r0; no DWARF for {function})", regs.args[0]),
                    |r| r.to_string(),
                ),
        );
    }
}

/// One allocation site of a phase call (`t.alloc_sites`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocSite {
    /// The site.
    pub site: Site,
    /// Allocations made there during the call.
    pub count: u64,
    /// The size the first of them asked for.
    pub request: Option<u64>,
}

impl AllocSite {
    /// The name `fail_alloc` takes for it: `file:line` when known, else the function.
    pub fn key(&self) -> String {
        match (&self.site.file, self.site.line) {
            (Some(f), Some(l)) => format!("{f}:{l}"),
            _ => self.site.function.clone().unwrap_or_default(),
        }
    }
}

/// The allocation sites of the events `events` in first-seen order.
pub(crate) fn sites_of(events: &[crate::model::TraceEvent]) -> Vec<AllocSite> {
    let mut out: Vec<AllocSite> = Vec::new();
    for e in events
        .iter()
        .filter(|e| e.kind == crate::model::EventKind::Alloc)
    {
        match out.iter_mut().find(|s| s.site == e.site) {
            Some(s) => s.count += 1,
            None => out.push(AllocSite {
                site: e.site.clone(),
                count: 1,
                request: e.request,
            }),
        }
    }
    out
}

impl Debugger {
    /// The allocation sites of the last completed call of `phase` (a role or a function), in
    /// the order they first allocated; the trace must have been on during that call.
    pub fn alloc_sites(&self, phase: &str) -> Result<Vec<AllocSite>, AuditError> {
        let function = self.config.phase_function(phase);
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
        let events: Vec<crate::model::TraceEvent> = self
            .events()
            .iter()
            .filter(|e| (record.seq_begin..record.seq_end).contains(&e.seq))
            .cloned()
            .collect();
        Ok(sites_of(&events))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_is_named_by_function_or_file_and_line() {
        let site = Site {
            function: Some("planner_plan".into()),
            file: Some("planner.c".into()),
            line: Some(110),
            chain: Vec::new(),
        };
        assert!(matches(&site, "planner_plan"));
        assert!(matches(&site, "planner.c:110"));
        assert!(!matches(&site, "planner.c:111"));
        assert!(!matches(&site, "build_graph"));
    }
}
