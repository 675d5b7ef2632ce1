//! A small hand-drawn SVG canvas for the arena charts: rectangles that carry a `<title>` (a
//! tensor's name, offset, size and lifetime on hover), lines and escaped text. Drawn by hand
//! like the heap map, because plotters cannot give an element a title.

use std::fmt::Write;

use crate::escape::text;

/// An SVG being drawn, `width` by `height` pixels.
pub struct Canvas {
    out: String,
}

impl Canvas {
    /// A canvas with a white background; `class` and `label` name the chart for the page's
    /// readers (and its tests).
    pub fn new(class: &str, label: &str, width: f64, height: f64) -> Self {
        let mut out = String::new();
        let _ = write!(
            out,
            r##"<svg xmlns="http://www.w3.org/2000/svg" class="{}" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" role="img" aria-label="{}"><rect width="{width}" height="{height}" fill="#fff"/>"##,
            text(class),
            text(label)
        );
        Canvas { out }
    }

    /// A filled rectangle with a hover title and optional extra attributes (already escaped).
    pub fn rect(
        &mut self,
        (x, y, w, h): (f64, f64, f64, f64),
        fill: &str,
        title: &str,
        extra: &str,
    ) {
        let _ = write!(
            self.out,
            r##"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}" stroke="#ffffff" stroke-width="0.5"{extra}><title>{}</title></rect>"##,
            w.max(1.0),
            h.max(1.0),
            text(fill),
            text(title)
        );
    }

    /// A rectangle's outline.
    pub fn outline(&mut self, (x, y, w, h): (f64, f64, f64, f64), stroke: &str, width: f64) {
        let _ = write!(
            self.out,
            r##"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="{}" stroke-width="{width}"/>"##,
            w.max(1.0),
            h.max(1.0),
            text(stroke)
        );
    }

    /// A line.
    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), stroke: &str, dash: bool) {
        let dash = if dash {
            r#" stroke-dasharray="4 3""#
        } else {
            ""
        };
        let _ = write!(
            self.out,
            r##"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{}" stroke-width="1"{dash}/>"##,
            text(stroke)
        );
    }

    /// A polyline through `points`.
    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str) {
        let pts: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = write!(
            self.out,
            r##"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>"##,
            pts.join(" "),
            text(stroke)
        );
    }

    /// Text at `(x, y)`, anchored `start`, `middle` or `end`.
    pub fn text(&mut self, (x, y): (f64, f64), size: u32, anchor: &str, fill: &str, words: &str) {
        let _ = write!(
            self.out,
            r##"<text x="{x:.1}" y="{y:.1}" font-size="{size}" text-anchor="{anchor}" fill="{}">{}</text>"##,
            text(fill),
            text(words)
        );
    }

    /// Text turned to read upwards (an operator's name under a narrow column).
    pub fn text_up(&mut self, (x, y): (f64, f64), size: u32, words: &str) {
        let _ = write!(
            self.out,
            r##"<text x="{x:.1}" y="{y:.1}" font-size="{size}" text-anchor="end" fill="#333" transform="rotate(-40 {x:.1} {y:.1})">{}</text>"##,
            text(words)
        );
    }

    /// The finished SVG.
    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>");
        self.out
    }
}
