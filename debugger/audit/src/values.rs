//! Conversions between what memlife reads and what scripts see: the `Heap` object and its
//! getters, phase records as maps, typed variables as Rhai maps and arrays, leak lists and heap
//! diffs.

use std::collections::BTreeSet;
use std::rc::Rc;

use memlife_dwarf::value::{Value, read_c_string, read_variable};
use memlife_heap::HeapState;
use rhai::{Array, Dynamic, Engine, Map};

use crate::debugger::Debugger;
use crate::error::Chain;
use crate::model::PhaseRecord;

pub(crate) fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// `to - from` as a script integer. The figures come from target RAM (or a snapshot file), so
/// they may be anything: `as i64` would turn a figure above `i64::MAX` negative and the
/// subtraction could overflow; this saturates instead.
pub(crate) fn delta(from: u64, to: u64) -> i64 {
    let d = i128::from(to) - i128::from(from);
    i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
}

fn opt_int(v: Option<u64>) -> Dynamic {
    v.map_or(Dynamic::UNIT, |v| Dynamic::from_int(int(v)))
}

fn opt_float(v: Option<f64>) -> Dynamic {
    v.map_or(Dynamic::UNIT, Dynamic::from_float)
}

/// A typed value as a script sees it: structs are maps, arrays are arrays, pointers integers,
/// enums the enumerator's name (or the number when none matches).
pub fn to_dynamic(v: &Value) -> Dynamic {
    match v {
        Value::Int(i) => Dynamic::from_int(*i),
        Value::UInt(u) => Dynamic::from_int(int(*u)),
        Value::Float(f) => Dynamic::from_float(*f),
        Value::Bool(b) => Dynamic::from_bool(*b),
        Value::Pointer(p) => Dynamic::from_int(int(*p)),
        Value::Enum { name: Some(n), .. } => n.clone().into(),
        Value::Enum { name: None, value } => Dynamic::from_int(*value),
        Value::Struct(fields) => {
            let mut m = Map::new();
            for (name, value) in fields {
                m.insert(name.as_str().into(), to_dynamic(value));
            }
            Dynamic::from_map(m)
        }
        Value::Array { elements, .. } => elements.iter().map(to_dynamic).collect::<Array>().into(),
        Value::Unreadable(why) => format!("<unreadable: {why}>").into(),
    }
}

/// `t.var(name)`.
pub fn read_var(d: &mut Debugger, name: &str) -> Result<Dynamic, String> {
    let symbols = d.symbols_rc();
    let value =
        read_variable(&symbols, d.target().as_memory(), name).map_err(|e| Chain(&e).to_string())?;
    Ok(to_dynamic(&value))
}

/// `t.string(addr)`: a NUL-terminated string of at most 256 bytes.
pub fn read_string(d: &mut Debugger, addr: u64) -> Result<String, String> {
    read_c_string(d.target().as_memory(), addr, 256)
        .ok_or_else(|| format!("no readable string at {addr:#010x}"))
}

