//! The TensorFlow Lite Micro area of the script API: running the firmware until each model was
//! built and run once (`t.observe_arenas()`), and what the arena observer recorded: per model
//! the arena and the smallest that works (`t.arena_models()`), every build
//! (`t.arena_builds()`), and the steps and temporary peaks of the last build that ended
//! (`t.arena_steps()`, `t.arena_peaks()`). The maps have the report's keys (docs/tflm.md); on a firmware without
//! TFLM (or before any build) the arrays are empty.
//!
//! ```rhai
//! let end = t.observe_arenas();              // #{kind: "repeated", model: "g_model"}
//! for m in t.arena_models() { print(`${m.model}: needs ${m.needs} B of ${m.arena_bytes}`); }
//! for s in t.arena_steps() { print(`node ${s.node} ${s.category} ${s.bytes} B`); }
//! ```

use rhai::{Array, Dynamic, Engine, Map, NativeCallContext};

use super::convert::json_to_dynamic;
use super::handle::{RhaiResult, TargetHandle, err};
use super::sandbox::MAX_ARRAY;
use crate::debugger::ArenaEnd;
use crate::model::{ArenaBuild, ArenaRecord, BuildStatus};

/// Builds `t.observe_arenas()` lets begin unless told otherwise.
const DEFAULT_BUILDS: i64 = 16;

/// Registers the TFLM area.
pub(crate) fn register(engine: &mut Engine) {
    engine.register_fn(
        "observe_arenas",
        |ctx: NativeCallContext, t: &mut TargetHandle| observe(&ctx, t, DEFAULT_BUILDS),
    );
    engine.register_fn(
        "observe_arenas",
        |ctx: NativeCallContext, t: &mut TargetHandle, builds: i64| observe(&ctx, t, builds),
    );
    engine.register_fn(
        "arena_models",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<Array> {
            let r = record(&ctx, t)?;
            Ok(list(&r.models))
        },
    );
    engine.register_fn(
        "arena_builds",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<Array> {
            let r = record(&ctx, t)?;
            Ok(list(&r.builds))
        },
    );
    engine.register_fn(
        "arena_steps",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<Array> {
            let r = record(&ctx, t)?;
            Ok(last_ended(&r).map_or_else(Array::new, |b| list(&b.steps)))
        },
    );
    engine.register_fn(
        "arena_peaks",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<Array> {
            let r = record(&ctx, t)?;
            Ok(last_ended(&r).map_or_else(Array::new, |b| list(&b.peaks)))
        },
    );
}

/// What the arena observer recorded so far (empty without one).
fn record(ctx: &NativeCallContext, t: &TargetHandle) -> RhaiResult<ArenaRecord> {
    Ok(t.with(ctx, |d| d.arena_record())?.unwrap_or_default())
}

/// The last build that ended (`AllocateTensors` returned), else the last one begun: after
/// `t.observe_arenas()` the target is halted where a model's next build begins, which has
/// only its construction to show.
fn last_ended(r: &ArenaRecord) -> Option<&ArenaBuild> {
    r.builds
        .iter()
        .rev()
        .find(|b| b.status != BuildStatus::Building)
        .or_else(|| r.builds.last())
}

/// Each record as a map with the report's keys.
fn list<T: serde::Serialize>(items: &[T]) -> Array {
    items
        .iter()
        .map(|i| json_to_dynamic(&serde_json::to_value(i).unwrap_or_default()))
        .collect()
}

/// `t.observe_arenas(builds)`: runs until each model was built and run once; how it ended.
fn observe(ctx: &NativeCallContext, t: &TargetHandle, builds: i64) -> RhaiResult<Map> {
    t.no_run_control_in_hooks(ctx)?;
    let builds = u64::try_from(builds)
        .ok()
        .filter(|b| (1..=MAX_ARRAY as u64).contains(b))
        .ok_or_else(|| {
            err(
                ctx,
                format!("observe_arenas({builds}): the build count must be 1 to {MAX_ARRAY}"),
            )
        })?;
    let (end, _) = t.try_with(ctx, |d| d.observe_arenas(builds))?;
    let mut m = Map::new();
    let (kind, extra): (&str, Option<(&str, Dynamic)>) = match end {
        ArenaEnd::Repeated(model) => ("repeated", Some(("model", model.into()))),
        ArenaEnd::Exited(status) => ("exited", Some(("status", i64::from(status).into()))),
        ArenaEnd::Quiet => ("quiet", None),
        ArenaEnd::Limit => ("limit", None),
    };
    m.insert("kind".into(), kind.into());
    if let Some((k, v)) = extra {
        m.insert(k.into(), v);
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{Rig, one_load};
    use super::*;

    #[test]
    fn without_tflm_the_arrays_are_empty_and_observing_is_an_error() {
        let mut rig = Rig::new(one_load(), &[register]);
        let n: i64 = rig
            .eval("t.arena_models().len() + t.arena_builds().len() + t.arena_steps().len()")
            .unwrap();
        assert_eq!(n, 0);
        let e = rig.error("t.observe_arenas()");
        assert!(
            e.contains("tflite::MicroInterpreter::AllocateTensors"),
            "{e}"
        );
        let e = rig.error("t.observe_arenas(0)");
        assert!(e.contains("the build count must be 1"), "{e}");
    }

    #[test]
    fn the_steps_shown_are_the_last_ended_builds_not_one_just_begun() {
        let build = |index, status| ArenaBuild {
            index,
            status,
            ..ArenaBuild::default()
        };
        let mut r = ArenaRecord::default();
        assert!(last_ended(&r).is_none());
        r.builds.push(build(1, BuildStatus::Building));
        assert_eq!(last_ended(&r).map(|b| b.index), Some(1));
        r.builds = vec![
            build(1, BuildStatus::Ok),
            build(2, BuildStatus::Failed),
            build(3, BuildStatus::Building),
        ];
        assert_eq!(last_ended(&r).map(|b| b.index), Some(2));
    }
}
