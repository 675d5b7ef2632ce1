//! One reading of a halted target: the containers read whole, the arena allocators found in
//! them, each tied to its `MicroAllocator` and interpreter, stale copies set aside, and for each
//! arena its figures and, once `AllocateTensors` succeeded, its tensor plan.

use memlife_core::Memory;
use memlife_dwarf::Symbols;

use crate::arena::{
    Arena, ArenaAnomaly, Interpreter, Object, PersistentArena, minimum_arena_bytes,
};
use crate::error::TflmError;
use crate::flatbuffer::Fb;
use crate::layout::{Cursors, Generation, Tflm};
use crate::link::{self, InterpreterFound, MicroAllocatorFound};
use crate::model::{self, MAX_ENTRIES, Model};
use crate::plan::{self, PlanInput};
use crate::ram::{CONTAINER_BUDGET, Ram};
use crate::scan::{self, Container, Found};

/// At most this many arenas are reported (each is a validated object; a firmware has a few).
pub const MAX_ARENAS: usize = 64;
/// At most this many scratch buffers are read per interpreter.
const MAX_SCRATCH: u64 = 1024;
/// Custom operator names are cut at this many bytes.
const MAX_OP_NAME: usize = 64;

/// Reads every live arena of a halted target (see the crate doc for the rules). Only a lost
/// link is an error; whatever RAM holds gives arenas with anomalies, or none.
pub fn read_arenas(
    mem: &mut dyn Memory,
    symbols: &Symbols,
    tflm: &Tflm,
    containers: &[Container],
) -> Result<Vec<Arena>, TflmError> {
    let mut ram = Ram::new(mem, symbols);
    let mut budget = CONTAINER_BUDGET;
    let ranges: Vec<(u64, u64)> = containers
        .iter()
        .filter(|c| {
            let fits = c.size <= budget;
            budget = budget.saturating_sub(c.size);
            fits
        })
        .map(|c| (c.start, c.size))
        .collect();
    if ranges.len() < containers.len() {
        tracing::warn!(
            "TFLM scan: {} of {} containers left out (more than {CONTAINER_BUDGET} bytes)",
            containers.len() - ranges.len(),
            containers.len()
        );
    }
    ram.load(&ranges)?;
    let found = scan::arena_objects(&ram, tflm, containers, MAX_ARENAS);
    let micro: Vec<Option<MicroAllocatorFound>> = found
        .iter()
        .map(|f| match tflm.generation {
            Generation::Current => link::micro_allocator(&mut ram, tflm, f),
            Generation::Tflm2020 => None,
        })
        .collect();
    // What an interpreter points at: 2020, the arena allocator; current, the MicroAllocator.
    let targets: Vec<u64> = found
        .iter()
        .zip(&micro)
        .map(|(f, m)| match tflm.generation {
            Generation::Tflm2020 => f.address,
            Generation::Current => m.as_ref().map_or(0, |m| m.address),
        })
        .collect();
    let spans: Vec<(u64, u64)> = found
        .iter()
        .map(|f| (f.buffer_head, f.buffer_tail))
        .chain(micro.iter().flatten().filter_map(|m| {
            m.non_persistent
                .as_ref()
                .map(|h| (h.buffer_head, h.buffer_tail))
        }))
        .collect();
    let wanted: Vec<u64> = targets.iter().copied().filter(|&t| t != 0).collect();
    let linked = link::interpreters(&mut ram, tflm, containers, &wanted, &spans);
    let interps: Vec<Vec<InterpreterFound>> = targets
        .iter()
        .map(|t| {
            wanted
                .iter()
                .position(|w| w == t && *t != 0)
                .and_then(|i| linked.get(i).cloned())
                .unwrap_or_default()
        })
        .collect();
    let keep = live(&found, &interps);
    let mut arenas = Vec::new();
    for (i, f) in found.iter().enumerate() {
        if !keep.get(i).copied().unwrap_or(false) {
            continue;
        }
        let m = micro.get(i).cloned().flatten();
        let ints = interps.get(i).cloned().unwrap_or_default();
        arenas.push(assemble(&mut ram, tflm, containers, f, m, &ints));
    }
    let known: Vec<u64> = interps.iter().flatten().map(|i| i.address).collect();
    let room = MAX_ARENAS.saturating_sub(arenas.len());
    let valid: Vec<u64> = found.iter().map(|f| f.address).collect();
    for orphan in link::orphans(&mut ram, tflm, containers, (&known, &valid), &spans, room) {
        arenas.push(damaged(&mut ram, tflm, containers, &orphan));
    }
    mark_overlaps(&mut arenas);
    arenas.sort_by_key(|a| a.allocator.address);
    Ok(arenas)
}