/// Blocks used in `after` that were not used in `before` (same address and size), with the
/// allocation site the trace recorded. Where the walk sees used *spans* rather than blocks (an
/// allocator without headers: linked_list_allocator), a new span stands for the traced
/// allocations inside it that sit where `before` had free memory.
pub fn leaks(d: &Debugger, before: &HeapState, after: &HeapState) -> Array {
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
        if inside.is_empty() {
            found.push((b.addr, b.size));
        } else {
            found.extend(inside);
        }
    }
    found
        .into_iter()
        .map(|(addr, size)| {
            let mut m = Map::new();
            m.insert("addr".into(), Dynamic::from_int(int(addr)));
            m.insert("size".into(), Dynamic::from_int(int(size)));
            match live.get(&addr) {
                Some(live) => {
                    m.insert("site".into(), live.site.to_string().into());
                    m.insert(
                        "file_line".into(),
                        match (&live.site.file, live.site.line) {
                            (Some(f), Some(l)) => format!("{f}:{l}").into(),
                            _ => Dynamic::UNIT,
                        },
                    );
                    m.insert(
                        "chain".into(),
                        live.site
                            .chain
                            .iter()
                            .map(|c| Dynamic::from(c.clone()))
                            .collect::<Array>()
                            .into(),
                    );
                }
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
        .collect()
}

/// A late free as scripts see it (`t.deferred()`): `addr`, `size`, `site`, `file_line`,
/// `chain`, `allocated_cycle`, `freed_cycle`, `cycles`, `allocated_in`, `freed_in`.
pub(crate) fn deferred_map(b: &crate::deferred::DeferredBlock) -> Dynamic {
    let mut m = Map::new();
    m.insert("addr".into(), Dynamic::from_int(int(b.addr)));
    m.insert("size".into(), Dynamic::from_int(int(b.size)));
    m.insert("site".into(), b.site.to_string().into());
    m.insert(
        "file_line".into(),
        match (&b.site.file, b.site.line) {
            (Some(f), Some(l)) => format!("{f}:{l}").into(),
            _ => Dynamic::UNIT,
        },
    );
    m.insert(
        "chain".into(),
        b.site
            .chain
            .iter()
            .map(|c| Dynamic::from(c.clone()))
            .collect::<Array>()
            .into(),
    );
    m.insert(
        "allocated_cycle".into(),
        Dynamic::from_int(int(b.allocated_cycle)),
    );
    m.insert("freed_cycle".into(), Dynamic::from_int(int(b.freed_cycle)));
    m.insert("cycles".into(), Dynamic::from_int(int(b.cycles)));
    let phase = |p: &Option<String>| p.clone().map_or(Dynamic::UNIT, Dynamic::from);
    m.insert("allocated_in".into(), phase(&b.allocated_in));
    m.insert("freed_in".into(), phase(&b.freed_in));
    Dynamic::from_map(m)
}

/// An allocation memlife made fail (`t.injected()`): `site`, `file_line`, `chain`, `request`,
/// `phase` (`()` outside phases), `seq` (the events from this number on came after it),
/// `returned` (what the phase call returned, by its DWARF type: `"-12"`; `()` until it returned).
pub(crate) fn injected_map(i: &crate::debugger::Injected) -> Dynamic {
    let mut m = Map::new();
    m.insert("site".into(), i.site.to_string().into());
    m.insert(
        "file_line".into(),
        match (&i.site.file, i.site.line) {
            (Some(f), Some(l)) => format!("{f}:{l}").into(),
            _ => Dynamic::UNIT,
        },
    );
    m.insert(
        "chain".into(),
        i.site
            .chain
            .iter()
            .map(|c| Dynamic::from(c.clone()))
            .collect::<Array>()
            .into(),
    );
    m.insert("request".into(), Dynamic::from_int(int(i.request)));
    m.insert(
        "phase".into(),
        i.phase.clone().map_or(Dynamic::UNIT, Dynamic::from),
    );
    m.insert("seq".into(), Dynamic::from_int(int(i.seq)));
    m.insert(
        "returned".into(),
        i.returned.clone().map_or(Dynamic::UNIT, Dynamic::from),
    );
    Dynamic::from_map(m)
}

/// `t.fail_alloc(#{site: .., phase: .., nth: ..})`: the map's keys (any of site and phase, nth
/// 1 when left out); an unknown key or a wrong type is refused, naming it.
pub(crate) fn fail_choice(m: &Map) -> Result<crate::debugger::FailChoice, String> {
    let mut choice = crate::debugger::FailChoice {
        nth: 1,
        ..Default::default()
    };
    for (k, v) in m {
        match k.as_str() {
            "site" | "phase" => {
                let s = v
                    .clone()
                    .into_string()
                    .map_err(|t| format!("fail_alloc: `{k}` must be a string (a name), not {t}"))?;
                if k.as_str() == "site" {
                    choice.site = Some(s);
                } else {
                    choice.phase = Some(s);
                }
            }
            "nth" => {
                let n = v
                    .as_int()
                    .map_err(|t| format!("fail_alloc: `nth` must be an integer, not {t}"))?;
                choice.nth = u64::try_from(n).unwrap_or(0);
            }
            other => {
                return Err(format!(
                    "fail_alloc: unknown key `{other}` (the keys are site, phase and nth)"
                ));
            }
        }
    }
    Ok(choice)
}

/// A phase's allocation site (`t.alloc_sites(phase)`): `key` (what `fail_alloc` takes:
/// `file:line`, else the function), `site`, `function`, `file_line`, `chain`, `count`,
/// `request` (the first allocation's size asked for).
pub(crate) fn alloc_site_map(s: &crate::debugger::AllocSite) -> Dynamic {
    let mut m = Map::new();
    m.insert("key".into(), s.key().into());
    m.insert("site".into(), s.site.to_string().into());
    m.insert(
        "function".into(),
        s.site.function.clone().map_or(Dynamic::UNIT, Dynamic::from),
    );
    m.insert(
        "file_line".into(),
        match (&s.site.file, s.site.line) {
            (Some(f), Some(l)) => format!("{f}:{l}").into(),
            _ => Dynamic::UNIT,
        },
    );
    m.insert(
        "chain".into(),
        s.site
            .chain
            .iter()
            .map(|c| Dynamic::from(c.clone()))
            .collect::<Array>()
            .into(),
    );
    m.insert("count".into(), Dynamic::from_int(int(s.count)));
    m.insert("request".into(), opt_int(s.request));
    Dynamic::from_map(m)
}

/// What `t.after_failure()` saw: `injected` (as `t.injected()` gives it, `()` when the chosen
/// allocation was never made), `end` (`next-cycle`, `release`, `exit`, `hang`, `fault`),
/// `ended` (one line), `status` and `during` (an exit's), `before` (the heap at the failed
/// call's entry) and `after` (when the handling ended; `()` when unknown), `calls` (the role
/// calls on the way, as `t.cycle()` lists them), `leaks` (traced blocks allocated since the
/// failed call began and still live at the end: `addr`, `size`, `site`, `file_line`, `chain`).
pub(crate) fn failure_map(r: &crate::debugger::FailureRun) -> Map {
    use crate::debugger::FailureEnd;
    let mut m = Map::new();
    m.insert(
        "injected".into(),
        r.injected.as_ref().map_or(Dynamic::UNIT, injected_map),
    );
    m.insert("end".into(), r.end.kind().into());
    m.insert("ended".into(), r.end.describe().into());
    let (status, during) = match &r.end {
        FailureEnd::Exit { status, during } => (
            Dynamic::from_int(i64::from(*status)),
            during.clone().map_or(Dynamic::UNIT, Dynamic::from),
        ),
        _ => (Dynamic::UNIT, Dynamic::UNIT),
    };
    m.insert("status".into(), status);
    m.insert("during".into(), during);
    let heap = |h: &Option<Rc<HeapState>>| {
        h.as_ref()
            .map_or(Dynamic::UNIT, |h| Dynamic::from(HeapHandle(Rc::clone(h))))
    };
    m.insert("before".into(), heap(&r.before));
    m.insert("after".into(), heap(&r.after));
    let calls: Array = r
        .calls
        .iter()
        .map(|p| {
            let mut pm = phase_map(&p.record, Rc::clone(&p.before), Rc::clone(&p.after));
            pm.insert("role".into(), p.role.clone().into());
            Dynamic::from_map(pm)
        })
        .collect();
    m.insert("calls".into(), calls.into());
    let leaks: Array = r
        .leaks
        .iter()
        .map(|(addr, l)| {
            let mut lm = Map::new();
            lm.insert("addr".into(), Dynamic::from_int(int(*addr)));
            lm.insert("size".into(), Dynamic::from_int(int(l.size)));
            lm.insert("site".into(), l.site.to_string().into());
            lm.insert(
                "file_line".into(),
                match (&l.site.file, l.site.line) {
                    (Some(f), Some(n)) => format!("{f}:{n}").into(),
                    _ => Dynamic::UNIT,
                },
            );
            lm.insert(
                "chain".into(),
                l.site
                    .chain
                    .iter()
                    .map(|c| Dynamic::from(c.clone()))
                    .collect::<Array>()
                    .into(),
            );
            Dynamic::from_map(lm)
        })
        .collect();
    m.insert("leaks".into(), leaks.into());
    m
}

/// A damaged block as scripts see it: `kind`, `block`, `alloc_size`, `site` (`()` when unknown),
/// `message`.
pub(crate) fn damage_map(d: &crate::model::Damage) -> Dynamic {
    let mut m = Map::new();
    m.insert("kind".into(), d.kind.clone().into());
    m.insert("block".into(), Dynamic::from_int(int(d.block)));
    m.insert("alloc_size".into(), opt_int(d.alloc_size));
    m.insert(
        "site".into(),
        d.site.clone().map_or(Dynamic::UNIT, Dynamic::from),
    );
    m.insert("message".into(), d.message.clone().into());
    Dynamic::from_map(m)
}

/// `diff(a, b)`: how the heap changed from `a` to `b`.
pub fn diff(a: &HeapState, b: &HeapState) -> Map {
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

/// The `Heap` object of scripts: one walk, immutable.
#[derive(Clone)]
pub struct HeapHandle(pub Rc<HeapState>);

/// Registers the `Heap` type and its getters.
pub(crate) fn register_heap(engine: &mut Engine) {
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
            move |ctx: rhai::NativeCallContext, h: &mut HeapHandle, caps: &str| {
                heap_caps(&ctx, &h.0, f, caps.parse_caps_arg())
            },
        );
        engine.register_fn(
            name,
            move |ctx: rhai::NativeCallContext, h: &mut HeapHandle, caps: i64| {
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
pub(crate) type CapsFn = fn(&memlife_heap::firmware_view::EspIdfView, u32) -> Dynamic;

/// `heap_caps_free_size(caps)`, `heap_caps_largest_free_block(caps)`,
/// `heap_caps_minimum_free_size(caps)` and `heap_caps_info(caps)`, on a `Heap` and a `Target`.
pub(crate) const HEAP_CAPS: [(&str, CapsFn); 4] = [
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
pub(crate) trait CapsArg {
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
pub(crate) fn heap_caps(
    ctx: &rhai::NativeCallContext,
    h: &HeapState,
    f: CapsFn,
    caps: Result<u32, String>,
) -> Result<Dynamic, Box<rhai::EvalAltResult>> {
    let fail = |msg: String| -> Box<rhai::EvalAltResult> {
        rhai::EvalAltResult::ErrorRuntime(msg.into(), ctx.call_position()).into()
    };
    let caps = caps.map_err(fail)?;
    match &h.firmware_view {
        Some(memlife_heap::FirmwareView::EspIdf(v)) => Ok(f(v, caps)),
        _ => Err(fail(format!(
            "{}: heap_caps_* are ESP-IDF functions; this heap is {}",
            ctx.fn_name(),
            h.allocator
        ))),
    }
}

/// A JSON value as a script sees it (objects are maps).
pub(crate) fn json_to_dynamic(v: &serde_json::Value) -> Dynamic {
    match v {
        serde_json::Value::Null => Dynamic::UNIT,
        serde_json::Value::Bool(b) => Dynamic::from_bool(*b),
        serde_json::Value::Number(n) => n
            .as_i64()
            .map(Dynamic::from_int)
            .or_else(|| n.as_u64().map(|u| Dynamic::from_int(int(u))))
            .unwrap_or_else(|| Dynamic::from_float(n.as_f64().unwrap_or(0.0))),
        serde_json::Value::String(s) => s.clone().into(),
        serde_json::Value::Array(a) => a.iter().map(json_to_dynamic).collect::<Array>().into(),
        serde_json::Value::Object(o) => {
            let mut m = Map::new();
            for (k, v) in o {
                m.insert(k.as_str().into(), json_to_dynamic(v));
            }
            Dynamic::from_map(m)
        }
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
            Dynamic::from_map(m)
        })
        .collect()
}

pub(crate) fn phase_map(rec: &PhaseRecord, before: Rc<HeapState>, after: Rc<HeapState>) -> Map {
    let mut m = Map::new();
    m.insert("function".into(), rec.function.clone().into());
    m.insert(
        "role".into(),
        rec.alias.clone().map_or(Dynamic::UNIT, Dynamic::from),
    );
    m.insert("cycle".into(), opt_int(rec.cycle));
    m.insert("call".into(), Dynamic::from_int(int(rec.call)));
    m.insert("before".into(), Dynamic::from(HeapHandle(before)));
    m.insert("after".into(), Dynamic::from(HeapHandle(after)));
    m.insert("delta".into(), Dynamic::from_int(rec.delta_used));
    m.insert("peak".into(), Dynamic::from_int(int(rec.peak_used)));
    m.insert(
        "peak_above".into(),
        Dynamic::from_int(int(rec.peak_above_before)),
    );
    m.insert(
        "composition".into(),
        Dynamic::from_array(
            rec.composition
                .iter()
                .map(|p| {
                    let mut pm = Map::new();
                    pm.insert("name".into(), p.name.clone().into());
                    pm.insert("bytes".into(), Dynamic::from_int(int(p.bytes)));
                    pm.insert("requested".into(), Dynamic::from_int(int(p.requested)));
                    pm.insert("blocks".into(), Dynamic::from_int(int(p.blocks)));
                    Dynamic::from_map(pm)
                })
                .collect(),
        ),
    );
    m.insert("allocs".into(), Dynamic::from_int(int(rec.allocs)));
    m.insert("frees".into(), Dynamic::from_int(int(rec.frees)));
    m.insert(
        "method".into(),
        format!("{:?}", rec.method).to_lowercase().into(),
    );
    m.insert(
        "peak_at".into(),
        match &rec.peak_at {
            None => Dynamic::UNIT,
            Some(p) => {
                let mut pm = Map::new();
                pm.insert(
                    "span".into(),
                    p.span.clone().map_or(Dynamic::UNIT, Into::into),
                );
                pm.insert("index".into(), opt_int(p.span_index.map(|i| i as u64)));
                pm.insert("arg".into(), opt_int(p.span_arg.or(p.span_arg1)));
                pm.insert(
                    "label".into(),
                    p.span_label.clone().map_or(Dynamic::UNIT, Dynamic::from),
                );
                pm.insert(
                    "site".into(),
                    p.site
                        .as_ref()
                        .map_or(Dynamic::UNIT, |s| s.to_string().into()),
                );
                Dynamic::from_map(pm)
            }
        },
    );
    let spans: Array = rec
        .spans
        .iter()
        .map(|s| {
            let mut sm = Map::new();
            sm.insert("function".into(), s.function.clone().into());
            sm.insert("call".into(), Dynamic::from_int(int(s.call)));
            sm.insert("index".into(), Dynamic::from_int(s.index as i64));
            sm.insert("arg".into(), Dynamic::from_int(int(s.arg)));
            sm.insert(
                "label".into(),
                s.label.clone().map_or(Dynamic::UNIT, Dynamic::from),
            );
            sm.insert("before".into(), Dynamic::from_int(int(s.before_used)));
            sm.insert("after".into(), Dynamic::from_int(int(s.after_used)));
            sm.insert("delta".into(), Dynamic::from_int(s.delta));
            sm.insert("peak".into(), Dynamic::from_int(int(s.peak_used)));
            sm.insert(
                "peak_above".into(),
                Dynamic::from_int(int(s.peak_used.saturating_sub(s.before_used))),
            );
            sm.insert(
                "damage".into(),
                s.damage.iter().map(damage_map).collect::<Array>().into(),
            );
            Dynamic::from_map(sm)
        })
        .collect();
    m.insert("spans".into(), spans.into());
    m
}

/// A cycle as scripts see it: `index`, `start` (the role that begins it), `before` and `after`
/// (heaps at its first call's entry and at the next cycle's), `calls` (phase maps in the
/// firmware's order, each with its `role`).
pub(crate) fn cycle_map(c: &crate::debugger::Cycle) -> Map {
    let mut m = Map::new();
    m.insert("index".into(), Dynamic::from_int(int(c.index)));
    m.insert("start".into(), c.start_role.clone().into());
    m.insert(
        "before".into(),
        Dynamic::from(HeapHandle(Rc::clone(&c.before))),
    );
    m.insert(
        "after".into(),
        Dynamic::from(HeapHandle(Rc::clone(&c.after))),
    );
    let calls: Array = c
        .calls
        .iter()
        .map(|p| {
            let mut pm = phase_map(&p.record, Rc::clone(&p.before), Rc::clone(&p.after));
            pm.insert("role".into(), p.role.clone().into());
            pm.insert(
                "tensors".into(),
                p.tensors
                    .as_ref()
                    .map_or(Dynamic::UNIT, |t| tensors_array(t).into()),
            );
            Dynamic::from_map(pm)
        })
        .collect();
    m.insert("calls".into(), calls.into());
    m.insert(
        "exit".into(),
        c.exit
            .map_or(Dynamic::UNIT, |s| Dynamic::from_int(i64::from(s))),
    );
    m
}

/// Tensor table entries as maps: `name` (`()` when the table has none), `addr`, `size`,
/// `first`, `last`.
pub(crate) fn tensors_array(tensors: &[crate::buffers::Tensor]) -> Array {
    tensors
        .iter()
        .map(|t| {
            let mut m = Map::new();
            m.insert(
                "name".into(),
                t.name.clone().map_or(Dynamic::UNIT, Dynamic::from),
            );
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
pub(crate) fn buffer_map(b: &crate::buffers::Buffer) -> Dynamic {
    let mut m = Map::new();
    m.insert("addr".into(), Dynamic::from_int(int(b.addr)));
    m.insert("size".into(), Dynamic::from_int(int(b.size)));
    m.insert("request".into(), opt_int(b.request));
    m.insert("alloc_seq".into(), Dynamic::from_int(int(b.alloc_seq)));
    m.insert("free_seq".into(), opt_int(b.free_seq));
    m.insert("site".into(), b.site.clone().into());
    m.insert("alloc_in".into(), b.alloc_in.clone().into());
    m.insert(
        "free_in".into(),
        b.free_in.clone().map_or(Dynamic::UNIT, Dynamic::from),
    );
    Dynamic::from_map(m)
}

/// Overlapping pairs as maps: `a`, `b` (entries: tensor or buffer maps), `ia`, `ib` (their
/// indices), `lo`, `hi`, `bytes`.
pub(crate) fn overlaps_array(items: &Array, pairs: &[crate::buffers::Overlap]) -> Array {
    pairs
        .iter()
        .map(|(a, b, lo, hi)| {
            let mut m = Map::new();
            m.insert("a".into(), items[*a].clone());
            m.insert("b".into(), items[*b].clone());
            m.insert("ia".into(), Dynamic::from_int(*a as i64));
            m.insert("ib".into(), Dynamic::from_int(*b as i64));
            m.insert("lo".into(), Dynamic::from_int(int(*lo)));
            m.insert("hi".into(), Dynamic::from_int(int(*hi)));
            m.insert("bytes".into(), Dynamic::from_int(int(hi - lo)));
            Dynamic::from_map(m)
        })
        .collect()
}

/// `cycle.phases(role)`: the calls of one role in a cycle map, in order (empty when none).
pub(crate) fn cycle_phases(cycle: &Map, role: &str) -> Array {
    let Some(calls) = cycle.get("calls").and_then(|c| c.read_lock::<Array>()) else {
        return Array::new();
    };
    calls
        .iter()
        .filter(|p| {
            p.read_lock::<Map>()
                .and_then(|m| m.get("role").map(|r| r.to_string() == role))
                .unwrap_or(false)
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
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
}
