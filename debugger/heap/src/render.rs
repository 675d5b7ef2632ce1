//! A heap state as people and tools read it: the text table of `memlife heap` and
//! `monitor heap`, its block list (`monitor heap blocks`), the one-line summary CI logs grep, and
//! the JSON object of `memlife heap --json`, `monitor heap json`, `monitor dump` and the audit's
//! `dump()` (keys: docs/heap-json.md). Every view of a heap goes through here, so they agree.

use std::fmt::Write as _;

use memlife_core::{LinkStats, Register, Target};
use memlife_dwarf::Symbols;

use crate::firmware_view::{FirmwareView, MultiHeapInfo};
use crate::{HeapState, HeapStatus};

/// Where the heap was looked at, for the header line and the JSON.
#[derive(Debug, Clone)]
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

impl Context<'_> {
    /// Where `target` stands now: its description, and its pc with the function holding it
    /// (when the pc can be read); `at` is left for the caller.
    pub fn of(target: &mut dyn Target, symbols: &Symbols, link: LinkStats) -> Self {
        let pc = target
            .read_register(Register::ProgramCounter)
            .ok()
            .map(|pc| {
                // C++ and Rust functions by their demangled names, as users write them.
                let name = symbols.function_at(pc).map(|s| {
                    memlife_dwarf::demangle_name(&s.name).unwrap_or_else(|| s.name.clone())
                });
                (pc, name)
            });
        Context {
            target: target.describe(),
            at: None,
            pc,
            link,
        }
    }
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
    if let Some(p) = state.poisoning {
        let _ = writeln!(out, "poisoning  {p}");
    }
    if let Some(v) = &state.firmware_view {
        out.push_str(&firmware_view(v));
    }
    let _ = write!(
        out,
        "link       {} reads, {} bytes",
        ctx.link.reads, ctx.link.bytes
    );
    if let Some(s) = ctx.link.strategy {
        let _ = write!(
            out,
            ", {} round trips ({} walk)",
            ctx.link.round_trips,
            s.name()
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(out);
    out.push_str(&blocks(state));
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

/// What the firmware's own API would print, one `firmware` line per call.
pub fn firmware_view(v: &FirmwareView) -> String {
    let mut out = String::new();
    match v {
        FirmwareView::FreeRtos(f) => {
            let s = &f.heap_stats;
            let _ = writeln!(
                out,
                "firmware   vPortGetHeapStats: xAvailableHeapSpaceInBytes {} xSizeOfLargestFreeBlockInBytes {} xSizeOfSmallestFreeBlockInBytes {} xNumberOfFreeBlocks {} xMinimumEverFreeBytesRemaining {} xNumberOfSuccessfulAllocations {} xNumberOfSuccessfulFrees {}",
                s.xAvailableHeapSpaceInBytes,
                s.xSizeOfLargestFreeBlockInBytes,
                s.xSizeOfSmallestFreeBlockInBytes,
                s.xNumberOfFreeBlocks,
                s.xMinimumEverFreeBytesRemaining,
                s.xNumberOfSuccessfulAllocations,
                s.xNumberOfSuccessfulFrees
            );
            let _ = writeln!(
                out,
                "firmware   xPortGetFreeHeapSize() = {}, xPortGetMinimumEverFreeHeapSize() = {}",
                f.xPortGetFreeHeapSize, f.xPortGetMinimumEverFreeHeapSize
            );
        }
        FirmwareView::Newlib(n) => {
            let m = &n.mallinfo;
            let _ = writeln!(
                out,
                "firmware   mallinfo(): arena {} ordblks {} uordblks {} fordblks {} keepcost {}",
                m.arena, m.ordblks, m.uordblks, m.fordblks, m.keepcost
            );
        }
        FirmwareView::EmbeddedAlloc(e) => {
            let _ = writeln!(out, "firmware   used() = {}, free() = {}", e.used, e.free);
        }
        FirmwareView::EspIdf(e) => {
            for h in &e.heaps {
                let _ = writeln!(
                    out,
                    "firmware   multi_heap_get_info({:#010x}): {}",
                    h.start,
                    info_line(&h.info)
                );
            }
            for c in &e.heap_caps {
                let _ = writeln!(
                    out,
                    "firmware   heap_caps {}: free_size {} largest_free_block {} minimum_free_size {}",
                    c.name, c.free_size, c.largest_free_block, c.minimum_free_size
                );
            }
        }
    }
    out
}

fn info_line(i: &MultiHeapInfo) -> String {
    format!(
        "total_free_bytes {} total_allocated_bytes {} largest_free_block {} minimum_free_bytes {} allocated_blocks {} free_blocks {} total_blocks {}",
        i.total_free_bytes,
        i.total_allocated_bytes,
        i.largest_free_block,
        i.minimum_free_bytes,
        i.allocated_blocks,
        i.free_blocks,
        i.total_blocks
    )
}

/// The block list: a header line, then one line per block with its address, size and state.
pub fn blocks(state: &HeapState) -> String {
    let mut out = format!("  {:<12} {:>8}  state\n", "address", "size");
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

/// The JSON object of a heap (docs/heap-json.md); with `ctx`, also where it was looked at
/// (`target`, `link`, `at`, `pc`), as `memlife heap --json` prints it.
pub fn json(state: &HeapState, ctx: Option<&Context<'_>>) -> serde_json::Value {
    let mut v = serde_json::to_value(state.report()).unwrap_or_default();
    let (Some(obj), Some(ctx)) = (v.as_object_mut(), ctx) else {
        return v;
    };
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
    v
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::Block;

    fn state() -> HeapState {
        let mut s = HeapState::empty("freertos-heap4");
        (s.heap_start, s.heap_size) = (0x2000_0000, 0x100);
        s.blocks = vec![
            Block {
                addr: 0x2000_0000,
                size: 0x40,
                free: false,
                unclaimed: false,
                alloc_size: None,
            },
            Block {
                addr: 0x2000_0040,
                size: 0xc0,
                free: true,
                unclaimed: false,
                alloc_size: None,
            },
        ];
        (
            s.total_free,
            s.used,
            s.largest_free,
            s.free_blocks,
            s.used_blocks,
        ) = (0xc0, 0x40, 0xc0, 1, 1);
        s
    }

    #[test]
    fn the_table_holds_the_block_list_and_ends_with_the_summary() {
        let s = state();
        let ctx = Context {
            target: "gdb-remote 127.0.0.1:1234".into(),
            at: Some(("model_release", 2)),
            pc: Some((0x0800_0100, Some("model_release".into()))),
            link: LinkStats::default(),
        };
        let t = text(&s, &ctx);
        assert!(t.contains(&blocks(&s)), "{t}");
        assert!(t.contains("stopped    at entry 2 of model_release"), "{t}");
        assert!(t.trim_end().ends_with(&summary(&s)), "{t}");
        assert_eq!(
            blocks(&s).lines().nth(2),
            Some("  0x20000040        192  free")
        );
    }

    #[test]
    fn the_table_says_what_the_firmware_would_print() {
        let mut s = state();
        let mut v = crate::firmware_view::FreeRtosView::default();
        v.heap_stats.xNumberOfFreeBlocks = 3;
        v.xPortGetFreeHeapSize = 192;
        s.firmware_view = Some(FirmwareView::FreeRtos(v));
        let ctx = Context {
            target: "t".into(),
            at: None,
            pc: None,
            link: LinkStats::default(),
        };
        let t = text(&s, &ctx);
        assert!(t.contains("xNumberOfFreeBlocks 3"), "{t}");
        assert!(t.contains("xPortGetFreeHeapSize() = 192"), "{t}");
    }

    #[test]
    fn json_is_the_heap_report_plus_where_it_was_looked_at() {
        let s = state();
        let bare = json(&s, None);
        assert_eq!(bare, serde_json::to_value(s.report()).unwrap());
        assert!(bare.get("target").is_none());
        let ctx = Context {
            target: "snapshot (t)".into(),
            at: None,
            pc: Some((0x0800_0100, None)),
            link: LinkStats {
                reads: 3,
                bytes: 256,
                max_read: 2046,
                ..LinkStats::default()
            },
        };
        let placed = json(&s, Some(&ctx));
        assert_eq!(placed["target"], "snapshot (t)");
        assert_eq!(placed["link"]["reads"], 3);
        assert_eq!(placed["pc"]["address"], 0x0800_0100);
        assert!(placed.get("at").is_none());
        assert_eq!(placed["total_free"], bare["total_free"]);
    }
}
