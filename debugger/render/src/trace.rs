//! The run as a Chrome trace event file (the JSON object format), which ui.perfetto.dev and
//! `chrome://tracing` open: phases and spans as complete (`X`) slices on their own threads, used
//! and free heap as counter (`C`) tracks, allocations and frees as instant (`i`) events with
//! their size, address and site, `M` metadata naming the process and threads, and TFLM's arena
//! steps on a thread of their own (`crate::arena::trace`).
//!
//! Time: the target has no clock memlife reads, so `ts` counts the steps of the report's
//! timeline (`memlife_report::views::timeline`), one step = [`STEP_US`] µs. Durations compare event counts, not seconds.

use serde_json::{Value, json};

use memlife_report::AuditReport;
use memlife_report::model::EventKind;
use memlife_report::views::Timeline;

/// Microseconds per timeline step.
pub const STEP_US: u64 = 10;

const PID: u64 = 1;
const TID_PHASES: u64 = 1;
const TID_SPANS: u64 = 2;
const TID_ALLOCS: u64 = 3;
const TID_ARENA: u64 = 4;

fn ts(step: u64) -> u64 {
    step * STEP_US
}

/// The trace as a JSON value: `{"traceEvents": [...], "displayTimeUnit": "ms", ...}`.
pub fn trace_json(report: &AuditReport) -> Value {
    let t = Timeline::build(report);
    let mut ev: Vec<Value> = Vec::new();
    let script = std::path::Path::new(&report.run.script)
        .file_name()
        .map_or_else(
            || report.run.script.clone(),
            |n| n.to_string_lossy().into_owned(),
        );
    ev.push(
        json!({"ph": "M", "name": "process_name", "pid": PID, "tid": 0,
        "args": {"name": format!("memlife audit {script}: {}", report.run.elf)}}),
    );
    for (tid, name) in [
        (TID_PHASES, "phases"),
        (TID_SPANS, "spans"),
        (TID_ALLOCS, "allocator"),
    ] {
        ev.push(
            json!({"ph": "M", "name": "thread_name", "pid": PID, "tid": tid,
            "args": {"name": name}}),
        );
        ev.push(
            json!({"ph": "M", "name": "thread_sort_index", "pid": PID, "tid": tid,
            "args": {"sort_index": tid}}),
        );
    }
    for s in &t.phases {
        let p = s.record;
        ev.push(json!({
            "ph": "X", "name": format!("{} ({})", p.function, s.role), "cat": "phase",
            "pid": PID, "tid": TID_PHASES, "ts": ts(s.x0), "dur": ts(s.x1 - s.x0),
            "args": {
                "call": p.call, "before_used": p.before.used, "after_used": p.after.used,
                "delta_used": p.delta_used, "peak_used": p.peak_used,
                "peak_above_before": p.peak_above_before, "allocs": p.allocs, "frees": p.frees,
            }
        }));
    }
    for s in &t.spans {
        let r = s.record;
        ev.push(json!({
            "ph": "X", "name": report.span_name(r), "cat": "span",
            "pid": PID, "tid": TID_SPANS, "ts": ts(s.x0), "dur": ts(s.x1 - s.x0),
            "args": {
                "function": format!("{}#{}", r.function, r.call), "arg": r.args[1],
                "before_used": r.before_used, "after_used": r.after_used, "delta": r.delta,
                "peak_used": r.peak_used,
            }
        }));
    }
    let size = report.run.heap_size;
    for (x, used) in &t.points {
        ev.push(
            json!({"ph": "C", "name": "used heap (B)", "pid": PID, "tid": 0,
            "ts": ts(*x), "args": {"used": used}}),
        );
        ev.push(
            json!({"ph": "C", "name": "free heap (B)", "pid": PID, "tid": 0,
            "ts": ts(*x), "args": {"free": size.saturating_sub(*used)}}),
        );
    }
    for (x, e) in &t.events {
        let name = match e.kind {
            EventKind::Alloc => format!("malloc {} B", e.size),
            EventKind::Free => format!("free {} B", e.size),
        };
        ev.push(json!({
            "ph": "i", "s": "t", "name": name, "cat": e.kind.as_str(),
            "pid": PID, "tid": TID_ALLOCS, "ts": ts(*x),
            "args": {
                "seq": e.seq, "size": e.size, "request": e.request,
                "addr": format!("{:#010x}", e.addr), "used_after": e.used_after,
                "site": e.site.to_string(), "chain": e.site.chain,
                "phase": e.phase, "span": e.span,
            }
        }));
    }
    if let Some(arenas) = &report.arenas {
        ev.extend(crate::arena::trace::events(
            arenas, &t, PID, TID_ARENA, STEP_US,
        ));
    }
    json!({
        "traceEvents": ev,
        "displayTimeUnit": "ms",
        "otherData": {
            "memlife": report.run.memlife, "firmware": report.run.elf,
            "allocator": report.run.allocator, "script": report.run.script,
            "date": report.run.date, "heap_size": report.run.heap_size,
            "totals": report.totals,
            "folded": report.folded.as_ref().map(|f| json!({
                "first_cycle": f.first_cycle, "last_cycle": f.last_cycle, "totals": f.totals,
                "note": "folded cycles are counted in totals and not drawn: the trace jumps from the cycle before them to the one after",
            })),
            "time_base": format!("1 step = {STEP_US} us; a step is one allocator event or phase/span boundary, not target time"),
        }
    })
}
