//! The heap area of the script API: the `Heap` object (one walk, immutable) and its getters,
//! `t.heap()`, ESP-IDF's `heap_caps_*` on a heap or the target, and `diff(a, b)`.
//!
//! ```rhai
//! let h = t.heap();                 // free, used, size, largest_free, ratio, blocks, ...
//! h.by_task;                        // RTOS: #{Infer: #{bytes, blocks}, ...}
//! for a in h.arenas { print(a.persistent_bytes); }   // TFLM's arenas, read with the walk
//! let d = diff(before, h);          // free_delta, used_delta, allocated, freed
//! t.heap_caps_free_size("8BIT");    // ESP-IDF heaps only
//! ```

use std::collections::BTreeSet;
use std::rc::Rc;

use memlife_heap::HeapState;
use rhai::{Array, Dynamic, Engine, Map, NativeCallContext};

use super::convert::{int, json_to_dynamic, opt_float, opt_int};
use super::handle::{RhaiResult, TargetHandle, err};
use crate::error::Chain;
use crate::figures::delta;
use crate::observers::tasks::{ByTask, Held};

/// Registers the heap area.
pub(crate) fn register(engine: &mut Engine) {
    register_heap(engine);
    engine.register_fn(
        "heap",
        |ctx: NativeCallContext, t: &mut TargetHandle| -> RhaiResult<HeapHandle> {
            let (state, tasks) = t.try_with(&ctx, |d| {
                let state = d.walk()?;
                let tasks = d.heap_by_task(&state)?;
                Ok((state, tasks))
            })?;
            // TFLM's arenas at the same stop; an ELF without TFLM has none to read.
            let arenas = t.with(&ctx, |d| {
                let symbols = d.symbols_rc();
                crate::observers::arena::in_heap(d.target().as_memory(), &symbols, &state)
            })?;
            let arenas = match arenas {
                Ok(a) => a.map(|a| Rc::new(memlife_tflm::render::json(&a))),
                Err(e) => return Err(err(&ctx, Chain(&e))),
            };
            Ok(HeapHandle(Rc::new(state), tasks.map(Rc::new), arenas))
        },
    );
    // `t.heap_caps_free_size(caps)` and friends: a walk, then the ESP-IDF figure.
    for (name, f) in HEAP_CAPS {
        fn on_target(
            ctx: &NativeCallContext,
            t: &mut TargetHandle,
            f: CapsFn,
            caps: Result<u32, String>,
        ) -> RhaiResult<Dynamic> {
            let state = t.try_with(ctx, |d| d.walk())?;
            heap_caps(ctx, &state, f, caps)
        }
        engine.register_fn(
            name,
            move |ctx: NativeCallContext, t: &mut TargetHandle, caps: &str| {
                on_target(&ctx, t, f, caps.parse_caps_arg())
            },
        );
        engine.register_fn(
            name,
            move |ctx: NativeCallContext, t: &mut TargetHandle, caps: i64| {
                on_target(&ctx, t, f, caps.parse_caps_arg())
            },
        );
    }
    engine.register_fn("diff", |a: HeapHandle, b: HeapHandle| -> Map {
        diff(&a.0, &b.0)
    });
}

/// `diff(a, b)`: how the heap changed from `a` to `b`.
pub(crate) fn diff(a: &HeapState, b: &HeapState) -> Map {
    let used = |s: &HeapState| -> BTreeSet<(u64, u64)> {
        s.blocks
            .iter()
            .filter(|x| !x.free)
            .map(|x| (x.addr, x.size))
            .collect()
    };
    let (ua, ub) = (used(a), used(b));
    let list = |set: Vec<&(u64, u64)>| -> Array {
        set.into_iter()
            .map(|(addr, size)| {
                let mut m = Map::new();
                m.insert("addr".into(), Dynamic::from_int(int(*addr)));
                m.insert("size".into(), Dynamic::from_int(int(*size)));
                Dynamic::from_map(m)
            })
            .collect()
    };
    let mut m = Map::new();
    m.insert(
        "free_delta".into(),
        Dynamic::from_int(delta(a.total_free, b.total_free)),
    );
    m.insert(
        "used_delta".into(),
        Dynamic::from_int(delta(a.used, b.used)),
    );
    m.insert(
        "allocated".into(),
        list(ub.difference(&ua).collect()).into(),
    );
    m.insert("freed".into(), list(ua.difference(&ub).collect()).into());
    m
}

