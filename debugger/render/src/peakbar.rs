//! Peak composition as stacked bars: one horizontal bar per phase call whose peak the trace
//! broke down (`composition` in the JSON), one segment per component (or allocation site when
//! `[components]` maps nothing), largest first, all bars on one byte scale so they compare.
//!
//! Drawn by hand, like the heap map: every segment carries `data-phase`, `data-component` and
//! `data-bytes` (so a test or a script reads the figures back from the page) and a `<title>`,
//! which plotters cannot attach.

use std::fmt::Write;

use memlife_report::AuditReport;
use memlife_report::model::Part;

use crate::escape::text;
use crate::kib;
use crate::palette::Palette;

const WIDTH: f64 = 960.0;
/// Room for the phase's name left of its bar.
const LABEL_W: f64 = 170.0;
/// Room for the total right of the longest bar.
const TOTAL_W: f64 = 110.0;
const TOP: f64 = 8.0;
const ROW_H: f64 = 24.0;
const GAP: f64 = 8.0;
/// A segment narrower than this gets no size written on it.
const LABEL_MIN_W: f64 = 64.0;

/// One phase call's peak.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar<'a> {
    /// The call (`model_load#1`).
    pub phase: String,
    /// Its role (`load`).
    pub role: String,
    /// Its parts, largest first.
    pub parts: &'a [Part],
    /// The peak above the phase's entry, as the walk measured it.
    pub peak_above: u64,
}

impl Bar<'_> {
    /// The bytes of its parts.
    pub fn total(&self) -> u64 {
        self.parts.iter().map(|p| p.bytes).sum()
    }
}

/// Where one segment is drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Component or site.
    pub name: String,
    /// Its bytes.
    pub bytes: u64,
    /// Left edge (pixels).
    pub x: f64,
    /// Width (pixels).
    pub w: f64,
    /// Fill.
    pub colour: &'static str,
}

/// The bars of every phase call with a composition, in run order.
pub fn bars(report: &AuditReport) -> Vec<Bar<'_>> {
    report
        .phases
        .iter()
        .filter(|p| !p.composition.is_empty())
        .map(|p| Bar {
            phase: p.name(),
            role: report.role_of(p).to_string(),
            parts: &p.composition,
            peak_above: p.peak_above_before,
        })
        .collect()
}

