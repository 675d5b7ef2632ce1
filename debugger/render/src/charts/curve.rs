//! The water-level curve: used heap over the whole run, phases as coloured bands, the peak
//! marked with its phase and operator, the baseline and the heap capacity as lines.

use plotters::prelude::*;

use memlife_audit::AuditReport;

use super::{ALARM, FONT, INK, USED, WIDTH, failed, k, role_color};
use crate::timeline::{Timeline, label_for};
use crate::{Result, kib};

/// The water-level chart's frame, shared by the audit page and the diff page's overlay: a white
/// background, used heap in KiB up from 0 to `ymax`, steps along 0..`xmax`, a light y grid.
pub(crate) fn water_level_axes<'a, DB: DrawingBackend + 'a>(
    root: &'a DrawingArea<DB, plotters::coord::Shift>,
    xmax: f64,
    ymax: f64,
    chart_name: &'static str,
) -> Result<
    ChartContext<
        'a,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
> {
    let fail = failed(chart_name);
    root.fill(&WHITE).map_err(&fail)?;
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .margin_right(24)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)
        .map_err(&fail)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(RGBColor(235, 235, 235))
        .y_desc("used heap (KiB)")
        .x_desc("steps (allocator events and phase boundaries, in order)")
        .axis_desc_style((FONT, 14))
        .label_style((FONT, 12))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(&fail)?;
    Ok(chart)
}

/// At most this many points are drawn; more are decimated keeping extremes.
pub const MAX_POINTS: usize = 4000;

/// Where the run's highest used value was reached.
#[derive(Debug, Clone, PartialEq)]
pub struct Peak {
    /// Used bytes.
    pub used: u64,
    /// Step on the time axis.
    pub step: u64,
    /// The phase call (`inference_run#1`).
    pub phase: String,
    /// The phase's role.
    pub role: String,
    /// The operator or layer running, as labelled (`head_p5`), or the allocation site.
    pub at: Option<String>,
    /// Used bytes above the phase's entry.
    pub above_entry: u64,
}

impl Peak {
    /// `peak 10.5 KiB in inference_run / head_p5`.
    pub fn label(&self) -> String {
        let function = self.phase.split('#').next().unwrap_or(&self.phase);
        let above = kib(self.above_entry);
        // An allocation made by the phase function itself names that function again: say it
        // once.
        match self.at.as_ref().filter(|at| at.as_str() != function) {
            Some(at) => format!(
                "peak {} in {function} / {at} (+{above} above entry)",
                kib(self.used)
            ),
            None => format!(
                "peak {} in {function} (+{above} above entry)",
                kib(self.used)
            ),
        }
    }
}

/// The highest used value of the run: the phase with the highest peak (the first of equals),
/// where inside it the peak was reached.
pub fn peak(report: &AuditReport, t: &Timeline<'_>) -> Option<Peak> {
    let slot =
        t.phases.iter().fold(
            None,
            |best: Option<&crate::timeline::PhaseSlot<'_>>, s| match best {
                Some(b) if b.record.peak_used >= s.record.peak_used => Some(b),
                _ => Some(s),
            },
        )?;
    let p = slot.record;
    let at = p.peak_at.as_ref();
    let step = at
        .and_then(|a| a.seq)
        .and_then(|seq| t.step_of(seq))
        .or_else(|| {
            // Sampled: the highest point inside the phase.
            t.points
                .iter()
                .filter(|(x, _)| (slot.x0..=slot.x1).contains(x))
                .max_by_key(|(_, u)| *u)
                .map(|(x, _)| *x)
        })
        .unwrap_or(slot.x0);
    let what = at.and_then(|a| match (&a.span, a.span_arg1) {
        _ if a.span_label.is_some() => a.span_label.clone(),
        (Some(span), Some(arg)) => {
            let function = span.split('#').next().unwrap_or(span);
            Some(label_for(report, function, arg))
        }
        _ => a.site.as_ref().and_then(|s| s.function.clone()),
    });
    Some(Peak {
        used: p.peak_used,
        step,
        phase: format!("{}#{}", p.function, p.call),
        role: slot.role.clone(),
        at: what,
        above_entry: p.peak_above_before,
    })
}

