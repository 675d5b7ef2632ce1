//! The graph-build stair chart: resident memory after each operator's init, cumulative, one
//! step per operator, the largest step outlined in red and named. When the build was traced,
//! each step is split by component (see [`crate::palette`]): the blocks allocated since the
//! previous step and still live at its end, largest first from the bottom; what the trace
//! cannot account for stays in the build's colour.

use plotters::prelude::*;

use memlife_audit::AuditReport;
use memlife_audit::composition::{component_of, live_blocks};
use memlife_audit::model::PhaseRecord;

use super::{ALARM, FONT, USED, WIDTH, category_label, failed, k, role_color};
use crate::palette::{Palette, rgb};
use crate::timeline::{role, span_label};
use crate::{Result, delta, kib};

/// One operator's step.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Operator (label or `op_init(3)`).
    pub name: String,
    /// Bytes its init kept.
    pub delta: i64,
    /// Resident bytes of the build after it (relative to the build's entry).
    pub resident: i64,
    /// What it kept by component (`[components]` name or allocation site), largest first:
    /// the blocks allocated since the previous step ended and live at its end (empty when
    /// the build was not traced).
    pub parts: Vec<(String, u64)>,
}

/// The stairs of the first build phase with spans.
#[derive(Debug, Clone, PartialEq)]
pub struct Stairs {
    /// The phase call (`graph_build#1`).
    pub phase: String,
    /// Steps in order.
    pub steps: Vec<Step>,
    /// Index of the largest step.
    pub largest: usize,
    /// The build's whole delta (operators plus what the build allocates around them).
    pub total: i64,
    /// What the whole build kept by component, largest first (empty when not traced).
    pub total_parts: Vec<(String, u64)>,
}

/// The first phase of role `role_name` that has spans.
pub(crate) fn first_with_spans<'a>(
    report: &'a AuditReport,
    role_name: &str,
) -> Option<&'a PhaseRecord> {
    report
        .phases
        .iter()
        .find(|p| role(report, p) == role_name && !p.spans.is_empty())
}

/// The stairs, when a build phase recorded spans.
pub fn stairs(report: &AuditReport) -> Option<Stairs> {
    let p = first_with_spans(report, "build")?;
    let mut from = p.seq_begin;
    let steps: Vec<Step> = p
        .spans
        .iter()
        .map(|s| {
            let parts = kept_between(report, from, s.seq_end);
            from = s.seq_end;
            Step {
                name: span_label(report, s),
                delta: s.delta,
                resident: super::delta(p.before.used, s.after_used),
                parts,
            }
        })
        .collect();
    let largest =
        steps.iter().enumerate().fold(
            0,
            |best, (i, s)| if s.delta > steps[best].delta { i } else { best },
        );
    Some(Stairs {
        phase: format!("{}#{}", p.function, p.call),
        steps,
        largest,
        total: p.delta_used,
        total_parts: kept_between(report, p.seq_begin, p.seq_end),
    })
}

/// The blocks events `from..to` allocated and left live at `to`, by component, largest first.
fn kept_between(report: &AuditReport, from: u64, to: u64) -> Vec<(String, u64)> {
    if to <= from {
        return Vec::new();
    }
    let mut parts: Vec<(String, u64)> = Vec::new();
    for e in live_blocks(&report.events, from, to - 1) {
        let name = component_of(&e.site, &report.components);
        match parts.iter_mut().find(|(n, _)| *n == name) {
            Some(p) => p.1 += e.size,
            None => parts.push((name, e.size)),
        }
    }
    parts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    parts
}

/// The coloured pieces of a step from `prev` to `resident` (bytes above the build's entry):
/// its parts stacked from `prev` up, cut at `resident` (the step may also have freed older
/// blocks), then the rest of the step in `None` (the build's own colour).
pub fn pieces(step: &Step, prev: i64) -> Vec<(Option<&str>, i64, i64)> {
    let top = step.resident.max(0);
    let mut y = prev.max(0);
    let mut out = Vec::new();
    for (name, bytes) in &step.parts {
        let next = y
            .saturating_add(i64::try_from(*bytes).unwrap_or(i64::MAX))
            .min(top);
        if next > y {
            out.push((Some(name.as_str()), y, next));
            y = next;
        }
    }
    if top > y {
        out.push((None, y, top));
    } else if top < prev.max(0) {
        // A step down: nothing kept, drawn as before in the build's colour.
        out.push((None, top, prev.max(0)));
    }
    out
}

/// Draws the stairs, steps coloured by component from `palette`.
pub fn svg(st: &Stairs, palette: &mut Palette) -> Result<String> {
    svg_in(st, palette, y_range(st))
}

/// The y range (KiB, lowest and highest) that holds the stairs and their labels.
pub fn y_range(st: &Stairs) -> (f64, f64) {
    let top = st
        .steps
        .iter()
        .map(|s| s.resident)
        .chain([st.total, 0])
        .max()
        .unwrap_or(0);
    let bottom = st
        .steps
        .iter()
        .map(|s| s.resident)
        .chain([0])
        .min()
        .unwrap_or(0);
    (
        -(k(bottom.unsigned_abs()) * 1.1),
        k(top.max(0) as u64) * 1.18 + 0.5,
    )
}

