//! What an interpreter holds once `AllocateTensors` succeeded, read for its tensor plan: the
//! model flatbuffer (`model_`), the runtime tensors' data pointers (2020: the `TfLiteTensor`s of
//! its context; current: the `TfLiteEvalTensor`s of its first subgraph), the operators'
//! registrations and 2020's scratch buffer handles; and what the plan finds wrong.

use crate::arena::ArenaAnomaly;
use crate::flatbuffer::Fb;
use crate::layout::{Generation, Tflm};
use crate::model::{self, MAX_ENTRIES, Model};
use crate::plan::{self, PlanInput, TensorKind, TensorPlan};
use crate::ram::Ram;
use crate::scan::{self, Container};

/// At most this many scratch buffers are read per interpreter.
const MAX_SCRATCH: u64 = 1024;
/// Custom operator names are cut at this many bytes.
const MAX_OP_NAME: usize = 64;

/// What a plan finds wrong: each overlap, each tensor pointing outside the arena and the model.
pub(crate) fn plan_anomalies(p: &TensorPlan) -> Vec<ArenaAnomaly> {
    let overlaps = p.overlaps.iter().map(|o| ArenaAnomaly {
        kind: "tensor-overlap",
        message: o.describe(),
    });
    let outside = p
        .tensors
        .iter()
        .filter(|t| t.kind == TensorKind::Outside)
        .map(|t| ArenaAnomaly {
            kind: "tensor-outside-arena",
            message: format!(
                "tensor {} \"{}\" points at {:#010x}, outside the arena and the model",
                t.index,
                t.name.as_deref().unwrap_or(""),
                t.address.unwrap_or(0)
            ),
        });
    overlaps.chain(outside).collect()
}

/// The arena sections a plan classifies data pointers by.
pub(crate) struct Sections {
    pub non_persistent: (u64, u64),
    pub head_bytes: u64,
    pub persistent: (u64, u64),
}

/// The model, the runtime tensors and registrations of an interpreter, and the plan from them.
pub(crate) fn read_plan(
    ram: &mut Ram<'_>,
    tflm: &Tflm,
    interp: u64,
    model_addr: u64,
    sections: &Sections,
    containers: &[Container],
    anomalies: &mut Vec<ArenaAnomaly>,
) -> Option<TensorPlan> {
    let Some(model) = read_model(ram, model_addr, containers) else {
        anomalies.push(ArenaAnomaly {
            kind: "model-unreadable",
            message: format!("the model at {model_addr:#010x} is not a readable TFLite flatbuffer"),
        });
        return None;
    };
    let runtime = match tflm.generation {
        Generation::Tflm2020 => runtime_2020(ram, tflm, interp),
        Generation::Current => runtime_current(ram, tflm, interp),
    };
    let Some(runtime) = runtime else {
        anomalies.push(ArenaAnomaly {
            kind: "tensors-unreadable",
            message: "the interpreter's tensor and node arrays could not be read".into(),
        });
        return None;
    };
    let n = model.tensors.len() as u64;
    if runtime.tensor_count.is_some_and(|c| c != n) {
        anomalies.push(ArenaAnomaly {
            kind: "tensors-unreadable",
            message: format!(
                "the interpreter holds {} tensors, the model declares {n}",
                runtime.tensor_count.unwrap_or(0)
            ),
        });
    }
    let tc = tflm.tensor.as_ref()?;
    let ptr = tflm.ptr_size;
    let mut input = PlanInput {
        model: Some(&model),
        non_persistent: sections.non_persistent,
        head_bytes: sections.head_bytes,
        persistent: sections.persistent,
        ..PlanInput::default()
    };
    for i in 0..n.min(runtime.tensor_count.unwrap_or(n)) {
        let rec = runtime.tensors.checked_add(i.saturating_mul(tc.size));
        input
            .data
            .push(rec.and_then(|r| ram.uint(r.wrapping_add(tc.data), ptr)));
        input.bytes.push(
            tc.bytes
                .and_then(|b| rec.and_then(|r| ram.uint(r + b, ptr))),
        );
    }
    input.op_names = op_names(ram, tflm, &model, runtime.nodes);
    input.scratch = scratch_2020(ram, tflm, interp);
    Some(plan::build(&input))
}

/// The model flatbuffer whose root table is at `root`, read within the container or constant
/// section holding it.
fn read_model(ram: &mut Ram<'_>, root: u64, containers: &[Container]) -> Option<Model> {
    if root == 0 {
        return None;
    }
    // Every offset is checked against the bounds of what holds the model (a heap block, a
    // static, a constant section); elsewhere the page budget bounds the reads.
    let (lo, hi) = match scan::holder(containers, root, root) {
        Some(i) => containers.get(i).map(|c| (c.start, c.end()))?,
        None => ram.constant_section(root).unwrap_or((0, u64::MAX)),
    };
    let mut fb = Fb::new(ram, lo, hi);
    model::read(&mut fb, root)
}