/// The `Heap` object of scripts: one walk, immutable; from `t.heap()`, told apart by task on an
/// RTOS firmware (`.1`), and the TFLM arenas read with it (`.2`); both `None` when the heap was
/// walked at a phase boundary, or the firmware has neither.
#[derive(Clone)]
pub struct HeapHandle(
    pub Rc<HeapState>,
    pub Option<Rc<ByTask>>,
    pub Option<Rc<serde_json::Value>>,
);

impl From<Rc<HeapState>> for HeapHandle {
    fn from(state: Rc<HeapState>) -> Self {
        HeapHandle(state, None, None)
    }
}

/// Registers the `Heap` type and its getters.
fn register_heap(engine: &mut Engine) {
    engine.register_type_with_name::<HeapHandle>("Heap");

    // Heap getters.
    engine.register_get("free", |h: &mut HeapHandle| int(h.0.total_free));
    engine.register_get("used", |h: &mut HeapHandle| int(h.0.used));
    engine.register_get("size", |h: &mut HeapHandle| int(h.0.heap_size));
    engine.register_get("start", |h: &mut HeapHandle| int(h.0.heap_start));
    engine.register_get("largest_free", |h: &mut HeapHandle| int(h.0.largest_free));
    engine.register_get("ratio", |h: &mut HeapHandle| {
        opt_float(h.0.largest_free_ratio())
    });
    engine.register_get("fragmentation", |h: &mut HeapHandle| {
        opt_float(h.0.fragmentation())
    });
    engine.register_get("free_blocks", |h: &mut HeapHandle| int(h.0.free_blocks));
    engine.register_get("used_blocks", |h: &mut HeapHandle| int(h.0.used_blocks));
    engine.register_get("min_ever_free", |h: &mut HeapHandle| {
        opt_int(h.0.min_ever_free)
    });
    engine.register_get("status", |h: &mut HeapHandle| {
        format!("{:?}", h.0.status).to_lowercase()
    });
    engine.register_get("allocator", |h: &mut HeapHandle| h.0.allocator.to_string());
    engine.register_get("blocks", |h: &mut HeapHandle| heap_blocks(h));
    // On an RTOS firmware, `t.heap()`'s blocks in use by task: the one that allocated each
    // (traced), else the one whose TCB or stack it holds, else `(untraced)`; `()` elsewhere.
    engine.register_get("by_task", |h: &mut HeapHandle| {
        h.1.as_ref().map_or(Dynamic::UNIT, |t| {
            let mut m = Map::new();
            for (task, held) in &t.tasks {
                m.insert(task.as_str().into(), held_map(*held));
            }
            Dynamic::from_map(m)
        })
    });
    // The blocks holding a listed task's TCB or stack (never leaks while it is listed).
    engine.register_get("task_blocks", |h: &mut HeapHandle| {
        h.1.as_ref()
            .map_or(Dynamic::UNIT, |t| held_map(t.task_blocks))
    });
    engine.register_get("largest_allocatable", |h: &mut HeapHandle| {
        opt_int(h.0.largest_allocatable)
    });
    engine.register_get("regions", |h: &mut HeapHandle| heap_regions(h));
    engine.register_get("anomalies", |h: &mut HeapHandle| {
        h.0.anomalies
            .iter()
            .map(|a| Dynamic::from(a.message.clone()))
            .collect::<Array>()
    });
    engine.register_get("poisoning", |h: &mut HeapHandle| {
        h.0.poisoning.map_or(Dynamic::UNIT, Dynamic::from)
    });
    // `memlife heap --json`'s `arenas` (docs/heap-json.md), read with `t.heap()`; `()` for a heap
    // a phase recorded (its arena figures are in `t.arena_builds()`).
    engine.register_get("arenas", |h: &mut HeapHandle| {
        h.2.as_ref().map_or(Dynamic::UNIT, |v| json_to_dynamic(v))
    });
    engine.register_get("firmware_view", |h: &mut HeapHandle| {
        h.0.firmware_view.as_ref().map_or(Dynamic::UNIT, |v| {
            json_to_dynamic(&serde_json::to_value(v).unwrap_or_default())
        })
    });
    engine.register_get("findings", |h: &mut HeapHandle| {
        h.0.anomalies
            .iter()
            .map(|a| {
                let mut m = Map::new();
                let kind = serde_json::to_value(a.kind).unwrap_or_default();
                m.insert("kind".into(), kind.as_str().unwrap_or("?").into());
                m.insert("addr".into(), opt_int(a.addr));
                m.insert("message".into(), a.message.clone().into());
                let size = a
                    .addr
                    .and_then(|p| h.0.blocks.iter().find(|b| b.addr == p))
                    .and_then(|b| b.alloc_size);
                m.insert("alloc_size".into(), opt_int(size));
                Dynamic::from_map(m)
            })
            .collect::<Array>()
    });
    for (name, f) in HEAP_CAPS {
        engine.register_fn(
            name,
            move |ctx: NativeCallContext, h: &mut HeapHandle, caps: &str| {
                heap_caps(&ctx, &h.0, f, caps.parse_caps_arg())
            },
        );
        engine.register_fn(
            name,
            move |ctx: NativeCallContext, h: &mut HeapHandle, caps: i64| {
                heap_caps(&ctx, &h.0, f, caps.parse_caps_arg())
            },
        );
    }
    engine.register_fn("to_string", |h: &mut HeapHandle| {
        format!(
            "{} free of {} ({} free blocks, largest {}, ratio {})",
            h.0.total_free,
            h.0.heap_size,
            h.0.free_blocks,
            h.0.largest_free,
            h.0.largest_free_ratio()
                .map_or("n/a".into(), |r| format!("{r:.3}"))
        )
    });
}

