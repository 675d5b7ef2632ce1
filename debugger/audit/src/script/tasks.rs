//! The tasks area of the script API, on an RTOS firmware: whether the firmware has tasks, what
//! each did on the heap, and the least stack margin each reached with where. (A heap's split by
//! task is the heap area's `h.by_task`; a leak's task is in `t.leaks`.)
//!
//! ```rhai
//! if t.has_tasks() {
//!     for m in t.stack_margins() { print(`${m.task}: ${m.bytes} B left, at ${m.place}`); }
//!     for r in t.task_totals() { print(`${r.task}: ${r.live_bytes} B held`); }
//! }
//! ```

use rhai::{Array, Dynamic, Engine, Map, NativeCallContext};

use super::convert::{int, opt_int, opt_string};
use super::handle::{RhaiResult, TargetHandle};
use crate::model::{StackMargin, TaskRecord};
use crate::observers::TaskObserver;

/// Registers the tasks area.
pub(crate) fn register(engine: &mut Engine) {
    engine.register_fn(
        "has_tasks",
        |ctx: NativeCallContext, t: &mut TargetHandle| {
            // A FreeRTOS kernel memlife reads: events and heaps know their tasks.
            t.with(&ctx, |d| d.has_tasks())
        },
    );
    engine.register_fn(
        "stack_margins",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<Array> {
            // The least stack each task had left at the phase and span boundaries seen.
            t.with(&ctx, |d| {
                d.observer::<TaskObserver>()
                    .map(TaskObserver::stack_margins)
                    .unwrap_or_default()
                    .iter()
                    .map(|(task, m)| margin_map(task, m))
                    .collect()
            })
        },
    );
    engine.register_fn(
        "task_totals",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<Array> {
            // What each task allocated and freed, and what it holds now.
            t.with(&ctx, |d| {
                d.observer::<TaskObserver>()
                    .map(TaskObserver::records)
                    .unwrap_or_default()
                    .iter()
                    .map(record_map)
                    .collect()
            })
        },
    );
}

/// A stack margin: `task`, `bytes`, `words`, `phase`, `span`, `arg`, `label` (each `()` when
/// unknown) and `place` (`inference_run#1 / op_invoke#8 (layer 7 conv_b)`).
fn margin_map(task: &str, m: &StackMargin) -> Dynamic {
    let mut map = Map::new();
    map.insert("task".into(), task.to_string().into());
    map.insert("bytes".into(), Dynamic::from_int(int(m.bytes)));
    map.insert("words".into(), Dynamic::from_int(int(m.words)));
    map.insert("phase".into(), opt_string(m.phase.as_ref()));
    map.insert("span".into(), opt_string(m.span.as_ref()));
    map.insert("arg".into(), opt_int(m.arg));
    map.insert("label".into(), opt_string(m.label.as_ref()));
    map.insert("place".into(), m.place().into());
    Dynamic::from_map(map)
}

/// A task's totals: `task`, `allocs`, `allocated_bytes`, `frees`, `freed_bytes`,
/// `live_blocks`, `live_bytes`.
fn record_map(r: &TaskRecord) -> Dynamic {
    let mut m = Map::new();
    m.insert("task".into(), r.task.clone().into());
    for (k, v) in [
        ("allocs", r.allocs),
        ("allocated_bytes", r.allocated_bytes),
        ("frees", r.frees),
        ("freed_bytes", r.freed_bytes),
        ("live_blocks", r.live_blocks),
        ("live_bytes", r.live_bytes),
    ] {
        m.insert(k.into(), Dynamic::from_int(int(v)));
    }
    Dynamic::from_map(m)
}
