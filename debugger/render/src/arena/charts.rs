//! The four arena drawings of a model's section, each from the report model only: the arena
//! map (one strip to scale), the per-operator stairs of the persistent tail (each step split by
//! category), the tensor lifetime chart (each planned tensor a bar over its operators at its
//! offset, overlapping ones in red) and the activation curve (bytes live at each operator).

use memlife_report::model::arena_plan::MAX_PLAN_OPERATORS;
use memlife_report::model::{ArenaBuild, ArenaPlan, ModelArena};

use super::categories::category_colour;
use super::svg::Canvas;
use crate::heapmap::{FREE, LEAKED};

const WIDTH: f64 = 960.0;
/// Room left of the plots for their y labels.
const LEFT: f64 = 72.0;
const RIGHT: f64 = 16.0;
const INNER: f64 = WIDTH - LEFT - RIGHT;
/// The head (planned activations) in the map and the tensor bars.
pub const HEAD: &str = "#3b6fc6";
/// The persistent tail in the map.
pub const TAIL: &str = "#1f4e8c";
/// Temporary peaks in the map.
pub const TEMP: &str = "#9b9b9b";
const INK: &str = "#222222";
const GRID: &str = "#cccccc";

/// The arena's sections at the end of the model's build: `(head, temp peak above the head,
/// temp peak below the tail, persistent, arena)` in bytes, the arena from `buffer_head_`.
pub fn sections(m: &ModelArena, b: Option<&ArenaBuild>) -> (u64, u64, u64, u64, u64) {
    let arena = b
        .filter(|b| b.buffer_tail > b.buffer_head)
        .map_or(m.arena_bytes, |b| b.buffer_tail - b.buffer_head);
    let peak = b.and_then(|b| b.peaks.iter().max_by_key(|p| p.bytes));
    (
        m.head_bytes,
        peak.map_or(0, |p| p.above_head),
        peak.map_or(0, |p| p.below_tail),
        m.persistent_bytes,
        arena,
    )
}

/// The arena map: head from the left, tail from the right, the free gap between, the largest
/// temporary peak drawn over the gap where it lay; each section's bytes written under it.
pub fn map(m: &ModelArena, b: Option<&ArenaBuild>) -> String {
    let (head, above, below, tail, arena) = sections(m, b);
    let size = arena.max(head.saturating_add(tail)).max(1);
    let scale = INNER / size as f64;
    let x = |bytes: u64| LEFT + bytes as f64 * scale;
    let (top, h) = (30.0, 48.0);
    let mut c = Canvas::new("arena-map", "arena map", WIDTH, 130.0);
    c.text(
        (LEFT, 18.0),
        13,
        "start",
        INK,
        &format!(
            "{} B from buffer_head_ (left) to buffer_tail_ (right), to scale",
            arena
        ),
    );
    let free = arena.saturating_sub(head).saturating_sub(tail);
    let parts = [
        (0, head, HEAD, format!("head (non-persistent): {head} B")),
        (head, free, FREE, format!("free gap: {free} B")),
        (
            size.saturating_sub(tail),
            tail,
            TAIL,
            format!("tail (persistent): {tail} B"),
        ),
    ];
    for (start, bytes, fill, title) in &parts {
        if *bytes > 0 {
            c.rect((x(*start), top, *bytes as f64 * scale, h), fill, title, "");
        }
    }
    // The temporary peak lay in the gap: above the head and below the tail at once.
    let peak = above.saturating_add(below);
    let title =
        format!("temporary peak: {peak} B ({above} B above the head, {below} B below the tail)");
    if above > 0 {
        let w = above as f64 * scale;
        c.rect(
            (x(head), top + h * 0.25, w, h * 0.5),
            TEMP,
            &title,
            r#" opacity="0.8""#,
        );
    }
    if below > 0 {
        let start = size.saturating_sub(tail).saturating_sub(below);
        let w = below as f64 * scale;
        c.rect(
            (x(start), top + h * 0.25, w, h * 0.5),
            TEMP,
            &title,
            r#" opacity="0.8""#,
        );
    }
    c.outline((LEFT, top, INNER, h), "#999999", 1.0);
    if arena < head.saturating_add(tail) {
        c.text(
            (LEFT + INNER, top + h + 18.0),
            12,
            "end",
            LEAKED,
            &format!(
                "does not fit: head and tail need {} B",
                head.saturating_add(tail)
            ),
        );
    }
    let words = format!(
        "tail {tail} B \u{b7} head {head} B \u{b7} temp peak {peak} B \u{b7} free {free} B \u{b7} arena {arena} B"
    );
    c.text((LEFT, top + h + 40.0), 13, "start", INK, &words);
    c.finish()
}

/// One column of the stairs: its label and its pieces `(category, bytes, title)` in order.
pub type Column = (String, Vec<(String, u64, String)>);

