//! The arenas as people and tools read them: a text section per arena for `memlife heap`, the
//! JSON `arenas[]` array (keys: docs/heap-json.md) and the `firmware_view.tflm` entries (what
//! `arena_used_bytes()` returns per interpreter).

use std::fmt::Write as _;

use crate::arena::Arena;
use crate::plan::{TensorKind, TensorPlan};

/// One section per arena (or one line saying none is live).
pub fn text(arenas: &[Arena]) -> String {
    let mut out = String::new();
    if arenas.is_empty() {
        out.push_str("tflm       TensorFlow Lite Micro is in the ELF; no live arena in RAM\n");
        return out;
    }
    for (i, a) in arenas.iter().enumerate() {
        arena(&mut out, i, a);
    }
    out
}

fn arena(out: &mut String, i: usize, a: &Arena) {
    let by = match &a.interpreter {
        Some(it) => format!(
            "interpreter {:#010x} (model {:#010x}, tensors {})",
            it.address,
            it.model,
            match it.tensors_allocated {
                Some(true) => "allocated",
                Some(false) => "not allocated",
                None => "?",
            }
        ),
        None => "no interpreter found".to_string(),
    };
    let _ = writeln!(
        out,
        "arena {i}    {} at {:#010x} (TFLM {}), {by}",
        a.allocator.class,
        a.allocator.address,
        a.generation.name()
    );
    let within = a.container.as_ref().map_or_else(
        || "outside any heap block or static".to_string(),
        |c| format!("in {}", c.describe()),
    );
    let _ = writeln!(
        out,
        "  bounds   {:#010x}..{:#010x} ({} bytes) {within}",
        a.start, a.end, a.size
    );
    if let Some(p) = &a.persistent_arena {
        let _ = writeln!(
            out,
            "  persist  {:#010x}..{:#010x} ({} bytes), allocator {} at {:#010x}",
            p.start,
            p.end,
            p.end - p.start,
            p.allocator.class,
            p.allocator.address
        );
    }
    let _ = writeln!(
        out,
        "  tail     {} bytes persistent (from {:#010x})",
        a.persistent_bytes, a.tail
    );
    let _ = writeln!(
        out,
        "  head     {} bytes non-persistent (to {:#010x})",
        a.head_bytes, a.head
    );
    let _ = writeln!(out, "  temp     {} bytes", a.temp_bytes);
    let _ = writeln!(out, "  free     {} bytes", a.free_bytes);
    match a.arena_used_bytes {
        Some(u) => {
            let _ = writeln!(out, "  used     arena_used_bytes() = {u}");
        }
        None => {
            let _ = writeln!(
                out,
                "  used     arena_used_bytes() unknown (its allocator was not found)"
            );
        }
    }
    let allocated = a.interpreter.as_ref().and_then(|i| i.tensors_allocated) == Some(true);
    if allocated {
        let _ = writeln!(
            out,
            "  minimum  {} bytes from {:#010x} (tail and head, the free gap given back in 16-byte steps; temporary peaks are not in a snapshot)",
            a.minimum_bytes, a.start
        );
    } else {
        let _ = writeln!(
            out,
            "  minimum  at least {} bytes from {:#010x} (AllocateTensors has not succeeded: the planned activations are not in the arena yet)",
            a.minimum_bytes, a.start
        );
    }
    if let Some(p) = &a.plan {
        plan(out, p);
    }
    for an in &a.anomalies {
        let _ = writeln!(out, "  anomaly  {}: {}", an.kind, an.message);
    }
}

fn count(p: &TensorPlan, k: TensorKind) -> usize {
    p.tensors.iter().filter(|t| t.kind == k).count()
}

fn plan(out: &mut String, p: &TensorPlan) {
    let reuse = p
        .reuse_factor
        .map_or_else(|| "n/a".into(), |r| format!("{r:.2}"));
    let peak = p.peak_operator.map_or_else(String::new, |o| {
        let name = p
            .operators
            .get(o as usize)
            .map_or("", |op| op.name.as_str());
        format!(
            ", peak {} bytes live at operator {o} ({name})",
            p.peak_live_bytes
        )
    });
    let _ = writeln!(
        out,
        "  plan     {} tensors: {} planned, {} persistent, {} read-only, {} unallocated, {} outside; {} scratch buffers; {} planned bytes, reuse factor {reuse}{peak}",
        p.tensors.len(),
        count(p, TensorKind::Planned),
        count(p, TensorKind::Persistent),
        count(p, TensorKind::ReadOnly),
        count(p, TensorKind::Unallocated),
        count(p, TensorKind::Outside),
        p.scratch.len(),
        p.planned_bytes
    );
    let _ = writeln!(out, "    op  {:<24} {:>10}", "operator", "live bytes");
    for o in &p.operators {
        let _ = writeln!(
            out,
            "    {:>2}  {:<24} {:>10}",
            o.index, o.name, o.live_bytes
        );
    }
    let _ = writeln!(
        out,
        "    {:>3}  {:<11} {:>8} {:>8}  {:<7} {:<9} name",
        "#", "kind", "offset", "bytes", "ops", "type"
    );
    for t in &p.tensors {
        let kind = match t.kind {
            TensorKind::Planned => "planned",
            TensorKind::Persistent => "persistent",
            TensorKind::ReadOnly => "read-only",
            TensorKind::Unallocated => "none",
            TensorKind::Outside => "outside",
        };
        let ops = match (t.first_op, t.last_op) {
            (Some(f), Some(l)) => format!("{f}..{l}"),
            (None, Some(l)) => format!("..{l}"),
            (Some(f), None) => format!("{f}.."),
            (None, None) => "-".into(),
        };
        let _ = writeln!(
            out,
            "    {:>3}  {kind:<11} {:>8} {:>8}  {ops:<7} {:<9} {}",
            t.index,
            t.offset.map_or_else(|| "-".into(), |o| o.to_string()),
            t.bytes.map_or_else(|| "?".into(), |b| b.to_string()),
            t.type_name,
            t.name.as_deref().unwrap_or("")
        );
    }
    for s in &p.scratch {
        let _ = writeln!(
            out,
            "    scratch {} of operator {}: {} bytes at offset {}",
            s.index,
            s.operator,
            s.bytes,
            s.offset.map_or_else(|| "-".into(), |o| o.to_string())
        );
    }
    if p.overlaps.is_empty() {
        let _ = writeln!(
            out,
            "  overlap  none: no two planned buffers share bytes while both are live"
        );
    } else {
        let _ = writeln!(
            out,
            "  overlap  {} pairs share bytes while both are live",
            p.overlaps_total
        );
    }
}