/// What a `heap_caps_*` script function returns from one ESP-IDF view.
type CapsFn = fn(&memlife_heap::firmware_view::EspIdfView, u32) -> Dynamic;

/// `heap_caps_free_size(caps)`, `heap_caps_largest_free_block(caps)`,
/// `heap_caps_minimum_free_size(caps)` and `heap_caps_info(caps)`, on a `Heap` and a `Target`.
const HEAP_CAPS: [(&str, CapsFn); 4] = [
    ("heap_caps_free_size", |v, c| {
        Dynamic::from_int(int(v.heap_caps_get_free_size(c)))
    }),
    ("heap_caps_largest_free_block", |v, c| {
        Dynamic::from_int(int(v.heap_caps_get_largest_free_block(c)))
    }),
    ("heap_caps_minimum_free_size", |v, c| {
        Dynamic::from_int(int(v.heap_caps_get_minimum_free_size(c)))
    }),
    ("heap_caps_info", |v, c| {
        json_to_dynamic(&serde_json::to_value(v.heap_caps_get_info(c)).unwrap_or_default())
    }),
];

/// A capability argument: a name (`"8BIT"`, `"MALLOC_CAP_INTERNAL|8BIT"`) or a number.
trait CapsArg {
    fn parse_caps_arg(&self) -> Result<u32, String>;
}

impl CapsArg for &str {
    fn parse_caps_arg(&self) -> Result<u32, String> {
        memlife_heap::parse_caps(self)
    }
}

impl CapsArg for i64 {
    fn parse_caps_arg(&self) -> Result<u32, String> {
        u32::try_from(*self)
            .map_err(|_| format!("heap capability mask {self} is not a 32-bit mask"))
    }
}

/// Runs one `heap_caps_*` function on a walk; an error on other allocators.
fn heap_caps(
    ctx: &NativeCallContext,
    h: &HeapState,
    f: CapsFn,
    caps: Result<u32, String>,
) -> Result<Dynamic, Box<rhai::EvalAltResult>> {
    let caps = caps.map_err(|e| err(ctx, e))?;
    match &h.firmware_view {
        Some(memlife_heap::FirmwareView::EspIdf(v)) => Ok(f(v, caps)),
        _ => Err(err(
            ctx,
            format!(
                "{}: heap_caps_* are ESP-IDF functions; this heap is {}",
                ctx.fn_name(),
                h.allocator
            ),
        )),
    }
}

