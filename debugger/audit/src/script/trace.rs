//! The trace area of the script API: allocation tracing on and off, the events counted, leaks
//! with their allocation sites, late frees, and buffer lifetimes with their overlaps (from the
//! trace, or from the firmware's tensor table).
//!
//! ```rhai
//! t.trace(false);                          // run fast between boundaries
//! let lost = t.leaks(before, after);       // addr, size, site, file_line, chain, task, seq
//! let late = t.deferred();                 // blocks a later cycle freed
//! let pairs = t.buffer_overlaps();         // a, b, lo, hi, bytes
//! ```

use std::collections::BTreeSet;

use rhai::{Array, Dynamic, Engine, Map, NativeCallContext};

use super::convert::{insert_site, int, opt_int, opt_string};
use super::handle::{RhaiResult, TargetHandle, err};
use super::heap::HeapHandle;
use crate::buffers::{Buffer, Overlap, Tensor, tensor_overlaps, traced_buffers};
use crate::debugger::Debugger;
use crate::deferred::DeferredBlock;
use crate::error::AuditError;

/// Registers the trace area.
pub(crate) fn register(engine: &mut Engine) {
    engine.register_fn(
        "trace",
        |ctx: NativeCallContext, t: &mut TargetHandle, on: bool| -> RhaiResult<()> {
            t.try_with(&ctx, |d| d.set_tracing(on))
        },
    );
    engine.register_fn("events", |ctx: NativeCallContext, t: &mut TargetHandle| {
        t.with(&ctx, |d| int(d.totals().events))
    });
    engine.register_fn(
        "leaks",
        |ctx: NativeCallContext,
         t: &mut TargetHandle,
         before: HeapHandle,
         after: HeapHandle|
         -> RhaiResult<Array> { t.try_with(&ctx, |d| leaks(d, &before, &after)) },
    );
    engine.register_fn(
        "deferred",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<Array> {
            t.with(&ctx, |d| d.deferred().0.iter().map(deferred_map).collect())
        },
    );
    engine.register_fn(
        "deferred_total",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<i64> {
            t.with(&ctx, |d| {
                let (listed, unlisted) = d.deferred();
                int(listed.len() as u64 + unlisted)
            })
        },
    );
    register_buffers(engine);
}

/// Buffer lifetimes: the traced ones and the firmware's tensor table.
fn register_buffers(engine: &mut Engine) {
    engine.register_fn("buffers", |ctx: NativeCallContext, t: &mut TargetHandle| {
        // Every traced allocation so far with its lifetime.
        t.with(&ctx, |d| {
            let (buffers, _) = traced_buffers(d.events());
            buffers.iter().map(buffer_map).collect::<Array>()
        })
    });
    engine.register_fn(
        "buffer_overlaps",
        |ctx: NativeCallContext, t: &mut TargetHandle| {
            // Traced buffers whose memory intersected while both were allocated.
            t.with(&ctx, |d| {
                let (buffers, pairs) = traced_buffers(d.events());
                let items: Array = buffers.iter().map(buffer_map).collect();
                overlaps_array(&items, &pairs)
            })
        },
    );
    engine.register_fn(
        "tensors",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<Dynamic> {
            // The firmware's tensor table now ([tensors] in memlife.toml), `()` when none.
            let table = t
                .with(&ctx, Debugger::read_tensors)?
                .map_err(|e| err(&ctx, e))?;
            Ok(table.map_or(Dynamic::UNIT, |v| tensors_array(&v).into()))
        },
    );
    engine.register_fn("tensor_overlaps", |tensors: Array| -> RhaiResult<Array> {
        // Pairs of a tensor table's entries that share memory while both are in use.
        let parsed: Vec<Tensor> = tensors
            .iter()
            .map(|d| {
                let m = d.read_lock::<Map>();
                let get = |k: &str| {
                    m.as_ref()
                        .and_then(|m| m.get(k))
                        .and_then(|v| v.as_int().ok())
                        .unwrap_or(0)
                };
                Tensor {
                    name: None,
                    addr: get("addr") as u64,
                    size: get("size") as u64,
                    first: get("first"),
                    last: get("last"),
                }
            })
            .collect();
        Ok(overlaps_array(&tensors, &tensor_overlaps(&parsed)))
    });
}