/// Draws the stairs on the y range `(ymin, ymax)` in KiB (charts shown side by side share one,
/// so equal steps look equal).
pub fn svg_in(st: &Stairs, palette: &mut Palette, (ymin, ymax): (f64, f64)) -> Result<String> {
    let mut out = String::new();
    let n = st.steps.len();
    let names: Vec<String> = st
        .steps
        .iter()
        .map(|s| s.name.clone())
        .chain(["whole build".to_string()])
        .collect();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, 400)).into_drawing_area();
        let fail = failed("build stairs");
        root.fill(&WHITE).map_err(&fail)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .margin_right(24)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5f64..(n as f64 + 0.5), ymin..ymax)
            .map_err(&fail)?;
        let label_of = |v: &f64| category_label(&names, *v);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(RGBColor(235, 235, 235))
            .x_labels(n + 1)
            .x_label_formatter(&label_of)
            .y_desc("resident build memory (KiB)")
            .axis_desc_style((FONT, 14))
            .label_style((FONT, 12))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(&fail)?;
        let build = role_color("build");
        let mut prev = 0i64;
        for (i, s) in st.steps.iter().enumerate() {
            let x = i as f64;
            let biggest = i == st.largest && s.delta > 0;
            // The step itself, from the previous level to this one, by component.
            for (name, lo, hi) in pieces(s, prev) {
                let c = match name {
                    Some(n) => rgb(palette.colour(n)),
                    None if biggest && s.parts.is_empty() => ALARM,
                    None => build,
                };
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.38, k(lo as u64)), (x + 0.38, k(hi as u64))],
                        c.filled(),
                    )))
                    .map_err(&fail)?;
            }
            if biggest {
                // The largest step outlined in red, whatever its components' colours.
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [
                            (x - 0.40, k(prev.max(0) as u64)),
                            (x + 0.40, k(s.resident.max(0) as u64)),
                        ],
                        ALARM.stroke_width(3),
                    )))
                    .map_err(&fail)?;
            }
            // What was already resident, faint, so the stairs read as a staircase.
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.38, 0.0), (x + 0.38, k(prev.max(0) as u64))],
                    build.mix(0.22).filled(),
                )))
                .map_err(&fail)?;
            prev = s.resident;
        }
        // The whole build, with what it allocates around the operators (arena, tables).
        let x = n as f64;
        let whole = Step {
            name: String::new(),
            delta: st.total,
            resident: st.total,
            parts: st.total_parts.clone(),
        };
        for (name, lo, hi) in pieces(&whole, 0) {
            let c = name.map_or(USED.mix(0.8), |n| rgb(palette.colour(n)).mix(1.0));
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.38, k(lo as u64)), (x + 0.38, k(hi as u64))],
                    c.filled(),
                )))
                .map_err(&fail)?;
        }
        chart
            .draw_series(std::iter::once(Text::new(
                kib(st.total.max(0) as u64),
                (x - 0.45, k(st.total.max(0) as u64) + ymax * 0.06),
                (FONT, 12).into_font().color(&USED),
            )))
            .map_err(&fail)?;
        if let Some(s) = st.steps.get(st.largest).filter(|s| s.delta > 0) {
            let x = st.largest as f64;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("largest step: {} {}", s.name, delta(s.delta)),
                    (x - 0.4, k(s.resident.max(0) as u64) + ymax * 0.075),
                    (FONT, 14).into_font().style(FontStyle::Bold).color(&ALARM),
                )))
                .map_err(&fail)?;
        }
        root.present().map_err(&fail)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(resident: i64, parts: &[(&str, u64)]) -> Step {
        Step {
            name: "op".into(),
            delta: 0,
            resident,
            parts: parts.iter().map(|(n, b)| (n.to_string(), *b)).collect(),
        }
    }

    #[test]
    fn a_step_is_its_components_stacked_from_the_level_before() {
        // 264 B kept: a 136-byte context and a 128-byte table, exactly the step.
        let s = step(1264, &[("operator contexts", 136), ("requant lut", 128)]);
        assert_eq!(
            pieces(&s, 1000),
            vec![
                (Some("operator contexts"), 1000, 1136),
                (Some("requant lut"), 1136, 1264)
            ]
        );
        // The trace accounts for less than the walk: the rest in the build's colour.
        let s = step(1300, &[("operator contexts", 136)]);
        assert_eq!(
            pieces(&s, 1000),
            vec![(Some("operator contexts"), 1000, 1136), (None, 1136, 1300)]
        );
        // The step also freed older blocks: its parts are cut at the level it reached.
        let s = step(1100, &[("arena", 300)]);
        assert_eq!(pieces(&s, 1000), vec![(Some("arena"), 1000, 1100)]);
        // A step down keeps nothing.
        let s = step(900, &[]);
        assert_eq!(pieces(&s, 1000), vec![(None, 900, 1000)]);
        // Untraced: the whole step in the build's colour.
        assert_eq!(pieces(&step(1200, &[]), 1000), vec![(None, 1000, 1200)]);
    }
}
