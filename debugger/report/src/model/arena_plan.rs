//! The tensor plan of one TensorFlow Lite Micro build, as the arena observer read it when the
//! build's `AllocateTensors` returned ok (`memlife_tflm::TensorPlan` in the report's words):
//! each tensor's place in the arena's non-persistent section, its size and lifetime (first and
//! last operator), the activation bytes live at each operator, how often the planner reused
//! each byte, and the buffers that share bytes while both are live. The lists are bounded
//! (the target is untrusted): what is past a cap is counted.

use serde::{Deserialize, Serialize};

/// Tensors listed per plan at most; more are counted (`tensors_unlisted`).
pub const MAX_PLAN_TENSORS: usize = 2048;
/// Operators listed per plan at most; more are counted (`operators_unlisted`).
pub const MAX_PLAN_OPERATORS: usize = 2048;
/// Scratch buffers listed per plan at most; more are counted (`scratch_unlisted`).
pub const MAX_PLAN_SCRATCH: usize = 1024;
/// Overlaps listed per plan at most; all are counted (`overlaps_total`).
pub const MAX_PLAN_OVERLAPS: usize = 100;

/// A build's tensor plan.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct ArenaPlan {
    /// Subgraphs in the model (the plan covers the first).
    pub subgraphs: u32,
    /// The tensors of the first subgraph, by index (the first [`MAX_PLAN_TENSORS`]).
    pub tensors: Vec<PlanTensor>,
    /// Tensors past those listed.
    pub tensors_unlisted: u64,
    /// Scratch buffers operators asked for in Prepare (2020 TFLM keeps their requests).
    pub scratch: Vec<PlanScratch>,
    /// Scratch buffers past those listed.
    pub scratch_unlisted: u64,
    /// The operators in execution order with the activation bytes live while each runs.
    pub operators: Vec<PlanOperator>,
    /// Operators past those listed.
    pub operators_unlisted: u64,
    /// The planned tensors' and scratch buffers' bytes, summed.
    pub planned_bytes: u64,
    /// The non-persistent (head) section's bytes the plan lies in.
    pub head_bytes: u64,
    /// `planned_bytes / head_bytes`: how many times the planner reused each byte (1.0: no
    /// reuse); absent when the head is empty.
    pub reuse_factor: Option<f64>,
    /// The most activation bytes live at one operator.
    pub peak_live_bytes: u64,
    /// The first operator where `peak_live_bytes` is reached.
    pub peak_operator: Option<u32>,
    /// Pairs of buffers sharing bytes while both are live (the first [`MAX_PLAN_OVERLAPS`]).
    pub overlaps: Vec<PlanOverlap>,
    /// How many pairs there are in all.
    pub overlaps_total: u64,
}

/// One tensor of the plan.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct PlanTensor {
    /// Index in the subgraph.
    pub index: u32,
    /// Name from the model.
    pub name: Option<String>,
    /// Element type (`int8`, `float32`...).
    #[serde(rename = "type")]
    pub type_name: String,
    /// Where its data is: `planned` (the arena's head, placed by the planner), `persistent`
    /// (the arena's tail), `read-only` (the model), `unallocated`, `outside`.
    pub kind: String,
    /// Bytes of data.
    pub bytes: Option<u64>,
    /// For planned tensors: its offset from the start of the non-persistent section.
    pub offset: Option<u64>,
    /// The data pointer.
    pub address: Option<u64>,
    /// The first operator that writes it (0 for a graph input); absent for constants.
    pub first_op: Option<u32>,
    /// The last operator that reads it.
    pub last_op: Option<u32>,
}

impl PlanTensor {
    /// The name to show: the model's, else `tensor N`.
    pub fn label(&self) -> String {
        match &self.name {
            Some(n) if !n.is_empty() => n.clone(),
            _ => format!("tensor {}", self.index),
        }
    }
}

/// A scratch buffer of the plan (live only while its operator runs).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct PlanScratch {
    /// The buffer index the operator got.
    pub index: u32,
    /// The operator that asked.
    pub operator: u32,
    /// Bytes asked.
    pub bytes: u64,
    /// Its offset from the start of the non-persistent section, when it lies there.
    pub offset: Option<u64>,
}

/// One operator of the plan.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct PlanOperator {
    /// Index in execution order.
    pub index: u32,
    /// `FULLY_CONNECTED`, or a custom operator's name.
    pub name: String,
    /// Bytes of planned tensors and scratch buffers live while it runs.
    pub live_bytes: u64,
}

/// One side of a [`PlanOverlap`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct PlanBuffer {
    /// `tensor` or `scratch`.
    pub what: String,
    /// Tensor index, or scratch buffer index.
    pub index: u32,
    /// The tensor's name (`scratch N of operator M` for a scratch buffer).
    pub name: String,
    /// Its data.
    pub address: u64,
    /// Its bytes.
    pub bytes: u64,
    /// First operator it is live at.
    pub first_op: u32,
    /// Last operator it is live at.
    pub last_op: u32,
}

/// Two buffers sharing bytes while both are live: one overwrites the other.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct PlanOverlap {
    /// The buffer placed first.
    pub a: PlanBuffer,
    /// The other.
    pub b: PlanBuffer,
    /// The shared bytes, `start..end` (addresses).
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// The operators at which both are live, `first_op..=last_op`.
    pub first_op: u32,
    /// See `first_op`.
    pub last_op: u32,
    /// The overlap in words (`memlife_tflm::Overlap::describe`).
    pub message: String,
}

impl ArenaPlan {
    /// Whether tensor `index` is one side of a listed overlap.
    pub fn overlapped(&self, index: u32) -> bool {
        self.overlaps.iter().any(|o| {
            [&o.a, &o.b]
                .iter()
                .any(|s| s.what == "tensor" && s.index == index)
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_plan_reads_back_and_names_its_overlapped_tensors() {
        let side = |index: u32| PlanBuffer {
            what: "tensor".into(),
            index,
            ..PlanBuffer::default()
        };
        let plan = ArenaPlan {
            tensors: vec![PlanTensor {
                index: 3,
                type_name: "int8".into(),
                kind: "planned".into(),
                offset: Some(16),
                ..PlanTensor::default()
            }],
            overlaps: vec![PlanOverlap {
                a: side(3),
                b: side(4),
                ..PlanOverlap::default()
            }],
            overlaps_total: 1,
            reuse_factor: Some(1.5),
            ..ArenaPlan::default()
        };
        let json = serde_json::to_value(&plan).unwrap();
        assert_eq!(json["tensors"][0]["type"], "int8");
        let back: ArenaPlan = serde_json::from_value(json).unwrap();
        assert_eq!(back, plan);
        assert!(plan.overlapped(3) && plan.overlapped(4));
        assert!(!plan.overlapped(5));
        assert_eq!(plan.tensors[0].label(), "tensor 3");
    }
}
