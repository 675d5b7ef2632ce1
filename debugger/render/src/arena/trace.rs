//! TFLM's arenas in the Perfetto trace: a thread of their own (`tflm arena`) with one slice per
//! persistent allocation (its operator, stage, category and bytes), and per build a counter of
//! the tail's persistent bytes after each step.
//!
//! The steps carry no timeline step of their own: a build's steps are spread evenly over the
//! phase slice its `AllocateTensors` was called in (its `phase` and `call`), and over the
//! steps after the timeline's end when that phase is not on it.

use serde_json::{Value, json};

use memlife_report::model::ArenaRecord;
use memlife_report::views::Timeline;

/// The arena thread's events (its `M` metadata included); `us` turns a timeline step into µs.
pub fn events(arenas: &ArenaRecord, t: &Timeline<'_>, pid: u64, tid: u64, us: u64) -> Vec<Value> {
    let mut ev = vec![
        json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
            "args": {"name": "tflm arena"}}),
        json!({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
            "args": {"sort_index": tid}}),
    ];
    let mut after_end = t.end.saturating_add(1);
    for b in &arenas.builds {
        let steps: Vec<_> = b.steps.iter().filter(|s| !s.failed).collect();
        if steps.is_empty() {
            continue;
        }
        let slot = t.phases.iter().find(|p| {
            Some(p.record.function.as_str()) == b.phase.as_deref() && Some(p.record.call) == b.call
        });
        let (x0, x1) = match slot {
            Some(p) => (p.x0, p.x1.max(p.x0 + 1)),
            None => {
                let span = (after_end, after_end + steps.len() as u64);
                after_end = span.1;
                span
            }
        };
        let start = (x0 * us) as f64;
        let each = ((x1 - x0) * us) as f64 / steps.len() as f64;
        let counter = format!("arena persistent (B): build {} {}", b.index, b.model);
        let mut persistent = 0u64;
        ev.push(
            json!({"ph": "C", "name": counter, "pid": pid, "tid": tid, "ts": start,
            "args": {"persistent": 0}}),
        );
        for (k, s) in steps.iter().enumerate() {
            let ts = start + each * k as f64;
            let who = match (&s.operator, s.node) {
                (_, n) if n < 0 => "setup".to_string(),
                (Some(op), n) => format!("{n} {op}"),
                (None, n) => format!("node {n}"),
            };
            persistent = persistent.saturating_add(s.bytes);
            ev.push(json!({
                "ph": "X", "name": format!("{who}: {} {} B", s.category, s.bytes), "cat": "arena",
                "pid": pid, "tid": tid, "ts": ts, "dur": each,
                "args": {
                    "build": b.index, "model": b.model, "node": s.node, "operator": s.operator,
                    "stage": s.stage, "category": s.category, "bytes": s.bytes,
                    "requested": s.requested, "address": format!("{:#010x}", s.address),
                    "site": s.site, "persistent_after": persistent,
                }
            }));
            ev.push(json!({"ph": "C", "name": counter, "pid": pid, "tid": tid,
                "ts": ts + each, "args": {"persistent": persistent}}));
        }
    }
    ev
}