/// A multi-heap allocator's regions (ESP-IDF) as maps; empty for single-arena allocators.
fn heap_regions(h: &HeapHandle) -> Array {
    h.0.regions
        .iter()
        .map(|r| {
            let mut m = Map::new();
            m.insert("start".into(), int(r.start).into());
            m.insert("end".into(), int(r.end).into());
            m.insert("kind".into(), r.kind.into());
            m.insert(
                "caps".into(),
                r.caps
                    .iter()
                    .map(|c| Dynamic::from(c.clone()))
                    .collect::<Array>()
                    .into(),
            );
            m.insert("size".into(), int(r.size).into());
            m.insert("free".into(), int(r.free).into());
            m.insert("used".into(), int(r.used).into());
            m.insert("largest_free".into(), int(r.largest_free).into());
            m.insert(
                "largest_allocatable".into(),
                int(r.largest_allocatable).into(),
            );
            m.insert("free_blocks".into(), int(r.free_blocks).into());
            m.insert("used_blocks".into(), int(r.used_blocks).into());
            m.insert("min_ever_free".into(), opt_int(r.min_ever_free));
            m.insert("busy".into(), r.busy_reason.is_some().into());
            Dynamic::from_map(m)
        })
        .collect()
}

fn heap_blocks(h: &HeapHandle) -> Array {
    h.0.blocks
        .iter()
        .map(|b| {
            let mut m = Map::new();
            m.insert("addr".into(), Dynamic::from_int(int(b.addr)));
            m.insert("size".into(), Dynamic::from_int(int(b.size)));
            m.insert("free".into(), Dynamic::from_bool(b.free));
            m.insert("alloc_size".into(), opt_int(b.alloc_size));
            if let Some(t) = &h.1 {
                let task = t.owners.get(&b.addr).cloned();
                m.insert("task".into(), task.map_or(Dynamic::UNIT, Dynamic::from));
            }
            Dynamic::from_map(m)
        })
        .collect()
}

/// `#{bytes, blocks}`.
fn held_map(h: Held) -> Dynamic {
    let mut m = Map::new();
    m.insert("bytes".into(), Dynamic::from_int(int(h.bytes)));
    m.insert("blocks".into(), Dynamic::from_int(int(h.blocks)));
    Dynamic::from_map(m)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn state(total_free: u64, used: u64) -> HeapState {
        HeapState {
            total_free,
            used,
            ..HeapState::empty("test")
        }
    }

    /// Figures read from a garbage heap can be any u64: the deltas saturate, never wrap or
    /// overflow (`1 << 63` minus 1 overflowed i64 before).
    #[test]
    fn diff_of_huge_figures_saturates() {
        let d = diff(&state(1, u64::MAX), &state(1 << 63, 0));
        assert_eq!(d["free_delta"].as_int(), Ok(i64::MAX));
        assert_eq!(d["used_delta"].as_int(), Ok(i64::MIN));
        let d = diff(&state(5, 7), &state(2, 10));
        assert_eq!(d["free_delta"].as_int(), Ok(-3));
        assert_eq!(d["used_delta"].as_int(), Ok(3));
    }

    #[test]
    fn a_heap_has_its_getters_and_heap_caps_only_on_esp_idf() {
        let mut engine = Engine::new();
        register(&mut engine);
        let mut scope = rhai::Scope::new();
        scope.push("h", HeapHandle::from(Rc::new(state(0, 128))));
        let got: Array = engine
            .eval_with_scope(
                &mut scope,
                "[h.free, h.used, h.allocator, h.ratio, h.blocks.len()]",
            )
            .unwrap();
        assert_eq!(got[0].as_int(), Ok(0));
        assert_eq!(got[1].as_int(), Ok(128));
        assert_eq!(got[2].to_string(), "test");
        assert!(got[3].is_unit(), "nothing free: no ratio");
        assert_eq!(got[4].as_int(), Ok(0));
        let e = engine
            .eval_with_scope::<Dynamic>(&mut scope, r#"h.heap_caps_free_size("8BIT")"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("heap_caps_* are ESP-IDF functions"), "{e}");
    }
}
