//! The audit report, as the engine hands it over. The report itself ([`AuditReport`]: its
//! model, its JSON, the one place it is put together) is `memlife-report`'s; this module names
//! it where callers always found it and says what the engine and the script give it: an
//! [`EngineRecord`] from the [`Debugger`] at the end of a run, a [`ScriptRecord`] from the
//! script's outcome.

use crate::debugger::{Debugger, Injected};
use crate::model::{HeapMap, InjectedFailure, PhaseRecord, TraceEvent};
use crate::observers::TaskObserver;
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
        let mut record = EngineRecord {
            allocator: debugger.allocator().to_string(),
            heap_size: debugger.heap_size(),
            stops: debugger.progress().stops,
            emulated: debugger.emulated(),
            stepped: debugger.stepped(),
            breakpoints: debugger.breakpoint_use(),
            trace: debugger.trace_facts(),
            firmware_time: debugger.firmware_time(),
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
                .into_iter()
                .map(InjectedFailure::from)
                .collect(),
            tasks: Vec::new(),
            arenas: debugger.arena_record(),
            injected_unlisted: debugger.injected_unlisted(),
            models: debugger.models(),
        };
        with_tasks(&mut record, debugger);
        record
    }
}

/// What the task observer adds: each event's task and tick (its tags), each phase's and
/// span's ticks and each phase's scope, each heap map block's task, and the tasks' records.
fn with_tasks(record: &mut EngineRecord, debugger: &Debugger) {
    for e in &mut record.events {
        tag_event(e, debugger.event_tags(e.seq));
    }
    let config = debugger.config();
    for p in &mut record.phases {
        p.scope = config.scope_of(&p.function).map(|(_, s)| s.describe());
    }
    let Some(tasks) = debugger.observer::<TaskObserver>() else {
        return;
    };
    for p in &mut record.phases {
        tick_phase(p, tasks);
    }
    if let Some(map) = &mut record.heap_map {
        name_map_tasks(map, tasks);
    }
    record.tasks = tasks.records();
}

/// An event's `task` and `tick` tags as its fields.
fn tag_event(e: &mut TraceEvent, tags: Option<&crate::events::Tags>) {
    for (key, value) in tags.into_iter().flatten() {
        match *key {
            "task" => e.task = Some(value.clone()),
            "tick" => e.tick = value.parse().ok(),
            _ => {}
        }
    }
}

fn tick_phase(p: &mut PhaseRecord, tasks: &TaskObserver) {
    p.ticks = tasks.phase_ticks(&p.function, p.call);
    for s in &mut p.spans {
        s.ticks = tasks.span_ticks(&s.function, s.call);
    }
}

/// Each used block of the map with the task that allocated it, when the trace saw it.
fn name_map_tasks(map: &mut HeapMap, tasks: &TaskObserver) {
    for b in map.blocks.iter_mut().filter(|b| !b.free && !b.unclaimed) {
        b.task = tasks.book().owner(b.addr, b.size).map(|o| o.task.clone());
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
