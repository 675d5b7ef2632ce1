//! Conversions between what memlife reads and what scripts see: typed variables as Rhai maps and
//! arrays, leak lists and heap diffs.

use std::collections::BTreeSet;

use memlife_dwarf::value::{Value, read_c_string, read_variable};
use memlife_heap::HeapState;
use rhai::{Array, Dynamic, Map};

use crate::debugger::Debugger;
use crate::error::Chain;

fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
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
/// allocation site the trace recorded.
pub fn leaks(d: &Debugger, before: &HeapState, after: &HeapState) -> Array {
    let old: BTreeSet<(u64, u64)> = before
        .blocks
        .iter()
        .filter(|b| !b.free)
        .map(|b| (b.addr, b.size))
        .collect();
    after
        .blocks
        .iter()
        .filter(|b| !b.free && !old.contains(&(b.addr, b.size)))
        .map(|b| {
            let mut m = Map::new();
            m.insert("addr".into(), Dynamic::from_int(int(b.addr)));
            m.insert("size".into(), Dynamic::from_int(int(b.size)));
            match d.live().get(&b.addr) {
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
        Dynamic::from_int(b.total_free as i64 - a.total_free as i64),
    );
    m.insert(
        "used_delta".into(),
        Dynamic::from_int(b.used as i64 - a.used as i64),
    );
    m.insert(
        "allocated".into(),
        list(ub.difference(&ua).collect()).into(),
    );
    m.insert("freed".into(), list(ua.difference(&ub).collect()).into());
    m
}