/// Blocks used in `after` that were not used in `before` (same address and size), with the
/// allocation site the trace recorded. Where the walk sees used *spans* rather than blocks (an
/// allocator without headers: linked_list_allocator), a new span stands for the traced
/// allocations inside it that sit where `before` had free memory.
///
/// On an RTOS firmware each leak names the task that allocated it (`task`), and a block that
/// holds the TCB or the stack of a task the kernel listed at `after`'s stop (now, for a walk
/// not told apart by task) is never one; when the lifecycle's roles are limited to a task or a
/// caller, only that scope's blocks count.
fn leaks(d: &mut Debugger, before: &HeapHandle, after: &HeapHandle) -> Result<Array, AuditError> {
    // A task alive at `after` may be gone by now, its blocks freed: the listing of that stop.
    let listed = match &after.1 {
        Some(by) => by.listed.clone(),
        None => d.listed_task_blocks(&after.0)?,
    };
    let (before, after) = (&*before.0, &*after.0);
    let used_before: Vec<(u64, u64)> = before
        .blocks
        .iter()
        .filter(|b| !b.free)
        .map(|b| (b.addr, b.size))
        .collect();
    let old: BTreeSet<(u64, u64)> = used_before.iter().copied().collect();
    let was_used = |a: u64| used_before.iter().any(|&(s, n)| a >= s && a - s < n);
    let live = d.live();
    let mut found: Vec<(u64, u64)> = Vec::new();
    for b in after
        .blocks
        .iter()
        .filter(|b| !b.free && !old.contains(&(b.addr, b.size)))
    {
        let inside: Vec<(u64, u64)> = match live.get(&b.addr) {
            Some(l) if l.size == b.size => Vec::new(),
            _ => live
                .range(b.addr..b.addr.saturating_add(b.size))
                .filter(|(a, _)| !was_used(**a))
                .map(|(a, l)| (*a, l.size))
                .collect(),
        };
        if listed.contains(&b.addr) {
            continue;
        }
        if inside.is_empty() {
            found.push((b.addr, b.size));
        } else {
            found.extend(inside);
        }
    }
    let tasks = d.has_tasks();
    Ok(found
        .into_iter()
        .filter(|&(addr, size)| d.in_leak_scope(addr, size, live.get(&addr).map(|l| l.seq)))
        .map(|(addr, size)| {
            let mut m = Map::new();
            m.insert("addr".into(), Dynamic::from_int(int(addr)));
            m.insert("size".into(), Dynamic::from_int(int(size)));
            m.insert("seq".into(), opt_int(live.get(&addr).map(|l| l.seq)));
            if tasks {
                let task = d.block_task(addr, size).map(str::to_string);
                m.insert("task".into(), task.map_or(Dynamic::UNIT, Dynamic::from));
            }
            match live.get(&addr) {
                Some(live) => insert_site(&mut m, &live.site),
                None => {
                    m.insert(
                        "site".into(),
                        "unknown (allocated before tracing started)".into(),
                    );
                    m.insert("file_line".into(), Dynamic::UNIT);
                    m.insert("chain".into(), Array::new().into());
                }
            }
            Dynamic::from_map(m)
        })
        .collect())
}

/// A late free as scripts see it (`t.deferred()`): `addr`, `size`, `site`, `file_line`,
/// `chain`, `allocated_cycle`, `freed_cycle`, `cycles`, `allocated_in`, `freed_in`.
fn deferred_map(b: &DeferredBlock) -> Dynamic {
    let mut m = Map::new();
    m.insert("addr".into(), Dynamic::from_int(int(b.addr)));
    m.insert("size".into(), Dynamic::from_int(int(b.size)));
    insert_site(&mut m, &b.site);
    m.insert(
        "allocated_cycle".into(),
        Dynamic::from_int(int(b.allocated_cycle)),
    );
    m.insert("freed_cycle".into(), Dynamic::from_int(int(b.freed_cycle)));
    m.insert("cycles".into(), Dynamic::from_int(int(b.cycles)));
    m.insert("allocated_in".into(), opt_string(b.allocated_in.as_ref()));
    m.insert("freed_in".into(), opt_string(b.freed_in.as_ref()));
    Dynamic::from_map(m)
}

