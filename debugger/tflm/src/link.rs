//! Tying each arena allocator found to the objects that use it: the `MicroAllocator` (current
//! TFLM: in the arena's tail, pointing at the allocator through its two interfaces; 2020: inside
//! the interpreter) and the `MicroInterpreter` (a heap block or a static that points at it).

use crate::layout::{Cursors, Tflm};
use crate::ram::Ram;
use crate::scan::{self, Container, Found};

/// The non-persistent half of a split pair, found through its `MicroAllocator`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NonPersistentHalf {
    pub address: u64,
    pub class: usize,
    pub buffer_head: u64,
    pub buffer_tail: u64,
    pub head_temp: u64,
    pub next_temp: u64,
}

/// A `MicroAllocator` of current TFLM in an arena's tail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MicroAllocatorFound {
    pub address: u64,
    /// Split pair only: the non-persistent half.
    pub non_persistent: Option<NonPersistentHalf>,
}

/// Looks in the tail of `arena` (its persistent allocations) for the `MicroAllocator` whose
/// persistent allocator is `arena` (through the persistent interface) and whose non-persistent
/// allocator is `arena` too (single arena) or a valid non-persistent allocator (split pair).
pub(crate) fn micro_allocator(
    ram: &mut Ram<'_>,
    tflm: &Tflm,
    arena: &Found,
) -> Option<MicroAllocatorFound> {
    let ma = tflm.micro_allocator.as_ref()?;
    let (p_off, np_off) = (ma.persistent?, ma.non_persistent?);
    let class = tflm.arenas.get(arena.class)?;
    let ptr = tflm.ptr_size;
    let want_p = arena.address.checked_add(class.persistent_iface)?;
    let tail_len = arena.buffer_tail.checked_sub(arena.tail)?;
    let bytes = ram.loaded(arena.tail, tail_len)?.to_vec();
    let mut off = 0u64;
    while off.checked_add(ma.size)? <= tail_len {
        let obj = bytes.get(off as usize..(off + ma.size) as usize)?;
        let vt_ok = ma
            .vtable
            .as_ref()
            .is_none_or(|vt| scan::vptrs_match(obj, vt, ptr));
        if vt_ok && scan::word(obj, p_off, ptr) == Some(want_p) {
            let np = scan::word(obj, np_off, ptr)?;
            let address = arena.tail + off;
            match class.cursors {
                Cursors::Single { .. } if np == arena.address + class.non_persistent_iface => {
                    return Some(MicroAllocatorFound {
                        address,
                        non_persistent: None,
                    });
                }
                Cursors::Persistent { .. } => {
                    if let Some(half) = non_persistent_half(ram, tflm, np) {
                        return Some(MicroAllocatorFound {
                            address,
                            non_persistent: Some(half),
                        });
                    }
                }
                _ => {}
            }
        }
        off += ptr;
    }
    None
}

/// The non-persistent allocator whose interface pointer is `iface`, if it passes its rules:
/// its class's vtable, cursors in order inside a non-empty arena.
fn non_persistent_half(ram: &mut Ram<'_>, tflm: &Tflm, iface: u64) -> Option<NonPersistentHalf> {
    let ptr = tflm.ptr_size;
    tflm.arenas.iter().enumerate().find_map(|(k, class)| {
        let Cursors::NonPersistent {
            head_temp,
            next_temp,
        } = class.cursors
        else {
            return None;
        };
        let address = iface.checked_sub(class.non_persistent_iface)?;
        let mut obj = vec![0u8; usize::try_from(class.size).ok()?];
        ram.read(address, &mut obj)?;
        if let Some(vt) = &class.vtable
            && !scan::vptrs_match(&obj, vt, ptr)
        {
            return None;
        }
        let half = NonPersistentHalf {
            address,
            class: k,
            buffer_head: scan::word(&obj, class.buffer_head, ptr)?,
            buffer_tail: scan::word(&obj, class.buffer_tail, ptr)?,
            head_temp: scan::word(&obj, head_temp, ptr)?,
            next_temp: scan::word(&obj, next_temp, ptr)?,
        };
        let ordered = half.buffer_head < half.buffer_tail
            && half.buffer_head <= half.head_temp
            && half.head_temp <= half.next_temp
            && half.next_temp <= half.buffer_tail;
        ordered.then_some(half)
    })
}

/// An interpreter tied to an arena.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InterpreterFound {
    pub address: u64,
    pub container: usize,
}

