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
//!
//! This module keeps the request and what was made; the stop that makes the failure is the
//! engine's (`crate::debugger::heap_stops`), the wait for its handling `failure_run`'s.

use std::rc::Rc;

use memlife_dwarf::Symbols;
use memlife_dwarf::demangle::without_params;
use memlife_heap::HeapState;
use serde::Serialize;

use crate::model::{EventKind, Site, TraceEvent};

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
pub struct FailRequest {
    site: Option<String>,
    /// The phase's function.
    phase: Option<String>,
    nth: u64,
    /// Matching allocations still to pass before the one that fails.
    skip: u64,
    /// The phase call the count is for.
    call: Option<u64>,
}

impl FailRequest {
    /// A request for the `nth` allocation from `site` during a call of `phase` (its function);
    /// `nth` at least 1.
    pub fn new(site: Option<String>, phase: Option<String>, nth: u64) -> Self {
        FailRequest {
            site,
            phase,
            nth,
            skip: nth.saturating_sub(1),
            call: None,
        }
    }
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
    pub(crate) awaiting_return: bool,
}

/// The open phase at an allocator's entry, as the choice needs it.
#[derive(Debug, Clone)]
pub struct OpenCall {
    /// The phase's function.
    pub function: String,
    /// Its call number.
    pub call: u64,
    /// The heap at its entry.
    pub before: Rc<HeapState>,
    /// Its first event number.
    pub seq_begin: u64,
}

/// Failures kept in full: a script that fails allocations in a loop keeps the first ones, the
/// latest, and the count of those between.
pub const MAX_LISTED_INJECTED: usize = 256;

/// Armed requests and what they did.
#[derive(Debug, Default)]
pub struct Injection {
    armed: Option<FailRequest>,
    /// The first [`MAX_LISTED_INJECTED`] failures made.
    done: Vec<Injected>,
    /// The latest failure made past them.
    latest: Option<Injected>,
    /// Failures made and no longer kept (between the first ones and the latest).
    unlisted: u64,
    /// Failures made in all.
    made: usize,
    /// Failures whose handling `after_failure` has seen to its end.
    waited: usize,
}

/// Whether `site` is the one `wanted` names: its function (a C++ one with or without its
/// parameter list), or its `file:line`.
fn matches(site: &Site, wanted: &str) -> bool {
    if let Some(f) = site.function.as_deref()
        && (f == wanted || without_params(f) == without_params(wanted))
    {
        return true;
    }
    match (&site.file, site.line) {
        (Some(f), Some(l)) => format!("{f}:{l}") == wanted,
        _ => false,
    }
}

impl Injection {
    /// Arms a request, replacing one not yet served.
    pub fn arm(&mut self, request: FailRequest) {
        self.armed = Some(request);
    }

    /// Whether a request waits for its allocation.
    pub fn pending(&self) -> bool {
        self.armed.is_some()
    }

    /// Whether this allocator entry could be the one: a request is armed and, when it names a
    /// phase, that phase is open (`open`). A new call of the phase starts its count over.
    pub fn may_fail_in(&mut self, open: Option<&OpenCall>) -> bool {
        let Some(req) = self.armed.as_mut() else {
            return false;
        };
        if let Some(function) = &req.phase {
            if open.map(|o| o.function.as_str()) != Some(function.as_str()) {
                return false;
            }
            let call = open.map(|o| o.call);
            if req.call != call {
                // A new call of the phase: its own count.
                req.call = call;
                req.skip = req.nth.saturating_sub(1);
            }
        }
        true
    }

    /// Whether the allocation from `site` is the one to fail (counting it when it matches but
    /// is not yet the `nth`); the request is served when it is.
    pub fn chosen(&mut self, site: &Site) -> bool {
        let Some(req) = self.armed.as_mut() else {
            return false;
        };
        if let Some(wanted) = &req.site
            && !matches(site, wanted)
        {
            return false;
        }
        if req.skip > 0 {
            req.skip -= 1;
            return false;
        }
        self.armed = None;
        true
    }

    /// Records a failure made.
    pub fn made(&mut self, injected: Injected) {
        ::tracing::info!(
            "made the allocation of {} B at {} return NULL",
            injected.request,
            injected.site
        );
        self.made += 1;
        if self.done.len() < MAX_LISTED_INJECTED {
            self.done.push(injected);
        } else if self.latest.replace(injected).is_some() {
            self.unlisted += 1;
        }
    }

