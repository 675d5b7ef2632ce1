//! Text and JSON renderings of a heap state.

use std::fmt::Write as _;

use memlife_core::LinkStats;
use memlife_heap::{HeapState, HeapStatus};

/// Where the heap was looked at, for the header line and the JSON.
pub struct Context<'a> {
    /// The target description.
    pub target: String,
    /// Function and hit, when `--at` was used.
    pub at: Option<(&'a str, u32)>,
    /// The pc and the function containing it.
    pub pc: Option<(u64, Option<String>)>,
    /// What the walk cost on the link.
    pub link: LinkStats,
}

fn ratio(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), |r| format!("{r:.3}"))
}

fn status_word(s: HeapStatus) -> &'static str {
    match s {
        HeapStatus::Ok => "ok",
        HeapStatus::Busy => "BUSY",
        HeapStatus::Corrupt => "CORRUPT",
        HeapStatus::Uninitialised => "not initialised yet",
    }
}

/// The readable table: a header, the blocks, the anomalies, and a one-line summary.
pub fn text(state: &HeapState, ctx: &Context<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "target     {}", ctx.target);
    if let Some((f, n)) = ctx.at {
        let _ = writeln!(out, "stopped    at entry {n} of {f}");
    }
    if let Some((pc, func)) = &ctx.pc {
        let _ = writeln!(
            out,
            "pc         {pc:#010x} in {}",
            func.as_deref().unwrap_or("??")
        );
    }
    let _ = writeln!(
        out,
        "allocator  {} ({})",
        state.allocator,
        status_word(state.status)
    );
    if let Some(why) = &state.busy_reason {
        let _ = writeln!(
            out,
            "busy       {why}; inconsistencies below are expected, not corruption"
        );
    }
    if state.regions.is_empty() {
        let _ = writeln!(
            out,
            "heap       {:#010x}..{:#010x} ({} bytes)",
            state.heap_start,
            state.heap_start + state.heap_size,
            state.heap_size
        );
    } else {
        // Several regions with gaps between them: one range would be wrong; each has a line.
        let _ = writeln!(
            out,
            "heap       {} bytes in {} regions (one `region` line each)",
            state.heap_size,
            state.regions.len()
        );
    }
    let _ = writeln!(
        out,
        "free       {} bytes in {} free blocks, largest {} (largest/total {}, fragmentation {})",
        state.total_free,
        state.free_blocks,
        state.largest_free,
        ratio(state.largest_free_ratio()),
        ratio(state.fragmentation())
    );
    if let Some(u) = state.unclaimed {
        let _ = writeln!(
            out,
            "unclaimed  {u} bytes between the sbrk break and the heap limit (counted as free)"
        );
    }
    let _ = writeln!(
        out,
        "used       {} bytes in {} blocks",
        state.used, state.used_blocks
    );
    if let Some(m) = state.min_ever_free {
        let _ = writeln!(out, "min ever   {m} bytes free");
    }
    if let Some(a) = state.largest_allocatable {
        let _ = writeln!(
            out,
            "alloc max  {a} bytes in one request (the largest free block rounded down to the allocator's size class)"
        );
    }
    for r in &state.regions {
        let _ = writeln!(
            out,
            "region     {:#010x}..{:#010x} {:<6} {} free of {}, {} blocks free, {} used, largest {} (allocatable {}), min ever {}; caps {}{}",
            r.start,
            r.end,
            r.kind,
            r.free,
            r.size,
            r.free_blocks,
            r.used_blocks,
            r.largest_free,
            r.largest_allocatable,
            r.min_ever_free
                .map_or_else(|| "n/a".to_string(), |m| m.to_string()),
            r.caps.join("|"),
            r.busy_reason
                .as_deref()
                .map_or_else(String::new, |b| format!("; BUSY: {b}"))
        );
    }
    for (name, value) in &state.counters {
        let _ = writeln!(out, "counter    {name} = {value}");
    }
    let _ = writeln!(
        out,
        "link       {} reads, {} bytes",
        ctx.link.reads, ctx.link.bytes
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "  {:<12} {:>8}  state", "address", "size");
    for b in &state.blocks {
        let what = if b.unclaimed {
            "unclaimed"
        } else if b.free {
            "free"
        } else {
            "used"
        };
        let _ = writeln!(out, "  {:#010x}   {:>8}  {what}", b.addr, b.size);
    }
    if !state.anomalies.is_empty() {
        let _ = writeln!(out);
        for a in &state.anomalies {
            let _ = writeln!(out, "anomaly    {:?}: {}", a.kind, a.message);
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "{}", summary(state));
    out
}

/// One line: what a user greps in CI logs.
pub fn summary(state: &HeapState) -> String {
    format!(
        "{}: {} free of {} ({} blocks free, {} used), largest {} ({}), {}{}",
        state.allocator,
        state.total_free,
        state.heap_size,
        state.free_blocks,
        state.used_blocks,
        state.largest_free,
        ratio(state.largest_free_ratio()),
        status_word(state.status),
        if state.anomalies.is_empty() {
            String::new()
        } else {
            format!(", {} anomalies", state.anomalies.len())
        }
    )
}

/// The JSON object of `memlife heap --json`.
pub fn json(state: &HeapState, ctx: &Context<'_>) -> serde_json::Value {
    let mut v = serde_json::to_value(state.report()).unwrap_or_default();
    if let Some(obj) = v.as_object_mut() {
        obj.insert("target".into(), ctx.target.clone().into());
        obj.insert(
            "link".into(),
            serde_json::to_value(ctx.link).unwrap_or_default(),
        );
        if let Some((f, n)) = ctx.at {
            obj.insert("at".into(), serde_json::json!({ "function": f, "hit": n }));
        }
        if let Some((pc, func)) = &ctx.pc {
            obj.insert(
                "pc".into(),
                serde_json::json!({ "address": pc, "function": func }),
            );
        }
    }
    v
}
