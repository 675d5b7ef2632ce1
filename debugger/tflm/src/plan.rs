//! The tensor plan of one interpreter, rebuilt from what a halted target holds: each tensor's
//! place (its data pointer against the arena's sections) and size, its lifetime from the model's
//! operators in execution order, and from them the activation bytes live at each operator, the
//! reuse factor and the overlap check (two buffers sharing bytes while both are live).
//! [`build`] is pure: the reading gathers its input, so the rules are tested on their own.

use serde::Serialize;

use crate::model::{Model, tensor_type};

/// Where a tensor's data is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TensorKind {
    /// In the arena's non-persistent section: placed by the memory planner, shares bytes with
    /// tensors whose lifetimes do not meet.
    Planned,
    /// In the arena's persistent section (variables).
    Persistent,
    /// In the model: weights and constants.
    ReadOnly,
    /// No data pointer (not allocated, or an optional input left out).
    Unallocated,
    /// Anywhere else (the application pointed it at a buffer of its own).
    Outside,
}

/// One tensor of the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedTensor {
    /// Index in the subgraph.
    pub index: u32,
    /// Name from the model.
    pub name: Option<String>,
    /// Element type (the schema's `TensorType`, lower case).
    #[serde(rename = "type")]
    pub type_name: &'static str,
    /// Dimensions.
    pub shape: Vec<i32>,
    /// Bytes of data (the runtime tensor's own figure where it keeps one, else elements times
    /// element size).
    pub bytes: Option<u64>,
    /// Where the data is.
    pub kind: TensorKind,
    /// The data pointer.
    pub address: Option<u64>,
    /// For planned tensors: the data pointer minus the start of the non-persistent section.
    pub offset: Option<u64>,
    /// The first operator that writes it (0 for a graph input); `None` for constants.
    pub first_op: Option<u32>,
    /// The last operator that reads it (the last operator for a graph output).
    pub last_op: Option<u32>,
}

/// A scratch buffer an operator asked for in Prepare (2020 TFLM keeps their requests).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScratchBuffer {
    /// The buffer index the operator got.
    pub index: u32,
    /// The operator that asked (it lives only while that operator runs).
    pub operator: u32,
    /// Bytes asked.
    pub bytes: u64,
    /// Where it was placed.
    pub address: u64,
    /// Its place minus the start of the non-persistent section.
    pub offset: Option<u64>,
}

/// One operator, in execution order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Operator {
    /// Index in execution order.
    pub index: u32,
    /// Builtin operator name (`FULLY_CONNECTED`) or the custom operator's name.
    pub name: String,
    /// Tensor indices it reads (-1: an optional input left out).
    pub inputs: Vec<i32>,
    /// Tensor indices it writes.
    pub outputs: Vec<i32>,
    /// Bytes of planned tensors and scratch buffers live while it runs.
    pub live_bytes: u64,
}

/// One side of an [`Overlap`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BufferRef {
    /// `tensor` or `scratch`.
    pub what: &'static str,
    /// Tensor index, or scratch buffer index.
    pub index: u32,
    /// The tensor's name (a scratch buffer's is `scratch N of operator M`).
    pub name: String,
    /// Its data.
    pub address: u64,
    /// Its bytes.
    pub bytes: u64,
    /// First and last operator it is live at.
    pub first_op: u32,
    /// See `first_op`.
    pub last_op: u32,
}

/// Two buffers that share bytes while both are live: one overwrites the other.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Overlap {
    /// The buffer placed first.
    pub a: BufferRef,
    /// The other.
    pub b: BufferRef,
    /// The shared bytes, `start..end`.
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// The operators at which both are live, `first_op..=last_op`.
    pub first_op: u32,
    /// See `first_op`.
    pub last_op: u32,
}

impl Overlap {
    /// `tensor 3 "dense_2" (ops 1..2) and tensor 4 "dense_3" (ops 2..3) share 0x20001040..0x20001050
    /// (16 bytes) while both are live at operators 2..2`.
    pub fn describe(&self) -> String {
        let side = |r: &BufferRef| {
            format!(
                "{} {} \"{}\" ({} bytes at {:#010x}, live at operators {}..{})",
                r.what, r.index, r.name, r.bytes, r.address, r.first_op, r.last_op
            )
        };
        format!(
            "{} and {} share {:#010x}..{:#010x} ({} bytes) while both are live at operators {}..{}",
            side(&self.a),
            side(&self.b),
            self.start,
            self.end,
            self.end - self.start,
            self.first_op,
            self.last_op
        )
    }
}