/// The persistent tail step by step: one column per operator (node -1, the interpreter's own
/// allocations, first), each rising from the level the previous one left by the bytes the
/// operator's Init and Prepare took, split by category.
pub fn stairs(columns: &[Column]) -> Option<String> {
    let total = columns
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(_, b, _)| *b))
        .fold(0u64, u64::saturating_add);
    if columns.is_empty() || total == 0 {
        return None;
    }
    let (mut c, bars) = Bars::canvas(
        ("arena-stairs", "arena stairs per operator"),
        (260.0, 120.0),
        total,
        columns.len(),
    );
    let (top, plot_h) = (bars.top, bars.plot_h);
    let y = |bytes: u64| bars.y(bytes);
    let mut level = 0u64;
    for (i, (label, pieces)) in columns.iter().enumerate() {
        let (x, w) = bars.column(i, 0.1);
        if level > 0 {
            // What the operators before it left, faint, so the columns read as a staircase.
            c.rect(
                (x, y(level), w, plot_h + top - y(level)),
                "#e4ecf7",
                "held before",
                "",
            );
        }
        for (category, bytes, title) in pieces {
            let next = level.saturating_add(*bytes);
            let extra = format!(r#" data-category="{}""#, crate::escape::text(category));
            c.rect(
                (x, y(next), w, y(level) - y(next)),
                category_colour(category),
                title,
                &extra,
            );
            level = next;
        }
        c.text_up((x + w / 2.0, top + plot_h + 14.0), 11, label);
    }
    Some(c.finish())
}

/// The frame of a bar chart over operators: bytes from 0 (bottom) to `max` (top) on a
/// vertical axis with a light grid, and equal columns left to right.
struct Bars {
    top: f64,
    plot_h: f64,
    max: u64,
    col_w: f64,
}

impl Bars {
    /// A canvas `(id, title)` whose plot is `plot_h` high with `below` more for labels under
    /// it, its axis drawn up to `max` bytes, and the frame for `columns` columns.
    fn canvas(
        (id, title): (&str, &str),
        (plot_h, below): (f64, f64),
        max: u64,
        columns: usize,
    ) -> (Canvas, Bars) {
        let mut c = Canvas::new(id, title, WIDTH, plot_h + below);
        let bars = Bars {
            top: 16.0,
            plot_h,
            max: max.max(1),
            col_w: INNER / columns.max(1) as f64,
        };
        for i in 0..=4u64 {
            let v = max / 4 * i;
            let yy = bars.y(v);
            c.line((LEFT, yy), (LEFT + INNER, yy), GRID, false);
            c.text((LEFT - 6.0, yy + 4.0), 11, "end", INK, &format!("{v} B"));
        }
        (c, bars)
    }

    /// The height of `bytes` on the axis.
    fn y(&self, bytes: u64) -> f64 {
        self.top + self.plot_h - bytes as f64 / self.max as f64 * self.plot_h
    }

    /// Column `i`'s bar: its left edge and width, `margin` of the column left on each side.
    fn column(&self, i: usize, margin: f64) -> (f64, f64) {
        (
            LEFT + i as f64 * self.col_w + self.col_w * margin,
            self.col_w * (1.0 - 2.0 * margin),
        )
    }
}

