//! Buffers and their lifetimes, for the overlap check, from two sources:
//!
//! - a tensor table the firmware keeps (`[tensors]` in memlife.toml: a global array of structs
//!   and the fields that hold each tensor's name, address, size and first and last use, with
//!   an optional global holding how many entries are used), read through DWARF;
//! - the traced allocations, when there is no table: a buffer lives from its allocation to its
//!   release, across the spans that ran meanwhile. Two buffers whose memory intersects while
//!   both live mean the allocator handed out memory still in use (a corrupted heap, a double
//!   free), which a table-free firmware can only show this way.

use std::collections::BTreeMap;

use memlife_core::Memory;
use memlife_dwarf::Symbols;
use memlife_dwarf::value::{Value, read_c_string, read_variable};

use crate::config::{AuditConfig, TensorTable};
use crate::error::Chain;
use crate::model::{EventKind, TraceEvent};
use crate::observers::labels::escape;

/// One entry of the firmware's tensor table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    /// Its name, when the table has a name field.
    pub name: Option<String>,
    /// First byte.
    pub addr: u64,
    /// Bytes.
    pub size: u64,
    /// First use (layer or span index).
    pub first: i64,
    /// Last use.
    pub last: i64,
}

fn number(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::UInt(u) | Value::Pointer(u) => i64::try_from(*u).ok(),
        Value::Enum { value, .. } => Some(*value),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

/// A name field: a `char *` (read from target memory, at most 64 bytes) or a `char[]`.
fn name_of(mem: &mut dyn Memory, v: &Value) -> Option<String> {
    match v {
        Value::Pointer(p) => read_c_string(mem, *p, 64).map(|s| escape(&s)),
        Value::Array { elements, .. } => {
            let bytes: Vec<u8> = elements
                .iter()
                .filter_map(number)
                .take_while(|b| *b != 0)
                .map(|b| b as u8)
                .collect();
            Some(escape(&String::from_utf8_lossy(&bytes)))
        }
        _ => None,
    }
}

/// The configured tensor table as it is now; `Ok(None)` when none is configured or the
/// firmware has no such global.
pub fn read_tensors(
    config: &AuditConfig,
    symbols: &Symbols,
    mem: &mut dyn Memory,
) -> Result<Option<Vec<Tensor>>, String> {
    let Some(cfg) = &config.tensors else {
        return Ok(None);
    };
    if symbols.variable(&cfg.table, &[]).is_none() {
        return Ok(None);
    }
    match read_table(symbols, mem, cfg) {
        Err(_) if cfg.bundled => Ok(None),
        other => other.map(Some),
    }
}

fn read_table(
    symbols: &Symbols,
    mem: &mut dyn Memory,
    cfg: &TensorTable,
) -> Result<Vec<Tensor>, String> {
    let read = |mem: &mut dyn Memory, name: &str| {
        read_variable(symbols, mem, name).map_err(|e| format!("[tensors] {name}: {}", Chain(&e)))
    };
    let table = read(mem, &cfg.table)?;
    let rows = table
        .elements()
        .ok_or_else(|| format!("[tensors] table `{}` is not an array", cfg.table))?
        .to_vec();
    let count = match &cfg.count {
        Some(c) => {
            let n = number(&read(mem, c)?)
                .ok_or_else(|| format!("[tensors] count `{c}` is not a number"))?;
            usize::try_from(n).unwrap_or(0).min(rows.len())
        }
        None => rows.len(),
    };
    let mut out = Vec::with_capacity(count);
    for row in &rows[..count] {
        let field = |f: &str| -> Result<i64, String> {
            row.field(f).and_then(number).ok_or_else(|| {
                format!(
                    "[tensors] field `{f}` of `{}` is missing or not a number",
                    cfg.table
                )
            })
        };
        let name = match &cfg.name {
            Some(f) => row.field(f).cloned().and_then(|v| name_of(mem, &v)),
            None => None,
        };
        out.push(Tensor {
            name,
            addr: field(&cfg.addr)? as u64,
            size: field(&cfg.size)? as u64,
            first: field(&cfg.first)?,
            last: field(&cfg.last)?,
        });
    }
    Ok(out)
}

/// Two entries (indices) that share memory, and the shared range `lo..hi`.
pub type Overlap = (usize, usize, u64, u64);

/// Two table entries that share memory while both are in use (entries at address 0 are not
/// placed): `(a, b, lo, hi)` indices and the shared range.
pub fn tensor_overlaps(tensors: &[Tensor]) -> Vec<Overlap> {
    let mut out = Vec::new();
    for (a, x) in tensors.iter().enumerate() {
        for (b, y) in tensors.iter().enumerate().skip(a + 1) {
            if x.addr == 0 || y.addr == 0 {
                continue;
            }
            let live = x.first <= y.last && y.first <= x.last;
            let lo = x.addr.max(y.addr);
            let hi = x
                .addr
                .saturating_add(x.size)
                .min(y.addr.saturating_add(y.size));
            if live && lo < hi {
                out.push((a, b, lo, hi));
            }
        }
    }
    out
}

/// One traced allocation and its lifetime.
#[derive(Debug, Clone, PartialEq)]
pub struct Buffer {
    /// Block address.
    pub addr: u64,
    /// Block size.
    pub size: u64,
    /// Requested size, when known.
    pub request: Option<u64>,
    /// The allocation's event.
    pub alloc_seq: u64,
    /// The release's event; `None` while still allocated.
    pub free_seq: Option<u64>,
    /// Where it was allocated.
    pub site: String,
    /// Phase and span running at the allocation.
    pub alloc_in: String,
    /// Phase and span running at the release.
    pub free_in: Option<String>,
}

fn where_(e: &TraceEvent) -> String {
    match (&e.phase, &e.span) {
        (Some(p), Some(s)) => format!("{p} / {s}"),
        (Some(p), None) => p.clone(),
        (None, Some(s)) => s.clone(),
        (None, None) => "outside any phase".into(),
    }
}

/// Every traced allocation, with its release, and the pairs of buffers whose memory
/// intersected while both were allocated (indices into the buffers, the shared range).
pub fn traced_buffers(events: &[TraceEvent]) -> (Vec<Buffer>, Vec<Overlap>) {
    let mut buffers: Vec<Buffer> = Vec::new();
    // Live buffers by address; several when the allocator handed out one address twice.
    let mut live: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    let mut overlaps = Vec::new();
    for e in events {
        match e.kind {
            EventKind::Alloc => {
                let end = e.addr.saturating_add(e.size);
                let i = buffers.len();
                for (_, ids) in live.range(..end) {
                    for &j in ids {
                        let b: &Buffer = &buffers[j];
                        let hi = end.min(b.addr.saturating_add(b.size));
                        let lo = e.addr.max(b.addr);
                        if lo < hi {
                            overlaps.push((j, i, lo, hi));
                        }
                    }
                }
                buffers.push(Buffer {
                    addr: e.addr,
                    size: e.size,
                    request: e.request,
                    alloc_seq: e.seq,
                    free_seq: None,
                    site: e.site.to_string(),
                    alloc_in: where_(e),
                    free_in: None,
                });
                live.entry(e.addr).or_default().push(i);
            }
            EventKind::Free => {
                if let Some(ids) = live.get_mut(&e.addr) {
                    // The oldest allocation at this address is the one released.
                    let j = ids.remove(0);
                    if ids.is_empty() {
                        live.remove(&e.addr);
                    }
                    buffers[j].free_seq = Some(e.seq);
                    buffers[j].free_in = Some(where_(e));
                }
            }
        }
    }
    (buffers, overlaps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Site;

    fn ev(seq: u64, kind: EventKind, addr: u64, size: u64) -> TraceEvent {
        TraceEvent {
            seq,
            kind,
            addr,
            size,
            request: None,
            used_after: 0,
            phase: Some("run".into()),
            span: Some(format!("layer#{seq}")),
            site: Site::default(),
            task: None,
            tick: None,
        }
    }

    #[test]
    fn traced_buffers_overlap_only_when_both_are_allocated() {
        use EventKind::*;
        let events = [
            ev(0, Alloc, 0x100, 0x20),
            ev(1, Free, 0x100, 0x20),
            // Same memory after the release: no overlap.
            ev(2, Alloc, 0x100, 0x40),
            // Adjacent: no overlap.
            ev(3, Alloc, 0x140, 0x10),
            // Inside the live block at 0x100 (a heap that handed it out twice).
            ev(4, Alloc, 0x120, 0x30),
        ];
        let (buffers, overlaps) = traced_buffers(&events);
        assert_eq!(buffers.len(), 4);
        assert_eq!(buffers[0].free_seq, Some(1));
        assert_eq!(buffers[0].free_in.as_deref(), Some("run / layer#1"));
        assert_eq!(overlaps, vec![(1, 3, 0x120, 0x140), (2, 3, 0x140, 0x150)]);
    }

    #[test]
    fn table_entries_overlap_when_memory_and_uses_intersect() {
        let t = |addr, size, first, last| Tensor {
            name: None,
            addr,
            size,
            first,
            last,
        };
        let tensors = [
            t(0x100, 0x40, 0, 2),
            t(0x120, 0x40, 2, 3),
            t(0x100, 0x40, 3, 4),
            t(0, 0x40, 0, 9),
        ];
        assert_eq!(
            tensor_overlaps(&tensors),
            vec![(0, 1, 0x120, 0x140), (1, 2, 0x120, 0x140)]
        );
    }
}