/// The tensor plan of one interpreter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorPlan {
    /// Subgraphs in the model (the plan covers the first).
    pub subgraphs: u32,
    /// Every tensor of the first subgraph.
    pub tensors: Vec<PlannedTensor>,
    /// Scratch buffers (2020 TFLM; current TFLM drops their requests once placed).
    pub scratch: Vec<ScratchBuffer>,
    /// Operators in execution order.
    pub operators: Vec<Operator>,
    /// Sum of the planned tensors' and scratch buffers' bytes.
    pub planned_bytes: u64,
    /// `planned_bytes` over the non-persistent section's bytes: how many times the planner
    /// reused each byte (1.0: no reuse); `None` when the section is empty.
    pub reuse_factor: Option<f64>,
    /// The most bytes live at one operator, and the first operator where it is reached.
    pub peak_live_bytes: u64,
    /// See `peak_live_bytes`.
    pub peak_operator: Option<u32>,
    /// Pairs of buffers that share bytes while both are live (the first 100).
    pub overlaps: Vec<Overlap>,
    /// How many pairs there are in all.
    pub overlaps_total: u64,
}

/// What [`build`] needs, gathered by the reading.
#[derive(Debug, Clone, Default)]
pub(crate) struct PlanInput<'m> {
    pub model: Option<&'m Model>,
    /// Per tensor: its data pointer as the runtime tensor holds it (`None`: unreadable).
    pub data: Vec<Option<u64>>,
    /// Per tensor: the runtime tensor's `bytes` (2020), when it keeps one.
    pub bytes: Vec<Option<u64>>,
    /// Per operator: its name from its registration (else the model's operator code).
    pub op_names: Vec<String>,
    /// Scratch buffers as `(index, operator, bytes, address)`.
    pub scratch: Vec<(u32, u32, u64, u64)>,
    /// The non-persistent section `start..end` (planned tensors) and its used bytes.
    pub non_persistent: (u64, u64),
    pub head_bytes: u64,
    /// The persistent section `start..end`.
    pub persistent: (u64, u64),
}

/// At most this many overlaps are listed (all are counted).
const MAX_OVERLAPS_LISTED: usize = 100;
/// The overlap sweep stops after this many comparisons (a plan of thousands of tensors at one
/// address, which only a damaged target gives).
const MAX_COMPARISONS: u64 = 4_000_000;

/// Each tensor's first and last operator, as TFLM's planner computes them: graph inputs are
/// created at operator 0, graph outputs live to the last operator, otherwise from the first
/// operator that writes a tensor to the last that reads it.
pub(crate) fn lifetimes(model: &Model) -> Vec<(Option<u32>, Option<u32>)> {
    let n = model.tensors.len();
    let mut life: Vec<(Option<u32>, Option<u32>)> = vec![(None, None); n];
    let index = |t: i32| usize::try_from(t).ok().filter(|&i| i < n);
    let ops = u32::try_from(model.operators.len()).unwrap_or(u32::MAX);
    for i in model.inputs.iter().filter_map(|&t| index(t)) {
        if let Some(l) = life.get_mut(i) {
            l.0 = Some(0);
        }
    }
    if let Some(last) = ops.checked_sub(1) {
        for i in model.outputs.iter().filter_map(|&t| index(t)) {
            if let Some(l) = life.get_mut(i) {
                l.1 = Some(last);
            }
        }
    }
    for (op, o) in (0u32..).zip(&model.operators) {
        for i in o.inputs.iter().filter_map(|&t| index(t)) {
            if let Some(l) = life.get_mut(i) {
                l.1 = Some(l.1.map_or(op, |x| x.max(op)));
            }
        }
        for i in o.outputs.iter().filter_map(|&t| index(t)) {
            if let Some(l) = life.get_mut(i) {
                l.0 = Some(l.0.map_or(op, |x| x.min(op)));
            }
        }
    }
    life
}

fn inside(p: u64, (s, e): (u64, u64)) -> bool {
    p >= s && p < e
}