/// The tensor lifetime chart: each planned tensor a bar from its first to its last operator
/// (x) at its offset in the head (y, downwards), as tall as its bytes; scratch buffers at their
/// operator; tensors in a listed overlap red, the shared bytes outlined in black.
pub fn lifetimes(plan: &ArenaPlan) -> Option<String> {
    let tensors: Vec<_> = plan
        .tensors
        .iter()
        .filter_map(|t| Some((t, t.offset?, t.bytes?, t.first_op?, t.last_op?)))
        .collect();
    let extent = tensors
        .iter()
        .map(|(_, o, b, _, _)| o.saturating_add(*b))
        .chain(
            plan.scratch
                .iter()
                .filter_map(|s| Some(s.offset?.saturating_add(s.bytes))),
        )
        .chain([plan.head_bytes])
        .max()
        .unwrap_or(0);
    // A lifetime past the operators listed is drawn to the last column (the target is
    // untrusted: never a column per claimed operator).
    let ops = tensors
        .iter()
        .map(|(_, _, _, _, l)| (*l as usize).saturating_add(1))
        .max()
        .unwrap_or(0)
        .min(MAX_PLAN_OPERATORS)
        .max(plan.operators.len());
    if tensors.is_empty() || extent == 0 || ops == 0 {
        return None;
    }
    let (top, plot_h) = (16.0, 300.0);
    let mut c = Canvas::new("arena-lifetimes", "tensor lifetimes", WIDTH, plot_h + 110.0);
    let scale = plot_h / extent as f64;
    let col_w = INNER / ops as f64;
    let y = |offset: u64| top + offset as f64 * scale;
    let last_col = u32::try_from(ops.saturating_sub(1)).unwrap_or(u32::MAX);
    let span = |first: u32, last: u32| {
        let (first, last) = (first.min(last_col), last.min(last_col));
        let x = LEFT + first as f64 * col_w + 2.0;
        (x, (last.saturating_sub(first) as f64 + 1.0) * col_w - 4.0)
    };
    for i in 0..=4u64 {
        let v = extent / 4 * i;
        c.line((LEFT, y(v)), (LEFT + INNER, y(v)), GRID, false);
        c.text((LEFT - 6.0, y(v) + 4.0), 11, "end", INK, &format!("+{v}"));
    }
    for (t, offset, bytes, first, last) in &tensors {
        let bad = plan.overlapped(t.index);
        let (x, w) = span(*first, *last);
        let title = format!(
            "tensor {} \"{}\": {} B at offset {}, live at operators {}..{}{}",
            t.index,
            t.label(),
            bytes,
            offset,
            first,
            last,
            if bad { " (OVERLAPS a live buffer)" } else { "" }
        );
        let (fill, extra) = if bad {
            // Translucent: the other side of the overlap shows through.
            (
                LEAKED,
                format!(
                    r#" class="overlap" data-tensor="{}" opacity="0.7""#,
                    t.index
                ),
            )
        } else {
            (HEAD, format!(r#" data-tensor="{}""#, t.index))
        };
        c.rect(
            (x, y(*offset), w, *bytes as f64 * scale),
            fill,
            &title,
            &extra,
        );
    }
    for s in &plan.scratch {
        let Some(offset) = s.offset else { continue };
        let (x, w) = span(s.operator, s.operator);
        let title = format!(
            "scratch {} of operator {}: {} B at offset {offset}",
            s.index, s.operator, s.bytes
        );
        c.rect((x, y(offset), w, s.bytes as f64 * scale), TEMP, &title, "");
    }
    for o in &plan.overlaps {
        // The shared bytes, placed by the first side's address and offset.
        let base = tensors
            .iter()
            .find(|(t, ..)| o.a.what == "tensor" && t.index == o.a.index)
            .and_then(|(t, offset, ..)| t.address?.checked_sub(*offset));
        if let Some(base) = base {
            let (x, w) = span(o.first_op, o.last_op);
            let (s, e) = (o.start.saturating_sub(base), o.end.saturating_sub(base));
            c.outline(
                (x - 1.0, y(s), w + 2.0, (e.saturating_sub(s)) as f64 * scale),
                INK,
                2.5,
            );
        }
    }
    operator_labels(&mut c, plan, ops, top + plot_h);
    Some(c.finish())
}

/// The operators' indices and names under a chart with `ops` columns.
fn operator_labels(c: &mut Canvas, plan: &ArenaPlan, ops: usize, bottom: f64) {
    let col_w = INNER / ops.max(1) as f64;
    for i in 0..ops {
        let name = plan
            .operators
            .get(i)
            .map_or_else(|| format!("{i}"), |o| format!("{i} {}", o.name));
        c.text_up((LEFT + (i as f64 + 0.5) * col_w, bottom + 14.0), 11, &name);
    }
}

/// The activation curve: the bytes of planned tensors and scratch buffers live at each
/// operator, as bars, the peak outlined in red, the head's bytes a dashed line.
pub fn activation(plan: &ArenaPlan) -> Option<String> {
    let ops = plan.operators.len();
    let max = plan
        .operators
        .iter()
        .map(|o| o.live_bytes)
        .chain([plan.head_bytes])
        .max()
        .unwrap_or(0);
    if ops == 0 || max == 0 {
        return None;
    }
    let (mut c, bars) = Bars::canvas(
        ("arena-activation", "activation bytes per operator"),
        (220.0, 110.0),
        max,
        ops,
    );
    let (top, plot_h) = (bars.top, bars.plot_h);
    let y = |bytes: u64| bars.y(bytes);
    let mut points = Vec::with_capacity(ops);
    for (i, o) in plan.operators.iter().enumerate() {
        let (x, w) = bars.column(i, 0.15);
        let title = format!("operator {} {}: {} B live", o.index, o.name, o.live_bytes);
        c.rect(
            (x, y(o.live_bytes), w, y(0) - y(o.live_bytes)),
            HEAD,
            &title,
            r#" opacity="0.85""#,
        );
        if plan.peak_operator == Some(o.index) {
            c.outline((x, y(o.live_bytes), w, y(0) - y(o.live_bytes)), LEAKED, 2.5);
        }
        points.push((x + w / 2.0, y(o.live_bytes)));
    }
    c.polyline(&points, TAIL);
    if plan.head_bytes > 0 {
        let hy = y(plan.head_bytes);
        c.line((LEFT, hy), (LEFT + INNER, hy), LEAKED, true);
        c.text(
            (LEFT + INNER, hy - 4.0),
            11,
            "end",
            LEAKED,
            &format!("head: {} B", plan.head_bytes),
        );
    }
    operator_labels(&mut c, plan, ops, top + plot_h);
    Some(c.finish())
}