/// An interpreter whose arena allocator failed the rules: the allocator's members as read (for
/// the message), no figures, the anomaly that says so.
fn damaged(
    ram: &mut Ram<'_>,
    tflm: &Tflm,
    containers: &[Container],
    orphan: &link::Orphan,
) -> Arena {
    let ptr = tflm.ptr_size;
    let a = orphan.allocator;
    // The class whose vtable the object still has, else the first (2020 has one, no vtable).
    let vptr = ram.uint(a, ptr);
    let class = tflm
        .arenas
        .iter()
        .find(|c| {
            c.vtable
                .as_ref()
                .is_some_and(|vt| Some(vt.address.wrapping_add(2 * ptr)) == vptr)
        })
        .or_else(|| tflm.arenas.first());
    let mut read = |off: Option<u64>| off.and_then(|o| ram.uint(a.wrapping_add(o), ptr));
    let (bh, bt) = (
        read(class.map(|c| c.buffer_head)),
        read(class.map(|c| c.buffer_tail)),
    );
    let (head, tail, temp) = match class.map(|c| c.cursors) {
        Some(Cursors::Single { head, tail, temp }) => {
            (read(Some(head)), read(Some(tail)), read(temp))
        }
        _ => (None, None, None),
    };
    let show =
        |v: Option<u64>| v.map_or_else(|| "unreadable".to_string(), |v| format!("{v:#010x}"));
    let interpreter = read_interpreter(ram, tflm, &orphan.interpreter, containers);
    let (start, end) = (bh.unwrap_or(0), bt.unwrap_or(0));
    Arena {
        generation: tflm.generation,
        allocator: Object {
            address: a,
            class: class.map_or_else(String::new, |c| c.name.clone()),
        },
        start,
        end,
        size: end.saturating_sub(start),
        container: scan::holder(containers, a, a.saturating_add(1))
            .and_then(|i| containers.get(i).cloned()),
        persistent_arena: None,
        head: head.unwrap_or(0),
        temp: temp.or(head).unwrap_or(0),
        tail: tail.unwrap_or(0),
        persistent_bytes: 0,
        head_bytes: 0,
        temp_bytes: 0,
        free_bytes: 0,
        arena_used_bytes: None,
        minimum_bytes: 0,
        minimum_complete: false,
        micro_allocator: None,
        anomalies: vec![ArenaAnomaly {
            kind: "allocator-damaged",
            message: format!(
                "the interpreter at {:#010x} uses the arena allocator at {a:#010x}, which is not a valid one: buffer_head_ {}, head_ {}, temp_ {}, tail_ {}, buffer_tail_ {} (out of order, or the object is not at its arena's top)",
                orphan.interpreter.address,
                show(bh),
                show(head),
                show(temp),
                show(tail),
                show(bt)
            ),
        }],
        interpreter: Some(interpreter),
        plan: None,
    }
}

