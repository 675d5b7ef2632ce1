//! The audit report, as the engine hands it over. The report itself ([`AuditReport`]: its
//! model, its JSON, the one place it is put together) is `memlife-report`'s; this module names
//! it where callers always found it and says what the engine and the script give it: an
//! [`EngineRecord`] from the [`Debugger`] at the end of a run, a [`ScriptRecord`] from the
//! script's outcome.

use crate::debugger::{Debugger, Injected};
use crate::model::InjectedFailure;
use crate::script::ScriptOutcome;

pub use memlife_report::model::{CheckSummary, RunFacts, summarize};
pub use memlife_report::report::{
    AuditReport, EngineRecord, RunContext, ScriptRecord, now_rfc3339,
};

impl From<&Debugger> for EngineRecord {
    /// Everything the engine recorded, copied for the report; late frees are told apart from
    /// leaks on the heap map here.
    fn from(debugger: &Debugger) -> Self {
        let (deferred, deferred_unlisted) = debugger.deferred();
        EngineRecord {
            allocator: debugger.allocator().to_string(),
            heap_size: debugger.heap_size(),
            stops: debugger.progress().stops,
            emulated: debugger.emulated(),
            stepped: debugger.stepped(),
            breakpoints: debugger.breakpoint_use(),
            phases: debugger.records().to_vec(),
            events: debugger.events().to_vec(),
            totals: debugger.totals(),
            cycles: debugger.cycles_done(),
            folded: debugger.folded_report(),
            labels: debugger.labels().clone(),
            components: debugger.config().components.clone(),
            heap_map: debugger.heap_map().map(|mut map| {
                crate::deferred::mark_heap_map(&mut map, &deferred);
                map
            }),
            deferred,
            deferred_unlisted,
            injected: debugger
                .injected()
                .iter()
                .map(InjectedFailure::from)
                .collect(),
            arenas: debugger.arena_record(),
        }
    }
}

impl From<&Injected> for InjectedFailure {
    /// The failure as the report keeps it, without the engine's bookkeeping.
    fn from(i: &Injected) -> Self {
        InjectedFailure {
            site: i.site.clone(),
            request: i.request,
            phase: i.phase.clone(),
            seq: i.seq,
            returned: i.returned.clone(),
        }
    }
}

impl From<&ScriptOutcome> for ScriptRecord {
    fn from(outcome: &ScriptOutcome) -> Self {
        ScriptRecord {
            checks: outcome.checks.clone(),
            dumps: outcome
                .dumps
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            error: outcome.error.clone(),
        }
    }
}