/// The JSON `arenas[]` array.
pub fn json(arenas: &[Arena]) -> serde_json::Value {
    serde_json::to_value(arenas).unwrap_or_default()
}

/// Adds the arenas to a heap's JSON (`memlife heap --json`'s object): `arenas` and, under
/// `firmware_view` when there is one, `tflm`.
pub fn insert_json(heap: &mut serde_json::Value, arenas: &[Arena]) {
    let Some(obj) = heap.as_object_mut() else {
        return;
    };
    obj.insert("arenas".into(), json(arenas));
    if let Some(fv) = obj.get_mut("firmware_view").and_then(|f| f.as_object_mut()) {
        fv.insert("tflm".into(), firmware_view(arenas));
    }
}

/// `firmware_view.tflm`: per arena, what the firmware's own `interpreter->arena_used_bytes()`
/// returns now.
pub fn firmware_view(arenas: &[Arena]) -> serde_json::Value {
    serde_json::Value::Array(
        arenas
            .iter()
            .map(|a| {
                serde_json::json!({
                    "interpreter": a.interpreter.as_ref().map(|i| i.address),
                    "arena": a.start,
                    "arena_used_bytes": a.arena_used_bytes,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::arena::{ArenaAnomaly, Interpreter, Object};
    use crate::layout::Generation;

    fn arena() -> Arena {
        Arena {
            generation: Generation::Tflm2020,
            allocator: Object {
                address: 0x2000_07ec,
                class: "tflite::SimpleMemoryAllocator".into(),
            },
            start: 0x2000_0000,
            end: 0x2000_0800,
            size: 0x800,
            container: None,
            persistent_arena: None,
            head: 0x2000_0030,
            temp: 0x2000_0030,
            tail: 0x2000_0600,
            persistent_bytes: 0x200,
            head_bytes: 0x30,
            temp_bytes: 0,
            free_bytes: 0x5d0,
            arena_used_bytes: Some(0x230),
            minimum_bytes: 0x230,
            minimum_complete: false,
            micro_allocator: None,
            interpreter: Some(Interpreter {
                address: 0x2000_1000,
                container: None,
                model: 0x2000_2000,
                tensors_allocated: Some(false),
            }),
            plan: None,
            anomalies: vec![ArenaAnomaly {
                kind: "overlapping-arenas",
                message: "m".into(),
            }],
        }
    }

    #[test]
    fn the_section_names_the_figures_and_the_anomalies() {
        let t = text(&[arena()]);
        assert!(t.starts_with("arena 0    tflite::SimpleMemoryAllocator at 0x200007ec (TFLM 2020), interpreter 0x20001000"), "{t}");
        assert!(
            t.contains("  tail     512 bytes persistent (from 0x20000600)"),
            "{t}"
        );
        assert!(t.contains("  used     arena_used_bytes() = 560"), "{t}");
        assert!(t.contains("  minimum  at least 560 bytes"), "{t}");
        assert!(t.contains("  anomaly  overlapping-arenas: m"), "{t}");
        assert!(text(&[]).contains("no live arena"));
    }

    #[test]
    fn the_json_keys_are_the_documented_ones() {
        let v = json(&[arena()]);
        let keys: Vec<&str> = v[0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "generation",
                "allocator",
                "start",
                "end",
                "size",
                "container",
                "head",
                "temp",
                "tail",
                "persistent_bytes",
                "head_bytes",
                "temp_bytes",
                "free_bytes",
                "arena_used_bytes",
                "minimum_bytes",
                "minimum_complete",
                "micro_allocator",
                "interpreter",
                "plan",
                "anomalies"
            ]
        );
        assert_eq!(v[0]["generation"], "2020");
        assert_eq!(firmware_view(&[arena()])[0]["arena_used_bytes"], 0x230);
    }
}
