//! One reading of a halted target: the containers read whole, the arena allocators found in
//! them, each tied to its `MicroAllocator` and interpreter, stale copies set aside, and for each
//! arena its figures and, once `AllocateTensors` succeeded, its tensor plan.

use memlife_core::Memory;
use memlife_dwarf::Symbols;

use crate::arena::{
    Arena, ArenaAnomaly, Interpreter, Object, PersistentArena, minimum_arena_bytes,
};
use crate::error::TflmError;
use crate::layout::{Cursors, Generation, Tflm};
use crate::link::{self, InterpreterFound, MicroAllocatorFound};
use crate::ram::{CONTAINER_BUDGET, Ram};
use crate::runtime;
use crate::scan::{self, Container, Found};

/// At most this many arenas are reported (each is a validated object; a firmware has a few).
pub const MAX_ARENAS: usize = 64;

/// The live arenas of a halted target, when the ELF has TFLM: looked for in the heap's blocks
/// in use (`(address, size)`), the heap's bounds `heap` left out, and the image's statics
/// (what `memlife heap`, `monitor heap` and a script's `h.arenas` show). `None` without TFLM.
pub fn heap_arenas(
    mem: &mut dyn Memory,
    symbols: &Symbols,
    used_blocks: &[(u64, u64)],
    heap: Option<(u64, u64)>,
) -> Result<Option<Vec<Arena>>, TflmError> {
    let Some(tflm) = Tflm::detect(symbols) else {
        return Ok(None);
    };
    let containers = scan::containers(symbols, used_blocks, heap);
    read_arenas(mem, symbols, &tflm, &containers).map(Some)
}

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
            let sections = runtime::Sections {
                non_persistent: (start, end),
                head_bytes,
                persistent: (f.tail, f.buffer_tail),
            };
            arena.plan = runtime::read_plan(
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
        arena.anomalies.extend(runtime::plan_anomalies(p));
    }
    arena
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