/// Which candidates are live: of two whose arenas overlap, one used by an interpreter wins over
/// one no interpreter uses (a stale copy left in memory a new arena now covers). Overlaps that
/// remain are reported as anomalies.
fn live(found: &[Found], interps: &[Vec<InterpreterFound>]) -> Vec<bool> {
    let used = |i: usize| interps.get(i).is_some_and(|v| !v.is_empty());
    (0..found.len())
        .map(|i| {
            let Some(a) = found.get(i) else { return false };
            used(i)
                || !found.iter().enumerate().any(|(j, b)| {
                    j != i
                        && used(j)
                        && a.buffer_head < b.buffer_tail
                        && b.buffer_head < a.buffer_tail
                })
        })
        .collect()
}

fn mark_overlaps(arenas: &mut [Arena]) {
    let spans: Vec<(u64, u64, u64)> = arenas
        .iter()
        .map(|a| (a.allocator.address, a.start, a.end))
        .collect();
    for a in arenas.iter_mut() {
        for &(other, s, e) in &spans {
            if other != a.allocator.address && a.start < e && s < a.end {
                a.anomalies.push(ArenaAnomaly {
                    kind: "overlapping-arenas",
                    message: format!(
                        "the arena {:#010x}..{:#010x} overlaps the arena of the allocator at {other:#010x} ({s:#010x}..{e:#010x}): one is stale, or two interpreters share memory",
                        a.start, a.end
                    ),
                });
            }
        }
    }
}

