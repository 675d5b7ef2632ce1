//! A build's tensor plan for the report: `memlife_tflm::TensorPlan`, read when the build's
//! `AllocateTensors` returned ok, turned into the report model's bounded `ArenaPlan`.

use memlife_report::model::arena_plan::{
    MAX_PLAN_OPERATORS, MAX_PLAN_OVERLAPS, MAX_PLAN_SCRATCH, MAX_PLAN_TENSORS,
};
use memlife_report::model::{
    ArenaPlan, PlanBuffer, PlanOperator, PlanOverlap, PlanScratch, PlanTensor,
};
use memlife_tflm::{BufferRef, TensorKind, TensorPlan};

/// The report's plan, with `head_bytes` the arena's head when it was read.
pub fn of(p: &TensorPlan, head_bytes: u64) -> ArenaPlan {
    let unlisted = |n: usize, cap: usize| n.saturating_sub(cap) as u64;
    ArenaPlan {
        subgraphs: p.subgraphs,
        tensors: p
            .tensors
            .iter()
            .take(MAX_PLAN_TENSORS)
            .map(tensor)
            .collect(),
        tensors_unlisted: unlisted(p.tensors.len(), MAX_PLAN_TENSORS),
        scratch: p
            .scratch
            .iter()
            .take(MAX_PLAN_SCRATCH)
            .map(|s| PlanScratch {
                index: s.index,
                operator: s.operator,
                bytes: s.bytes,
                offset: s.offset,
            })
            .collect(),
        scratch_unlisted: unlisted(p.scratch.len(), MAX_PLAN_SCRATCH),
        operators: p
            .operators
            .iter()
            .take(MAX_PLAN_OPERATORS)
            .map(|o| PlanOperator {
                index: o.index,
                name: o.name.clone(),
                live_bytes: o.live_bytes,
            })
            .collect(),
        operators_unlisted: unlisted(p.operators.len(), MAX_PLAN_OPERATORS),
        planned_bytes: p.planned_bytes,
        head_bytes,
        reuse_factor: p.reuse_factor.filter(|r| r.is_finite()),
        peak_live_bytes: p.peak_live_bytes,
        peak_operator: p.peak_operator,
        overlaps: p
            .overlaps
            .iter()
            .take(MAX_PLAN_OVERLAPS)
            .map(|o| PlanOverlap {
                a: buffer(&o.a),
                b: buffer(&o.b),
                start: o.start,
                end: o.end,
                first_op: o.first_op,
                last_op: o.last_op,
                message: o.describe(),
            })
            .collect(),
        overlaps_total: p.overlaps_total,
    }
}

fn tensor(t: &memlife_tflm::PlannedTensor) -> PlanTensor {
    PlanTensor {
        index: t.index,
        name: t.name.clone(),
        type_name: t.type_name.to_string(),
        kind: kind(t.kind).to_string(),
        bytes: t.bytes,
        offset: t.offset,
        address: t.address,
        first_op: t.first_op,
        last_op: t.last_op,
    }
}

fn kind(k: TensorKind) -> &'static str {
    match k {
        TensorKind::Planned => "planned",
        TensorKind::Persistent => "persistent",
        TensorKind::ReadOnly => "read-only",
        TensorKind::Unallocated => "unallocated",
        TensorKind::Outside => "outside",
    }
}

fn buffer(b: &BufferRef) -> PlanBuffer {
    PlanBuffer {
        what: b.what.to_string(),
        index: b.index,
        name: b.name.clone(),
        address: b.address,
        bytes: b.bytes,
        first_op: b.first_op,
        last_op: b.last_op,
    }
}

/// The plan of the interpreter at `interpreter` whose arena has `cursors`, read at the return
/// of its `AllocateTensors` (ok); `None` when it cannot be read (the log says why).
pub fn read(
    mem: &mut dyn memlife_core::Memory,
    symbols: &memlife_dwarf::Symbols,
    layout: &memlife_tflm::LiveLayout,
    interpreter: u64,
    cursors: &memlife_tflm::Cursors,
) -> Option<ArenaPlan> {
    let tflm = memlife_tflm::Tflm::detect(symbols)?;
    let model = layout.model(mem, interpreter)?;
    let plan = memlife_tflm::interpreter_plan(mem, symbols, &tflm, interpreter, model, cursors)?;
    Some(of(&plan, cursors.head_bytes()))
}