    /// The allocations made to fail that are kept, oldest first: the first
    /// [`MAX_LISTED_INJECTED`] and the latest.
    pub fn injected(&self) -> impl Iterator<Item = &Injected> {
        self.done.iter().chain(&self.latest)
    }

    /// Failures made in all.
    pub fn made_count(&self) -> usize {
        self.made
    }

    /// Failures made and no longer kept.
    pub fn unlisted(&self) -> u64 {
        self.unlisted
    }

    /// The `n`-th failure made (0-based), when it is kept: one of the first, or the latest.
    pub fn nth(&self, n: usize) -> Option<&Injected> {
        if n < self.done.len() {
            return self.done.get(n);
        }
        self.latest.as_ref().filter(|_| n + 1 == self.made)
    }

    /// Failures whose handling was seen to its end.
    pub fn waited(&self) -> usize {
        self.waited
    }

    /// The handling of the first `n` failures was seen to its end.
    pub fn set_waited(&mut self, n: usize) {
        self.waited = n;
    }

    /// A description of the request waiting, for messages.
    pub fn request_text(&self) -> String {
        let Some(r) = &self.armed else {
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

    /// At the return of the open phase `function`: when an allocation failed during this call,
    /// what it returned, read from r0 (and r1) by its DWARF return type.
    pub fn phase_returned(&mut self, symbols: &Symbols, function: &str, r0: u64, r1: u64) {
        let Some(last) = self.latest.as_mut().or(self.done.last_mut()) else {
            return;
        };
        if !last.awaiting_return || last.phase.as_deref() != Some(function) {
            return;
        }
        last.awaiting_return = false;
        last.returned = Some(symbols.returned(function, r0, r1).map_or_else(
            || format!("{r0:#x} (r0; no DWARF for {function})"),
            |r| r.to_string(),
        ));
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

/// The allocation sites of `events` in first-seen order.
pub fn sites_of<'a>(events: impl IntoIterator<Item = &'a TraceEvent>) -> Vec<AllocSite> {
    let mut out: Vec<AllocSite> = Vec::new();
    for e in events.into_iter().filter(|e| e.kind == EventKind::Alloc) {
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
        let cpp = Site {
            function: Some("app::LoadModel(app::ModelSpec const&)".into()),
            ..Site::default()
        };
        assert!(matches(&cpp, "app::LoadModel"));
        assert!(!matches(&cpp, "app::Load"));
    }

    #[test]
    fn a_loop_of_failures_keeps_the_first_ones_the_latest_and_a_count() {
        let mut inj = Injection::default();
        let failure = |request| Injected {
            site: Site::default(),
            request,
            phase: None,
            seq: 0,
            returned: None,
            before: None,
            call_seq: 0,
            awaiting_return: false,
        };
        for n in 0..MAX_LISTED_INJECTED as u64 + 10 {
            inj.made(failure(n));
        }
        assert_eq!(inj.made_count(), MAX_LISTED_INJECTED + 10);
        assert_eq!(inj.injected().count(), MAX_LISTED_INJECTED + 1);
        assert_eq!(inj.unlisted(), 9);
        let last = inj.made_count() - 1;
        assert_eq!(inj.nth(last).map(|i| i.request), Some(last as u64));
        assert_eq!(inj.nth(3).map(|i| i.request), Some(3));
        assert!(inj.nth(last - 1).is_none(), "no longer kept");
    }

    #[test]
    fn a_phase_request_counts_per_call_and_a_site_request_only_its_site() {
        let site = |f: &str| Site {
            function: Some(f.into()),
            ..Site::default()
        };
        let open = |call| OpenCall {
            function: "graph_build".into(),
            call,
            before: Rc::new(HeapState::empty("test")),
            seq_begin: 0,
        };
        let mut inj = Injection::default();
        inj.arm(FailRequest::new(None, Some("graph_build".into()), 2));
        assert!(!inj.may_fail_in(None), "outside the phase");
        assert!(inj.may_fail_in(Some(&open(1))));
        assert!(!inj.chosen(&site("a")), "the first of call 1 passes");
        // Call 1 made one allocation only: call 2 counts from the start.
        assert!(inj.may_fail_in(Some(&open(2))));
        assert!(!inj.chosen(&site("a")));
        assert!(inj.may_fail_in(Some(&open(2))));
        assert!(inj.chosen(&site("b")));
        assert!(!inj.pending());
        inj.arm(FailRequest::new(Some("b".into()), None, 1));
        assert!(inj.may_fail_in(None));
        assert!(!inj.chosen(&site("a")), "another site");
        assert!(inj.chosen(&site("b")));
    }
}
