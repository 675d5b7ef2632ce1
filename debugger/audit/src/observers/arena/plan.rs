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

#[cfg(test)]
mod tests {
    use super::*;
    use memlife_tflm::{Operator, PlannedTensor};

    #[test]
    fn lists_are_capped_and_what_is_past_a_cap_is_counted() {
        let tensor = |index: u32| PlannedTensor {
            index,
            name: Some(format!("t{index}")),
            type_name: "int8",
            shape: vec![1, 16],
            bytes: Some(16),
            kind: TensorKind::Planned,
            address: Some(0x2000_0000),
            offset: Some(0),
            first_op: Some(0),
            last_op: Some(1),
        };
        let p = TensorPlan {
            subgraphs: 1,
            tensors: (0..MAX_PLAN_TENSORS as u32 + 3).map(tensor).collect(),
            scratch: Vec::new(),
            operators: vec![Operator {
                index: 0,
                name: "FULLY_CONNECTED".into(),
                inputs: vec![0],
                outputs: vec![1],
                live_bytes: 32,
            }],
            planned_bytes: 32,
            reuse_factor: Some(f64::INFINITY),
            peak_live_bytes: 32,
            peak_operator: Some(0),
            overlaps: Vec::new(),
            overlaps_total: 0,
        };
        let r = of(&p, 16);
        assert_eq!(r.tensors.len(), MAX_PLAN_TENSORS);
        assert_eq!(r.tensors_unlisted, 3);
        assert_eq!(r.tensors[1].kind, "planned");
        assert_eq!(r.tensors[1].type_name, "int8");
        assert_eq!(r.operators[0].live_bytes, 32);
        assert_eq!(r.head_bytes, 16);
        // JSON has no infinity: a reuse factor that is not finite is left out.
        assert_eq!(r.reuse_factor, None);
    }
}