/// Interpreters pointing at `targets` (2020: the arena allocator, held by the interpreter's
/// own `MicroAllocator`; current: the `MicroAllocator`, held by reference), outside every arena.
/// Returns, per target, the interpreters that pass the rules.
pub(crate) fn interpreters(
    ram: &mut Ram<'_>,
    tflm: &Tflm,
    containers: &[Container],
    targets: &[u64],
    arenas: &[(u64, u64)],
) -> Vec<Vec<InterpreterFound>> {
    let mut out = vec![Vec::new(); targets.len()];
    let Some(ic) = &tflm.interpreter else {
        return out;
    };
    let ptr = tflm.ptr_size;
    // Where, inside the interpreter, the pointer to the target sits.
    let rel = if ic.allocator_by_value {
        match tflm
            .micro_allocator
            .as_ref()
            .and_then(|m| m.memory_allocator)
        {
            Some(m) => ic.allocator + m,
            None => return out,
        }
    } else {
        ic.allocator
    };
    let hits = scan::words_equal(
        ram,
        containers,
        targets,
        arenas,
        ptr,
        4 * targets.len() + 64,
    );
    for (value, at) in hits {
        let Some(base) = at.checked_sub(rel) else {
            continue;
        };
        let Some(end) = base.checked_add(ic.size) else {
            continue;
        };
        let Some(ci) = scan::holder(containers, base, end) else {
            continue;
        };
        if arenas.iter().any(|&(s, e)| base < e && s < end) {
            continue;
        }
        if !interpreter_valid(ram, tflm, base, value)
            || out
                .iter()
                .flatten()
                .any(|f: &InterpreterFound| f.address == base)
        {
            continue;
        }
        if let Some(slot) = targets.iter().position(|t| *t == value) {
            out[slot].push(InterpreterFound {
                address: base,
                container: ci,
            });
        }
    }
    out
}

/// The interpreter rules beyond its pointer to the target: a model; 2020: its `MicroAllocator`
/// has the same model and its context is the interpreter's own; current: its graph's allocator
/// is the same `MicroAllocator`.
fn interpreter_valid(ram: &mut Ram<'_>, tflm: &Tflm, base: u64, target: u64) -> bool {
    let Some(ic) = &tflm.interpreter else {
        return false;
    };
    let ptr = tflm.ptr_size;
    let Some(model) = ram.uint(base + ic.model, ptr) else {
        return false;
    };
    if model == 0 {
        return false;
    }
    if ic.allocator_by_value {
        let Some(ma) = &tflm.micro_allocator else {
            return false;
        };
        let ma_base = base + ic.allocator;
        let same_model = ma
            .model
            .is_none_or(|m| ram.uint(ma_base + m, ptr) == Some(model));
        let own_context = match (ma.context, ic.context) {
            (Some(c), Some(ctx)) => ram.uint(ma_base + c, ptr) == Some(base + ctx),
            _ => true,
        };
        same_model && own_context
    } else {
        ic.graph_allocator
            .is_none_or(|g| ram.uint(base + g, ptr) == Some(target))
    }
}

/// An interpreter found by its own consistency, and the arena allocator it points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Orphan {
    pub interpreter: InterpreterFound,
    /// The arena allocator object its pointers lead to.
    pub allocator: u64,
}

/// Interpreters that hold together by themselves, whatever their arena: 2020, the
/// `MicroAllocator` inside points back at the interpreter's `context_` and has its `model_`;
/// current, `graph_` points back at `context_` and holds the same `MicroAllocator` as
/// `allocator_`. Those not in `known`, outside every arena span, whose arena allocator lies in
/// a container and is none of the `valid` ones, at most `max`: the arena allocator they lead to
/// failed its rules.
pub(crate) fn orphans(
    ram: &mut Ram<'_>,
    tflm: &Tflm,
    containers: &[Container],
    (known, valid): (&[u64], &[u64]),
    spans: &[(u64, u64)],
    max: usize,
) -> Vec<Orphan> {
    let (Some(ic), Some(ma)) = (&tflm.interpreter, &tflm.micro_allocator) else {
        return Vec::new();
    };
    let Some(context) = ic.context else {
        return Vec::new();
    };
    let ptr = tflm.ptr_size;
    let mut out = Vec::new();
    for (ci, c) in containers.iter().enumerate() {
        let Some(bytes) = ram.loaded(c.start, c.size).map(<[u8]>::to_vec) else {
            continue;
        };
        let mut off = 0u64;
        while off.saturating_add(ic.size) <= c.size && out.len() < max {
            let base = c.start + off;
            off += ptr;
            let end = base + ic.size;
            if known.contains(&base) || spans.iter().any(|&(s, e)| base < e && s < end) {
                continue;
            }
            let w = |o: u64| scan::word(&bytes, (base - c.start).saturating_add(o), ptr);
            let Some(model) = w(ic.model).filter(|&m| m != 0) else {
                continue;
            };
            let allocator = if ic.allocator_by_value {
                let (Some(mc), Some(mm), Some(mem)) = (ma.context, ma.model, ma.memory_allocator)
                else {
                    return out;
                };
                if w(ic.allocator + mc) != Some(base + context)
                    || w(ic.allocator + mm) != Some(model)
                {
                    continue;
                }
                w(ic.allocator + mem)
            } else {
                let (Some(gc), Some(ga), Some(p)) =
                    (ic.graph_context, ic.graph_allocator, ma.persistent)
                else {
                    return out;
                };
                let micro = w(ic.allocator).filter(|&m| m != 0);
                if w(gc) != Some(base + context) || micro.is_none() || w(ga) != micro {
                    continue;
                }
                let iface = tflm.arenas.first().map_or(0, |a| a.persistent_iface);
                micro
                    .and_then(|m| ram.uint(m.wrapping_add(p), ptr))
                    .map(|a| a.wrapping_sub(iface))
            };
            let Some(allocator) = allocator.filter(|&a| {
                !valid.contains(&a) && scan::holder(containers, a, a.saturating_add(1)).is_some()
            }) else {
                continue;
            };
            out.push(Orphan {
                interpreter: InterpreterFound {
                    address: base,
                    container: ci,
                },
                allocator,
            });
        }
    }
    out
}
