//! The heap map: the arena as one strip, drawn to scale (a block is at least one pixel wide),
//! used blocks dark (or in their component's colour, see [`crate::palette`]), free blocks light,
//! leaked blocks red with a marker above them (narrow blocks would vanish otherwise). Every
//! block has a `<title>`: its address, size, state and allocation site show on hover; a
//! coloured block also carries `data-component`.
//!
//! Drawn by hand rather than with plotters: it is rectangles on a line, and plotters has no way
//! to give an element a title.

use std::fmt::Write;

use memlife_heap::HeapState;
use memlife_report::model::{HeapMap, MapBlock};

use crate::escape::text;
use crate::kib;

const WIDTH: f64 = 960.0;
const LEFT: f64 = 10.0;
const STRIP_TOP: f64 = 34.0;
const STRIP_H: f64 = 56.0;

/// Colours of the map (also used by the page's legend).
pub const USED: &str = "#1f4e8c";
/// Free blocks.
pub const FREE: &str = "#d9e7d0";
/// Never handed out (newlib's unclaimed tail).
pub const UNCLAIMED: &str = "#eeeeee";
/// Leaked blocks.
pub const LEAKED: &str = "#d02828";

/// The map of one walk, without leak marks or sites (`memlife heap --svg`).
pub fn from_state(at: &str, state: &HeapState) -> HeapMap {
    HeapMap::new(at.to_string(), state, None, |_| None)
}

fn block_title(b: &MapBlock) -> String {
    let state = if b.unclaimed {
        "unclaimed"
    } else if b.free {
        "free"
    } else if b.leaked {
        "LEAKED"
    } else if b.deferred {
        "used (deferred: a later cycle frees it)"
    } else {
        "used"
    };
    let mut t = format!("{:#010x}  {} B  {state}", b.addr, b.size);
    if let Some(site) = &b.site {
        let _ = write!(t, "\nallocated at {site}");
        for c in site.chain.iter().skip(1) {
            let _ = write!(t, "\n  <- {c}");
        }
    }
    t
}

/// The heap map as an SVG element, used blocks in one colour.
pub fn heap_map_svg(map: &HeapMap) -> String {
    heap_map_svg_with(map, &mut |_| None)
}

/// What colours a used block that is not leaked: its component's name and colour, or `None`
/// for the plain used colour.
pub type ComponentOf<'a> = dyn FnMut(&MapBlock) -> Option<(String, &'static str)> + 'a;

/// The heap map with used blocks coloured by `component` (leaked blocks stay red).
pub fn heap_map_svg_with(map: &HeapMap, component: &mut ComponentOf<'_>) -> String {
    let ratio = map
        .summary
        .largest_free_ratio
        .map_or_else(|| "-".to_string(), |r| format!("{r:.3}"));
    let header = format!(
        "{} at {}: {} used in {} blocks, {} free in {} blocks; largest free / total free = {ratio}",
        map.summary.status_word(),
        map.at,
        kib(map.summary.used),
        map.summary.used_blocks,
        kib(map.summary.free),
        map.summary.free_blocks,
    );
    strip_svg(
        &header,
        map.heap_start,
        map.heap_size,
        &map.blocks,
        component,
        (map.leaked_blocks, map.leaked_bytes),
    )
}

/// The blocks a trace saw live at one moment (the blocks of a [`MapBlock`] list, all used), on
/// the arena's strip: what is between them is free or was allocated before the trace began.
pub fn live_map_svg(
    header: &str,
    heap_start: u64,
    heap_size: u64,
    blocks: &[MapBlock],
    component: &mut ComponentOf<'_>,
) -> String {
    strip_svg(header, heap_start, heap_size, blocks, component, (0, 0))
}