/// Draws the curve.
pub fn svg(report: &AuditReport, t: &Timeline<'_>) -> Result<String> {
    let mut out = String::new();
    let capacity = report
        .run
        .heap_size
        .max(t.points.iter().map(|p| p.1).max().unwrap_or(0));
    let baseline = report.phases.first().map(|p| p.before.used);
    let pk = peak(report, t);
    let points = t.decimated(MAX_POINTS);
    let xmax = t.end.max(1) as f64 + 1.0;
    let ymax = k(capacity) * 1.12 + 0.5;
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, 420)).into_drawing_area();
        let fail = failed("water-level");
        let mut chart = water_level_axes(&root, xmax, ymax, "water-level")?;
        // Phase bands, labelled when wide enough to hold their name.
        let px_per_step = (WIDTH as f64 - 100.0) / xmax;
        for s in &t.phases {
            let c = role_color(&s.role);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(s.x0 as f64, 0.0), (s.x1 as f64 + 0.999, ymax)],
                    c.mix(0.18).filled(),
                )))
                .map_err(&fail)?;
            let width_px = (s.x1 - s.x0 + 1) as f64 * px_per_step;
            if width_px >= 8.0 * s.role.len() as f64 + 6.0 {
                chart
                    .draw_series(std::iter::once(Text::new(
                        s.role.clone(),
                        (
                            s.x0 as f64 + 0.5 / px_per_step.max(1e-9) * 4.0,
                            ymax * 0.985,
                        ),
                        (FONT, 13).into_font().color(&c.mix(1.0)),
                    )))
                    .map_err(&fail)?;
            }
        }
        // Capacity and baseline.
        chart
            .draw_series(LineSeries::new(
                [
                    (0.0, k(report.run.heap_size)),
                    (xmax, k(report.run.heap_size)),
                ],
                ALARM.stroke_width(2),
            ))
            .map_err(&fail)?;
        chart
            .draw_series(std::iter::once(Text::new(
                format!("heap capacity {}", kib(report.run.heap_size)),
                (xmax * 0.005, k(report.run.heap_size) + ymax * 0.045),
                (FONT, 12).into_font().color(&ALARM),
            )))
            .map_err(&fail)?;
        if let Some(b) = baseline {
            chart
                .draw_series(LineSeries::new(
                    [(0.0, k(b)), (xmax, k(b))],
                    INK.mix(0.6).stroke_width(1),
                ))
                .map_err(&fail)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("baseline {}", kib(b)),
                    (xmax * 0.78, k(b) + ymax * 0.045),
                    (FONT, 12).into_font().color(&INK),
                )))
                .map_err(&fail)?;
        }
        // The curve: a step function (the value holds until the next event).
        let mut stepped = Vec::with_capacity(points.len() * 2);
        for (i, (x, u)) in points.iter().enumerate() {
            if i > 0 {
                stepped.push((*x as f64, stepped.last().map_or(0.0, |p: &(f64, f64)| p.1)));
            }
            stepped.push((*x as f64, k(*u)));
        }
        if let Some(last) = stepped.last().copied() {
            stepped.push((last.0 + 1.0, last.1));
        }
        chart
            .draw_series(
                AreaSeries::new(stepped.iter().copied(), 0.0, USED.mix(0.25))
                    .border_style(USED.stroke_width(2)),
            )
            .map_err(&fail)?;
        if let Some(p) = &pk {
            let (x, y) = (p.step as f64, k(p.used));
            chart
                .draw_series(std::iter::once(Circle::new((x, y), 5, ALARM.filled())))
                .map_err(&fail)?;
            let label = p.label();
            // Keep the label inside the plot: right of the marker, or left near the end.
            let est = label.len() as f64 * 7.0 / px_per_step;
            let lx = if x + est > xmax * 0.98 {
                (x - est).max(0.0)
            } else {
                x + 8.0 / px_per_step
            };
            chart
                .draw_series(std::iter::once(Text::new(
                    label,
                    (lx, y + ymax * 0.035),
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

    fn peak(at: Option<&str>) -> Peak {
        Peak {
            used: 2048,
            step: 3,
            phase: "nn_open#1".into(),
            role: "load".into(),
            at: at.map(str::to_string),
            above_entry: 1024,
        }
    }

    #[test]
    fn the_peak_label_names_the_phase_function_once() {
        assert_eq!(
            peak(Some("nn_open")).label(),
            "peak 2.0 KiB in nn_open (+1.0 KiB above entry)"
        );
        assert_eq!(
            peak(Some("dense")).label(),
            "peak 2.0 KiB in nn_open / dense (+1.0 KiB above entry)"
        );
        assert_eq!(
            peak(None).label(),
            "peak 2.0 KiB in nn_open (+1.0 KiB above entry)"
        );
    }
}