/// Where an interpreter's runtime arrays are.
struct Runtime {
    tensors: u64,
    tensor_count: Option<u64>,
    nodes: Option<u64>,
}

/// 2020: `context_.tensors` (`TfLiteTensor`s, `context_.tensors_size` of them) and
/// `node_and_registrations_`.
fn runtime_2020(ram: &mut Ram<'_>, tflm: &Tflm, interp: u64) -> Option<Runtime> {
    let ic = tflm.interpreter.as_ref()?;
    let ptr = tflm.ptr_size;
    let tensors = ram.uint(interp + ic.context_tensors?, ptr)?;
    let count = ram.uint(interp + ic.context_tensors_size?, ptr)?;
    let nodes = ic
        .node_and_registrations
        .and_then(|o| ram.uint(interp + o, ptr));
    (tensors != 0).then_some(Runtime {
        tensors,
        tensor_count: Some(count.min(u64::from(MAX_ENTRIES))),
        nodes,
    })
}

/// Current: the first `SubgraphAllocations` of `graph_` (its `TfLiteEvalTensor`s and
/// `NodeAndRegistration`s).
fn runtime_current(ram: &mut Ram<'_>, tflm: &Tflm, interp: u64) -> Option<Runtime> {
    let ic = tflm.interpreter.as_ref()?;
    let sc = tflm.subgraph.as_ref()?;
    let ptr = tflm.ptr_size;
    let sa = ram.uint(interp + ic.subgraph_allocations?, ptr)?;
    if sa == 0 {
        return None;
    }
    let tensors = ram.uint(sa.wrapping_add(sc.tensors), ptr)?;
    let nodes = ram.uint(sa.wrapping_add(sc.node_and_registrations), ptr);
    (tensors != 0).then_some(Runtime {
        tensors,
        tensor_count: None,
        nodes,
    })
}

/// Each operator's name from its registration (`custom_name`, else the builtin code's name),
/// else from the model's operator code.
fn op_names(ram: &mut Ram<'_>, tflm: &Tflm, model: &Model, nodes: Option<u64>) -> Vec<String> {
    let ptr = tflm.ptr_size;
    let from_model = |i: usize| -> String {
        let code = model
            .operators
            .get(i)
            .and_then(|o| model.codes.get(o.opcode_index as usize));
        match code {
            Some(c) => c
                .custom
                .clone()
                .unwrap_or_else(|| tflm.builtin_name(c.builtin)),
            None => format!("operator {i}"),
        }
    };
    (0..model.operators.len())
        .map(|i| {
            let registration = tflm.node.as_ref().zip(nodes).and_then(|(nc, base)| {
                let rec = base.checked_add((i as u64).checked_mul(nc.size)?)?;
                let reg = ram.uint(rec.wrapping_add(nc.registration), ptr)?;
                (reg != 0).then_some((nc, reg))
            });
            let Some((nc, reg)) = registration else {
                return from_model(i);
            };
            let custom = ram
                .uint(reg.wrapping_add(nc.custom_name), ptr)
                .and_then(|p| ram.c_string(p, MAX_OP_NAME));
            if let Some(name) = custom {
                return memlife_core::text::printable(&name).into_owned();
            }
            match ram.uint(reg.wrapping_add(nc.builtin_code), nc.builtin_code_size) {
                Some(code) => tflm.builtin_name(i64::from(code as u32 as i32)),
                None => from_model(i),
            }
        })
        .collect()
}

/// 2020's scratch buffer handles (in the tail, newest first: handle `count - 1 - k` is buffer
/// `k`), as `(index, operator, bytes, address)`.
fn scratch_2020(ram: &mut Ram<'_>, tflm: &Tflm, interp: u64) -> Vec<(u32, u32, u64, u64)> {
    let (Some(ic), Some(ma), Some(sc)) = (&tflm.interpreter, &tflm.micro_allocator, &tflm.scratch)
    else {
        return Vec::new();
    };
    if !ic.allocator_by_value {
        return Vec::new();
    }
    let ptr = tflm.ptr_size;
    let base = interp + ic.allocator;
    let (Some(h), Some(c)) = (ma.scratch_handles, ma.scratch_count) else {
        return Vec::new();
    };
    let (Some(handles), Some(count)) = (
        ram.uint(base.wrapping_add(h), ptr),
        ram.uint(base.wrapping_add(c), ptr),
    ) else {
        return Vec::new();
    };
    let count = count.min(MAX_SCRATCH);
    let mut out = Vec::new();
    for k in 0..count {
        let Some(at) = handles.checked_add(k.saturating_mul(sc.size)) else {
            break;
        };
        let (Some(data), Some(bytes), Some(node)) = (
            ram.uint(at.wrapping_add(sc.data), ptr),
            ram.uint(at.wrapping_add(sc.bytes), ptr),
            ram.u32(at.wrapping_add(sc.node_idx)),
        ) else {
            continue;
        };
        let index = (count - 1 - k) as u32;
        out.push((index, node, bytes, data));
    }
    out.sort_by_key(|s| s.0);
    out
}
