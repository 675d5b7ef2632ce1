//! The observer's builds as the report keeps them: the first builds in full, and per model the
//! figures of its last build that ran to its end (else its last build), with the smallest arena
//! that works and the spare. A long run keeps its memory bounded: a build past those listed
//! loses its steps and figures once a newer build of its model begins.

use memlife_report::model::arena::MAX_BUILDS;
use memlife_report::model::{ArenaRecord, BuildStatus, ModelArena};

use super::build::Build;

/// The record of these builds, of TFLM of `generation`.
pub fn of(builds: &[Build], generation: memlife_tflm::Generation) -> ArenaRecord {
    ArenaRecord {
        generation: generation.name().into(),
        models: models(builds),
        builds: builds.iter().take(MAX_BUILDS).map(Build::record).collect(),
        builds_unlisted: builds.len().saturating_sub(MAX_BUILDS) as u64,
    }
}

/// Per model, in the order each was first built.
fn models(builds: &[Build]) -> Vec<ModelArena> {
    let mut names: Vec<&str> = Vec::new();
    for b in builds {
        if !names.contains(&b.record.model.as_str()) {
            names.push(&b.record.model);
        }
    }
    names
        .into_iter()
        .filter_map(|name| {
            let of_model: Vec<&Build> = builds.iter().filter(|b| b.record.model == name).collect();
            let chosen = of_model
                .iter()
                .rev()
                .find(|b| b.record.status != BuildStatus::Building)
                .or_else(|| of_model.last())?;
            Some(model(chosen, of_model.len() as u64))
        })
        .collect()
}

fn model(b: &Build, builds: u64) -> ModelArena {
    let r = b.record();
    let spare = r.needs.map(|n| {
        i64::try_from(r.arena_bytes)
            .unwrap_or(i64::MAX)
            .saturating_sub(i64::try_from(n).unwrap_or(i64::MAX))
    });
    ModelArena {
        model: r.model.clone(),
        operators: b
            .summary
            .as_ref()
            .map(|s| s.operators.clone())
            .unwrap_or_default(),
        tensors: b.summary.as_ref().map_or(0, |s| s.tensors),
        builds,
        build: r.index,
        arena_bytes: r.arena_bytes,
        needs: r.needs,
        exact: r.exact,
        spare,
        failed: r.status == BuildStatus::Failed,
        failure: r.failure.clone(),
        persistent_bytes: r.persistent_bytes,
        head_bytes: r.head_bytes,
        temp_peak: r.peaks.iter().map(|p| p.bytes).max().unwrap_or(0),
        inferences: r.inferences,
    }
}

/// A new build of `model` begins: older builds of it past those listed keep their figures but
/// not their steps.
pub fn forget_old_details(builds: &mut [Build], model: &str) {
    for b in builds.iter_mut().skip(MAX_BUILDS) {
        if b.record.model == model && !b.live() {
            b.forget_details();
        }
    }
}