/// The plan (see the module doc).
pub(crate) fn build(input: &PlanInput<'_>) -> TensorPlan {
    let empty = Model::default();
    let model = input.model.unwrap_or(&empty);
    let life = lifetimes(model);
    let n_ops = u32::try_from(model.operators.len()).unwrap_or(u32::MAX);
    let np = input.non_persistent;
    let mut tensors = Vec::with_capacity(model.tensors.len());
    for (index, t) in (0u32..).zip(&model.tensors) {
        let i = index as usize;
        let address = input.data.get(i).copied().flatten().filter(|&p| p != 0);
        let kind = match address {
            None => TensorKind::Unallocated,
            Some(p) if inside(p, np) => TensorKind::Planned,
            Some(p) if inside(p, input.persistent) => TensorKind::Persistent,
            Some(_) if t.has_data => TensorKind::ReadOnly,
            Some(_) => TensorKind::Outside,
        };
        let (first_op, last_op) = life.get(i).copied().unwrap_or((None, None));
        tensors.push(PlannedTensor {
            index,
            name: t.name.clone(),
            type_name: tensor_type(t.tensor_type).0,
            shape: t.shape.clone(),
            bytes: input.bytes.get(i).copied().flatten().or_else(|| t.bytes()),
            kind,
            offset: address
                .filter(|_| kind == TensorKind::Planned)
                .map(|p| p - np.0),
            address,
            first_op,
            last_op,
        });
    }
    let scratch: Vec<ScratchBuffer> = input
        .scratch
        .iter()
        .map(|&(index, operator, bytes, address)| ScratchBuffer {
            index,
            operator,
            bytes,
            address,
            offset: inside(address, np).then(|| address - np.0),
        })
        .collect();
    let buffers = planned_buffers(&tensors, &scratch, n_ops);
    let live = live_bytes(&buffers, n_ops);
    let (peak_live_bytes, peak_operator) = live.iter().zip(0u32..).fold(
        (0, None),
        |(best, at), (&b, i)| if b > best { (b, Some(i)) } else { (best, at) },
    );
    let planned_bytes = buffers.iter().fold(0u64, |a, b| a.saturating_add(b.bytes));
    let (overlaps, overlaps_total) = overlaps(&buffers);
    let operators = (0u32..)
        .zip(&model.operators)
        .map(|(i, o)| Operator {
            index: i,
            name: input
                .op_names
                .get(i as usize)
                .cloned()
                .unwrap_or_else(|| format!("operator {i}")),
            inputs: o.inputs.clone(),
            outputs: o.outputs.clone(),
            live_bytes: live.get(i as usize).copied().unwrap_or(0),
        })
        .collect();
    TensorPlan {
        subgraphs: model.subgraphs,
        tensors,
        scratch,
        operators,
        planned_bytes,
        reuse_factor: (input.head_bytes > 0)
            .then(|| planned_bytes as f64 / input.head_bytes as f64),
        peak_live_bytes,
        peak_operator,
        overlaps,
        overlaps_total,
    }
}

/// The planned tensors and the scratch buffers that have bytes, as [`BufferRef`]s with
/// lifetimes (a planned tensor with half a lifetime is taken as live from the first or to the
/// last operator: the check errs on the side of an overlap).
fn planned_buffers(
    tensors: &[PlannedTensor],
    scratch: &[ScratchBuffer],
    n_ops: u32,
) -> Vec<BufferRef> {
    let last = n_ops.saturating_sub(1);
    let mut out: Vec<BufferRef> = tensors
        .iter()
        .filter(|t| t.kind == TensorKind::Planned)
        .filter_map(|t| {
            Some(BufferRef {
                what: "tensor",
                index: t.index,
                name: t.name.clone().unwrap_or_default(),
                address: t.address?,
                bytes: t.bytes.filter(|&b| b > 0)?,
                first_op: t.first_op.unwrap_or(0),
                last_op: t.last_op.unwrap_or(last),
            })
        })
        .collect();
    out.extend(
        scratch
            .iter()
            .filter(|s| s.offset.is_some() && s.bytes > 0)
            .map(|s| BufferRef {
                what: "scratch",
                index: s.index,
                name: format!("scratch {} of operator {}", s.index, s.operator),
                address: s.address,
                bytes: s.bytes,
                first_op: s.operator,
                last_op: s.operator,
            }),
    );
    out
}

/// Bytes live at each operator (a difference array: linear in tensors plus operators).
fn live_bytes(buffers: &[BufferRef], n_ops: u32) -> Vec<u64> {
    let n = n_ops as usize;
    let mut delta = vec![0i128; n + 1];
    for b in buffers {
        let (f, l) = (b.first_op as usize, b.last_op as usize);
        if f > l || f >= n {
            continue;
        }
        if let Some(d) = delta.get_mut(f) {
            *d += i128::from(b.bytes);
        }
        if let Some(d) = delta.get_mut((l + 1).min(n)) {
            *d -= i128::from(b.bytes);
        }
    }
    let mut acc = 0i128;
    delta
        .iter()
        .take(n)
        .map(|d| {
            acc += d;
            u64::try_from(acc).unwrap_or(0)
        })
        .collect()
}

/// Pairs of buffers sharing bytes while both are live: a sweep over the buffers by address,
/// each compared with those that start before it ends.
fn overlaps(buffers: &[BufferRef]) -> (Vec<Overlap>, u64) {
    let mut sorted: Vec<&BufferRef> = buffers.iter().collect();
    sorted.sort_by_key(|b| (b.address, b.what, b.index));
    let mut listed = Vec::new();
    let mut total = 0u64;
    let mut comparisons = 0u64;
    for (i, a) in sorted.iter().enumerate() {
        let a_end = a.address.saturating_add(a.bytes);
        for b in sorted.iter().skip(i + 1) {
            if b.address >= a_end || comparisons >= MAX_COMPARISONS {
                break;
            }
            comparisons += 1;
            let (first, last) = (a.first_op.max(b.first_op), a.last_op.min(b.last_op));
            if first > last {
                continue;
            }
            total += 1;
            if listed.len() < MAX_OVERLAPS_LISTED {
                listed.push(Overlap {
                    a: (*a).clone(),
                    b: (*b).clone(),
                    start: b.address,
                    end: a_end.min(b.address.saturating_add(b.bytes)),
                    first_op: first,
                    last_op: last,
                });
            }
        }
    }
    (listed, total)
}

#[cfg(test)]
mod tests;