/// The figures of one arena and what uses it.
fn assemble(
    ram: &mut Ram<'_>,
    tflm: &Tflm,
    containers: &[Container],
    f: &Found,
    micro: Option<MicroAllocatorFound>,
    interps: &[InterpreterFound],
) -> Arena {
    let class = tflm.arenas.get(f.class);
    let class_name = class.map_or_else(String::new, |c| c.name.clone());
    let container_of =
        |s: u64, e: u64| scan::holder(containers, s, e).and_then(|i| containers.get(i).cloned());
    let mut anomalies = Vec::new();
    let interp = interps.first();
    if interps.len() > 1 {
        anomalies.push(ArenaAnomaly {
            kind: "several-interpreters",
            message: format!(
                "{} interpreters use this arena ({}); the first is shown",
                interps.len(),
                interps
                    .iter()
                    .map(|i| format!("{:#010x}", i.address))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    let interpreter = interp.map(|i| read_interpreter(ram, tflm, i, containers));
    let split = micro.as_ref().and_then(|m| m.non_persistent.clone());
    let persistent_bytes = f.buffer_tail - f.tail;
    // The non-persistent section: the single arena's head, or the split pair's other arena.
    let (start, end, head, temp) = match &split {
        Some(h) => (h.buffer_head, h.buffer_tail, h.head_temp, h.next_temp),
        None => (
            f.buffer_head,
            f.buffer_tail,
            f.head,
            f.temp.unwrap_or(f.head),
        ),
    };
    let head_bytes = head - start;
    let temp_bytes = temp - head;
    let free_bytes = match &split {
        Some(_) => (end - temp).saturating_add(f.tail - f.buffer_head),
        None => f.tail - temp,
    };
    let arena_used_bytes = used_bytes(
        ram,
        tflm,
        f,
        micro.as_ref(),
        interp,
        start,
        temp,
        persistent_bytes,
    );
    let minimum_bytes = match &split {
        Some(_) => minimum_arena_bytes(end - start, 0, temp - start),
        None => minimum_arena_bytes(end - start, persistent_bytes, temp - start),
    };
    let persistent_arena = split.as_ref().map(|_| PersistentArena {
        allocator: Object {
            address: f.address,
            class: class_name.clone(),
        },
        start: f.buffer_head,
        end: f.buffer_tail,
        container: container_of(f.buffer_head, f.buffer_tail),
        tail: f.tail,
        minimum_bytes: minimum_arena_bytes(f.buffer_tail - f.buffer_head, persistent_bytes, 0),
    });
    let mut arena = Arena {
        generation: tflm.generation,
        allocator: Object {
            address: f.address,
            class: class_name,
        },
        start,
        end,
        size: end - start,
        container: container_of(start, end),
        persistent_arena,
        head,
        temp,
        tail: f.tail,
        persistent_bytes,
        head_bytes,
        temp_bytes,
        free_bytes,
        arena_used_bytes,
        minimum_bytes,
        minimum_complete: false,
        micro_allocator: micro.as_ref().map(|m| m.address),
        interpreter: None,
        plan: None,
        anomalies,
    };
    if let (Some(found), Some(info)) = (interp, interpreter) {
        if info.tensors_allocated == Some(true) {
            let sections = Sections {
                non_persistent: (start, end),
                head_bytes,
                persistent: (f.tail, f.buffer_tail),
            };
            arena.plan = read_plan(
                ram,
                tflm,
                found.address,
                info.model,
                &sections,
                containers,
                &mut arena.anomalies,
            );
        }
        arena.interpreter = Some(info);
    }
    if let Some(p) = &arena.plan {
        arena.anomalies.extend(plan_anomalies(p));
    }
    arena
}

/// What a plan finds wrong: each overlap, each tensor pointing outside the arena and the model.
fn plan_anomalies(p: &crate::plan::TensorPlan) -> Vec<ArenaAnomaly> {
    let overlaps = p.overlaps.iter().map(|o| ArenaAnomaly {
        kind: "tensor-overlap",
        message: o.describe(),
    });
    let outside = p
        .tensors
        .iter()
        .filter(|t| t.kind == crate::plan::TensorKind::Outside)
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

/// `MicroInterpreter::arena_used_bytes()` as the firmware computes it now (docs/tflm.md):
/// 2020, `MicroAllocator::used_bytes()`: 0 while the allocator is `active_`, else the arena's
/// head and tail bytes; current, the non-persistent allocator's used bytes (the larger of head
/// and temp) plus the persistent allocator's, read through the `MicroAllocator` that holds both.
#[allow(clippy::too_many_arguments)]
fn used_bytes(
    ram: &mut Ram<'_>,
    tflm: &Tflm,
    f: &Found,
    micro: Option<&MicroAllocatorFound>,
    interp: Option<&InterpreterFound>,
    np_start: u64,
    np_temp: u64,
    persistent: u64,
) -> Option<u64> {
    match tflm.generation {
        Generation::Tflm2020 => {
            let ic = tflm.interpreter.as_ref()?;
            let active = tflm.micro_allocator.as_ref()?.active?;
            let flag = ram.u8(interp?.address + ic.allocator + active)?;
            Some(if flag != 0 {
                0
            } else {
                (f.head - f.buffer_head).saturating_add(persistent)
            })
        }
        Generation::Current => {
            micro?;
            Some((np_temp - np_start).saturating_add(persistent))
        }
    }
}

fn read_interpreter(
    ram: &mut Ram<'_>,
    tflm: &Tflm,
    found: &InterpreterFound,
    containers: &[Container],
) -> Interpreter {
    let ptr = tflm.ptr_size;
    let ic = tflm.interpreter.as_ref();
    Interpreter {
        address: found.address,
        container: containers.get(found.container).cloned(),
        model: ic
            .and_then(|ic| ram.uint(found.address + ic.model, ptr))
            .unwrap_or(0),
        tensors_allocated: ic
            .and_then(|ic| ic.tensors_allocated)
            .and_then(|o| ram.u8(found.address + o))
            .map(|b| b != 0),
    }
}

/// The arena sections a plan classifies data pointers by.
struct Sections {
    non_persistent: (u64, u64),
    head_bytes: u64,
    persistent: (u64, u64),
}

/// The model, the runtime tensors and registrations of an interpreter, and the plan from them.
fn read_plan(
    ram: &mut Ram<'_>,
    tflm: &Tflm,
    interp: u64,
    model_addr: u64,
    sections: &Sections,
    containers: &[Container],
    anomalies: &mut Vec<ArenaAnomaly>,
) -> Option<crate::plan::TensorPlan> {
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