/// The strip: a header line, the arena to scale, its two ends, and a line on the leaks.
fn strip_svg(
    header: &str,
    heap_start: u64,
    heap_size: u64,
    blocks: &[MapBlock],
    component: &mut ComponentOf<'_>,
    (leaked_blocks, leaked_bytes): (u64, u64),
) -> String {
    let inner = WIDTH - 2.0 * LEFT;
    // heap_5's regions need not be contiguous: the strip spans from the arena's start to the
    // end of its last block when that lies past heap_start + heap_size.
    let extent = blocks
        .iter()
        .map(|b| b.addr.saturating_add(b.size).saturating_sub(heap_start))
        .fold(heap_size, u64::max);
    let size = extent.max(1) as f64;
    let scale = inner / size;
    let height = STRIP_TOP + STRIP_H + 44.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="heapmap" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" shape-rendering="crispEdges" role="img" aria-label="heap map">"#
    );
    let _ = write!(
        s,
        r##"<text x="{LEFT}" y="16" font-size="14" fill="#222">{}</text>"##,
        text(header)
    );
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{STRIP_TOP}" width="{inner}" height="{STRIP_H}" fill="#f7f7f7" stroke="#999"/>"##
    );
    for b in blocks {
        let x = LEFT + (b.addr.saturating_sub(heap_start)) as f64 * scale;
        // To scale, but never thinner than a pixel: a 16-byte block on a 96 KiB strip is a
        // fifth of a pixel, and fragmentation is exactly those blocks between the free ones.
        let w = (b.size as f64 * scale).max(1.0);
        // The white separator only where the block is wide enough to keep its colour.
        let stroke = if w >= 3.0 { 0.4 } else { 0.0 };
        let used = !b.unclaimed && !b.free && !b.leaked;
        let named = if used { component(b) } else { None };
        let fill = if b.unclaimed {
            UNCLAIMED
        } else if b.free {
            FREE
        } else if b.leaked {
            LEAKED
        } else {
            named.as_ref().map_or(USED, |(_, c)| *c)
        };
        let mut title = block_title(b);
        let data = match &named {
            Some((name, _)) => {
                let _ = write!(title, "\ncomponent: {name}");
                format!(r#" data-component="{}""#, text(name))
            }
            None => String::new(),
        };
        let _ = write!(
            s,
            r##"<rect class="{}"{data} x="{x:.2}" y="{STRIP_TOP}" width="{w:.2}" height="{STRIP_H}" fill="{fill}" stroke="#ffffff" stroke-width="{stroke}"><title>{}</title></rect>"##,
            if b.leaked { "block leaked" } else { "block" },
            text(&title)
        );
        if b.leaked {
            // A marker above, so a 368-byte block on a 96 KiB strip is found at a glance.
            let cx = x + w / 2.0;
            let _ = write!(
                s,
                r#"<path d="M{:.2} {} l-6 -10 h12 z" fill="{LEAKED}"><title>{}</title></path>"#,
                cx,
                STRIP_TOP - 2.0,
                text(&block_title(b))
            );
        }
    }
    let end = heap_start.saturating_add(extent);
    let y = STRIP_TOP + STRIP_H + 16.0;
    let _ = write!(
        s,
        r##"<text x="{LEFT}" y="{y}" font-size="12" fill="#444">{:#010x}</text><text x="{}" y="{y}" font-size="12" fill="#444" text-anchor="end">{end:#010x} ({})</text>"##,
        heap_start,
        WIDTH - LEFT,
        kib(heap_size)
    );
    if leaked_blocks > 0 {
        let _ = write!(
            s,
            r#"<text x="{LEFT}" y="{}" font-size="13" fill="{LEAKED}" font-weight="bold">{} leaked block(s), {} B: hover a red block for its allocation site</text>"#,
            y + 20.0,
            leaked_blocks,
            leaked_bytes
        );
    }
    s.push_str("</svg>");
    s
}

trait StatusWord {
    fn status_word(&self) -> String;
}

impl StatusWord for memlife_report::model::HeapSummary {
    fn status_word(&self) -> String {
        format!("heap {:?}", self.status).to_lowercase()
    }
}
