//! The graph-build stair chart: resident memory after each operator's init, cumulative, one
//! step per operator, the largest step in red and named.

use plotters::prelude::*;

use memlife_audit::AuditReport;
use memlife_audit::model::PhaseRecord;

use super::{ALARM, FONT, USED, WIDTH, category_label, failed, k, role_color};
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
    let steps: Vec<Step> = p
        .spans
        .iter()
        .map(|s| Step {
            name: span_label(report, s),
            delta: s.delta,
            resident: super::delta(p.before.used, s.after_used),
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
    })
}

/// Draws the stairs.
pub fn svg(st: &Stairs) -> Result<String> {
    let mut out = String::new();
    let n = st.steps.len();
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
    let ymax = k(top.max(0) as u64) * 1.18 + 0.5;
    let ymin = -(k(bottom.unsigned_abs()) * 1.1);
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
            let c = if biggest { ALARM } else { build };
            // The step itself: from the previous level to this one.
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [
                        (x - 0.38, k(prev.max(0) as u64)),
                        (x + 0.38, k(s.resident.max(0) as u64)),
                    ],
                    c.filled(),
                )))
                .map_err(&fail)?;
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
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x - 0.38, 0.0), (x + 0.38, k(st.total.max(0) as u64))],
                USED.mix(0.8).filled(),
            )))
            .map_err(&fail)?;
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