/// The segments of each bar: left to right in the parts' order (largest first), each as wide
/// as its bytes on the scale of the largest bar, which fills the room between the names and
/// the totals.
pub fn layout(bars: &[Bar<'_>], palette: &mut Palette) -> Vec<Vec<Segment>> {
    let widest = bars.iter().map(Bar::total).max().unwrap_or(0).max(1);
    let scale = (WIDTH - LABEL_W - TOTAL_W) / widest as f64;
    bars.iter()
        .map(|b| {
            let mut x = LABEL_W;
            b.parts
                .iter()
                .map(|p| {
                    let w = p.bytes as f64 * scale;
                    let s = Segment {
                        name: p.name.clone(),
                        bytes: p.bytes,
                        x,
                        w,
                        colour: palette.colour(&p.name),
                    };
                    x += w;
                    s
                })
                .collect()
        })
        .collect()
}

/// The SVG of the bars (empty when no phase has a composition).
pub fn svg(bars: &[Bar<'_>], palette: &mut Palette) -> String {
    if bars.is_empty() {
        return String::new();
    }
    let rows = layout(bars, palette);
    let height = TOP + bars.len() as f64 * (ROW_H + GAP) + 4.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="peakbars" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" shape-rendering="crispEdges" role="img" aria-label="peak composition">"#
    );
    for (i, (bar, segs)) in bars.iter().zip(&rows).enumerate() {
        let y = TOP + i as f64 * (ROW_H + GAP);
        let mid = y + ROW_H / 2.0 + 4.0;
        let _ = write!(
            s,
            r##"<g class="peakbar" data-phase="{}" data-role="{}" data-total="{}"><text x="{}" y="{mid}" font-size="13" fill="#222" text-anchor="end">{}</text>"##,
            text(&bar.phase),
            text(&bar.role),
            bar.total(),
            LABEL_W - 8.0,
            text(&bar.phase)
        );
        for (seg, part) in segs.iter().zip(bar.parts) {
            let _ = write!(
                s,
                r##"<rect class="segment" data-phase="{}" data-component="{}" data-bytes="{}" x="{:.2}" y="{y}" width="{:.2}" height="{ROW_H}" fill="{}" stroke="#ffffff" stroke-width="1"><title>{}: {} B ({} block(s), {} B requested)</title></rect>"##,
                text(&bar.phase),
                text(&seg.name),
                seg.bytes,
                seg.x,
                seg.w,
                seg.colour,
                text(&seg.name),
                seg.bytes,
                part.blocks,
                part.requested
            );
            if seg.w >= LABEL_MIN_W {
                let _ = write!(
                    s,
                    r##"<text x="{:.2}" y="{mid}" font-size="11" fill="{}" text-anchor="middle" pointer-events="none">{}</text>"##,
                    seg.x + seg.w / 2.0,
                    ink_on(seg.colour),
                    kib(seg.bytes)
                );
            }
        }
        let end = segs.last().map_or(LABEL_W, |g| g.x + g.w);
        let _ = write!(
            s,
            r##"<text x="{:.2}" y="{mid}" font-size="12" fill="#222">{} B</text></g>"##,
            end + 6.0,
            bar.total()
        );
    }
    s.push_str("</svg>");
    s
}

/// Black or white text, whichever reads on `fill` (`#rrggbb`).
fn ink_on(fill: &str) -> &'static str {
    let c = crate::palette::rgb(fill);
    // Perceived brightness, the usual weights.
    let lum = 0.299 * f64::from(c.0) + 0.587 * f64::from(c.1) + 0.114 * f64::from(c.2);
    if lum > 140.0 { "#111111" } else { "#ffffff" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(name: &str, bytes: u64) -> Part {
        Part {
            name: name.into(),
            bytes,
            requested: bytes - 8,
            blocks: 1,
        }
    }

    #[test]
    fn segments_are_contiguous_largest_first_and_to_one_scale() {
        let load = [
            part("inflate buffer", 31256),
            part("weights", 31096),
            part("file buffer", 16032),
        ];
        let build = [part("tensor arena", 24584), part("operator contexts", 368)];
        let bars = [
            Bar {
                phase: "model_load#1".into(),
                role: "load".into(),
                parts: &load,
                peak_above: 78384,
            },
            Bar {
                phase: "graph_build#1".into(),
                role: "build".into(),
                parts: &build,
                peak_above: 24952,
            },
        ];
        let rows = layout(&bars, &mut Palette::new());
        let room = WIDTH - LABEL_W - TOTAL_W;
        // The largest bar fills the room, segment after segment with no gap.
        let load_row = &rows[0];
        assert_eq!(load_row[0].x, LABEL_W);
        for w in load_row.windows(2) {
            assert!((w[0].x + w[0].w - w[1].x).abs() < 1e-9, "{w:?}");
        }
        let end = load_row.last().map(|s| s.x + s.w).unwrap_or_default();
        assert!((end - (LABEL_W + room)).abs() < 1e-9, "{end}");
        // Each width is its bytes on the common scale.
        for s in load_row.iter().chain(&rows[1]) {
            assert!(
                (s.w - s.bytes as f64 * room / 78384.0).abs() < 1e-9,
                "{s:?}"
            );
        }
        let names: Vec<&str> = load_row.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["inflate buffer", "weights", "file buffer"]);
        // Named kinds take their colours; the others differ from one another.
        assert_eq!(
            rows[1][0].colour,
            crate::palette::kind_colour(crate::palette::Kind::Pool)
        );
        assert_eq!(
            rows[1][1].colour,
            crate::palette::kind_colour(crate::palette::Kind::Context)
        );
        assert_ne!(load_row[0].colour, load_row[1].colour);
        assert_ne!(load_row[1].colour, load_row[2].colour);
    }

    #[test]
    fn each_segment_carries_its_component_and_bytes() {
        let parts = [part("weights <w>", 31096), part("file buffer", 16032)];
        let bars = [Bar {
            phase: "model_load#2".into(),
            role: "load".into(),
            parts: &parts,
            peak_above: 47128,
        }];
        let svg = svg(&bars, &mut Palette::new());
        assert!(svg.contains(
            r#"class="segment" data-phase="model_load#2" data-component="weights &lt;w&gt;" data-bytes="31096""#
        ));
        assert!(svg.contains(r#"data-component="file buffer" data-bytes="16032""#));
        assert!(svg.contains(">47128 B</text>"));
        assert!(svg.contains("30.4 KiB"), "the wide segment is labelled");
        assert!(super::svg(&[], &mut Palette::new()).is_empty());
    }
}
