//! The plan's rules on their own: lifetimes as TFLM's planner computes them, the live bytes per
//! operator, reuse, and the overlap check (bytes shared while both are live fail, bytes reused
//! after one is dead pass).
#![allow(clippy::unwrap_used)]

use super::*;
use crate::model::{ModelOperator, ModelTensor};

fn tensor(name: &str, shape: &[i32], constant: bool) -> ModelTensor {
    ModelTensor {
        name: Some(name.into()),
        tensor_type: 9,
        shape: shape.to_vec(),
        has_data: constant,
        is_variable: false,
    }
}

fn op(inputs: &[i32], outputs: &[i32]) -> ModelOperator {
    ModelOperator {
        opcode_index: 0,
        inputs: inputs.to_vec(),
        outputs: outputs.to_vec(),
    }
}

/// a -> op0 -> b -> op1 -> c -> op2 -> d; w is op0's and op1's weights.
fn chain() -> Model {
    Model {
        tensors: vec![
            tensor("a", &[8], false),
            tensor("w", &[8, 8], true),
            tensor("b", &[16], false),
            tensor("c", &[4], false),
            tensor("d", &[2], false),
        ],
        inputs: vec![0],
        outputs: vec![4],
        operators: vec![op(&[0, 1], &[2]), op(&[2, 1, -1], &[3]), op(&[3], &[4])],
        codes: vec![],
        subgraphs: 1,
    }
}

const NP: (u64, u64) = (0x1000, 0x1100);

fn input(model: &Model, data: [u64; 5]) -> PlanInput<'_> {
    PlanInput {
        model: Some(model),
        data: data.iter().map(|&d| Some(d)).collect(),
        non_persistent: NP,
        head_bytes: 32,
        persistent: (0x1800, 0x2000),
        ..PlanInput::default()
    }
}

#[test]
fn lifetimes_run_from_the_first_writer_to_the_last_reader() {
    let life = lifetimes(&chain());
    assert_eq!(
        life,
        [
            (Some(0), Some(0)), // graph input
            (None, Some(1)),    // weights: read-only
            (Some(0), Some(1)),
            (Some(1), Some(2)),
            (Some(2), Some(2)), // graph output, to the last operator
        ]
    );
}

#[test]
fn reused_bytes_pass_and_the_live_curve_adds_up() {
    let m = chain();
    // a at 0 (8 bytes), b at 16 (16), c at 0 (a is dead), d at 8 (b is dead at op 2).
    let p = build(&input(&m, [0x1000, 0x5000, 0x1010, 0x1000, 0x1008]));
    let kinds: Vec<TensorKind> = p.tensors.iter().map(|t| t.kind).collect();
    assert_eq!(
        kinds,
        [
            TensorKind::Planned,
            TensorKind::ReadOnly,
            TensorKind::Planned,
            TensorKind::Planned,
            TensorKind::Planned
        ]
    );
    assert!(p.overlaps.is_empty(), "{:?}", p.overlaps);
    let live: Vec<u64> = p.operators.iter().map(|o| o.live_bytes).collect();
    assert_eq!(live, [24, 20, 6]);
    assert_eq!((p.peak_live_bytes, p.peak_operator), (24, Some(0)));
    assert_eq!(p.planned_bytes, 30);
    assert_eq!(p.reuse_factor, Some(30.0 / 32.0));
    assert_eq!(p.tensors[2].offset, Some(16));
}

#[test]
fn bytes_shared_while_both_are_live_are_an_overlap() {
    let m = chain();
    // c (written by op 1) over b (read by op 1): both live at op 1.
    let p = build(&input(&m, [0x1000, 0x5000, 0x1010, 0x1014, 0x1000]));
    assert_eq!(p.overlaps_total, 1, "{:?}", p.overlaps);
    let o = &p.overlaps[0];
    assert_eq!((o.a.name.as_str(), o.b.name.as_str()), ("b", "c"));
    assert_eq!(
        (o.a.first_op, o.a.last_op, o.b.first_op, o.b.last_op),
        (0, 1, 1, 2)
    );
    assert_eq!((o.first_op, o.last_op), (1, 1));
    assert_eq!((o.start, o.end), (0x1014, 0x1018));
    assert!(o.describe().contains("tensor 2 \"b\""), "{}", o.describe());
}

#[test]
fn pointers_elsewhere_are_persistent_outside_or_unallocated() {
    let m = chain();
    let mut i = input(&m, [0x1900, 0x5000, 0, 0x9000, 0x1000]);
    i.data[1] = None;
    let p = build(&i);
    let kinds: Vec<TensorKind> = p.tensors.iter().map(|t| t.kind).collect();
    assert_eq!(
        kinds,
        [
            TensorKind::Persistent,
            TensorKind::Unallocated,
            TensorKind::Unallocated,
            TensorKind::Outside,
            TensorKind::Planned
        ]
    );
}

#[test]
fn indices_out_of_range_and_empty_models_are_data() {
    let mut m = chain();
    m.operators.push(op(&[-7, 99, i32::MAX], &[i32::MIN, 5]));
    m.inputs.push(1000);
    m.outputs.push(-1);
    let p = build(&input(&m, [0x1000, 0x5000, 0x1010, 0x1000, 0x1008]));
    assert_eq!(p.operators.len(), 4);
    let empty = build(&PlanInput::default());
    assert!(empty.tensors.is_empty() && empty.operators.is_empty());
    assert_eq!(empty.reuse_factor, None);
}

#[test]
fn many_buffers_at_one_address_are_counted_within_the_bound() {
    let n = 3000;
    let m = Model {
        tensors: (0..n)
            .map(|k| tensor(&format!("t{k}"), &[4], false))
            .collect(),
        inputs: (0..n as i32).collect(),
        outputs: (0..n as i32).collect(),
        operators: vec![op(&[], &[])],
        codes: vec![],
        subgraphs: 1,
    };
    let i = PlanInput {
        model: Some(&m),
        data: vec![Some(0x1000); n],
        non_persistent: NP,
        head_bytes: 16,
        ..PlanInput::default()
    };
    let p = build(&i);
    assert_eq!(p.overlaps.len(), 100);
    assert_eq!(p.overlaps_total, MAX_COMPARISONS);
}