/// Tensor table entries as maps: `name` (`()` when the table has none), `addr`, `size`,
/// `first`, `last`.
pub(crate) fn tensors_array(tensors: &[Tensor]) -> Array {
    tensors
        .iter()
        .map(|t| {
            let mut m = Map::new();
            m.insert("name".into(), opt_string(t.name.as_ref()));
            m.insert("addr".into(), Dynamic::from_int(int(t.addr)));
            m.insert("size".into(), Dynamic::from_int(int(t.size)));
            m.insert("first".into(), Dynamic::from_int(t.first));
            m.insert("last".into(), Dynamic::from_int(t.last));
            Dynamic::from_map(m)
        })
        .collect()
}

/// A traced buffer as a map: `addr`, `size`, `request`, `alloc_seq`, `free_seq` (`()` while
/// allocated), `site`, `alloc_in`, `free_in` (phase / span).
fn buffer_map(b: &Buffer) -> Dynamic {
    let mut m = Map::new();
    m.insert("addr".into(), Dynamic::from_int(int(b.addr)));
    m.insert("size".into(), Dynamic::from_int(int(b.size)));
    m.insert("request".into(), opt_int(b.request));
    m.insert("alloc_seq".into(), Dynamic::from_int(int(b.alloc_seq)));
    m.insert("free_seq".into(), opt_int(b.free_seq));
    m.insert("site".into(), b.site.clone().into());
    m.insert("alloc_in".into(), b.alloc_in.clone().into());
    m.insert("free_in".into(), opt_string(b.free_in.as_ref()));
    Dynamic::from_map(m)
}

/// Overlapping pairs as maps: `a`, `b` (entries: tensor or buffer maps), `ia`, `ib` (their
/// indices), `lo`, `hi`, `bytes`.
fn overlaps_array(items: &Array, pairs: &[Overlap]) -> Array {
    pairs
        .iter()
        .map(|(a, b, lo, hi)| {
            let mut m = Map::new();
            let item = |i: usize| items.get(i).cloned().unwrap_or(Dynamic::UNIT);
            m.insert("a".into(), item(*a));
            m.insert("b".into(), item(*b));
            m.insert("ia".into(), Dynamic::from_int(*a as i64));
            m.insert("ib".into(), Dynamic::from_int(*b as i64));
            m.insert("lo".into(), Dynamic::from_int(int(*lo)));
            m.insert("hi".into(), Dynamic::from_int(int(*hi)));
            m.insert("bytes".into(), Dynamic::from_int(int(hi - lo)));
            Dynamic::from_map(m)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use rhai::Array;

    use super::super::testing::{Rig, one_load};
    use super::*;

    #[test]
    fn a_traced_allocation_is_an_event_and_a_buffer_with_its_site() {
        let mut rig = Rig::new(one_load(), &[super::super::heap::register, register]);
        rig.phase("load").unwrap();
        assert_eq!(rig.eval::<i64>("t.events()").unwrap(), 1);
        let b: Map = rig.eval("t.buffers()[0]").unwrap();
        assert_eq!(b["size"].as_int(), Ok(32));
        assert!(b["free_seq"].is_unit(), "still allocated");
        assert!(
            b["site"].to_string().starts_with("build_graph"),
            "{}",
            b["site"]
        );
        assert_eq!(rig.eval::<i64>("t.buffer_overlaps().len()").unwrap(), 0);
        let late: Array = rig
            .eval("[t.deferred().len(), t.deferred_total()]")
            .unwrap();
        assert_eq!((late[0].as_int(), late[1].as_int()), (Ok(0), Ok(0)));
        // The bundled firmware's table, empty at this point.
        assert_eq!(rig.value("type_of(t.tensors())").to_string(), "array");
        rig.eval::<()>("t.trace(false)").unwrap();
        assert_eq!(rig.eval::<i64>("t.events()").unwrap(), 1);
    }

    #[test]
    fn tensors_overlap_when_memory_and_uses_intersect() {
        let mut rig = Rig::new(one_load(), &[register]);
        let pairs: Array = rig
            .eval(
                "tensor_overlaps([#{addr: 256, size: 64, first: 0, last: 2}, \
                                  #{addr: 288, size: 64, first: 1, last: 3}])",
            )
            .unwrap();
        assert_eq!(pairs.len(), 1);
        let pair = pairs[0].clone().cast::<Map>();
        assert_eq!(pair["bytes"].as_int(), Ok(32));
        assert_eq!(pair["b"].clone().cast::<Map>()["first"].as_int(), Ok(1));
    }
}
