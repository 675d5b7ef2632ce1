//! The water-level curve: used heap over the whole run, phases as coloured bands, the peak
//! marked with its phase and operator, the baseline and the heap capacity as lines; and the
//! diff page's overlay of two runs' curves on the same frame.

use plotters::prelude::*;

use memlife_report::AuditReport;
use memlife_report::views::{Peak, Views};

use super::{ALARM, FONT, Frame, INK, USED, WIDTH, held, k, role_color};
use crate::{Result, kib};

/// At most this many points are drawn; more are decimated keeping extremes.
pub const MAX_POINTS: usize = 4000;

/// The water-level frame, shared by the audit page and the diff page's overlay: used heap in
/// KiB up from 0 to `ymax`, steps along 0..`xmax`.
fn water_level(name: &'static str, height: u32, xmax: f64, ymax: f64) -> Frame<'static> {
    Frame {
        x_label_area: 40,
        x_desc: Some("steps (allocator events and phase boundaries, in order)"),
        y_desc: "used heap (KiB)",
        ..Frame::new(name, height, 0f64..xmax, 0f64..ymax)
    }
}

/// `peak 10.5 KiB in inference_run / head_p5 (+3.0 KiB above entry)`.
pub fn peak_label(peak: &Peak) -> String {
    let function = peak.phase.split('#').next().unwrap_or(&peak.phase);
    let above = kib(peak.above_entry);
    // An allocation made by the phase function itself names that function again: say it
    // once.
    match peak.at.as_ref().filter(|at| at.as_str() != function) {
        Some(at) => format!(
            "peak {} in {function} / {at} (+{above} above entry)",
            kib(peak.used)
        ),
        None => format!(
            "peak {} in {function} (+{above} above entry)",
            kib(peak.used)
        ),
    }
}

/// Draws the curve of `report` from its views.
pub fn svg(report: &AuditReport, views: &Views<'_>) -> Result<String> {
    let t = &views.timeline;
    let capacity = report.run.heap_size.max(t.highest());
    let baseline = report.phases.first().map(|p| p.before.used);
    let points = t.decimated(MAX_POINTS);
    let xmax = t.end.max(1) as f64 + 1.0;
    let ymax = k(capacity) * 1.12 + 0.5;
    let frame = water_level("water-level", 420, xmax, ymax);
    super::draw(&frame, |plot| {
        // Phase bands, labelled when wide enough to hold their name.
        let px_per_step = (WIDTH as f64 - 100.0) / xmax;
        for s in &t.phases {
            let c = role_color(&s.role);
            plot.draw(Rectangle::new(
                [(s.x0 as f64, 0.0), (s.x1 as f64 + 0.999, ymax)],
                c.mix(0.18).filled(),
            ))?;
            let width_px = (s.x1 - s.x0 + 1) as f64 * px_per_step;
            if width_px >= 8.0 * s.role.len() as f64 + 6.0 {
                plot.draw(Text::new(
                    s.role.clone(),
                    (
                        s.x0 as f64 + 0.5 / px_per_step.max(1e-9) * 4.0,
                        ymax * 0.985,
                    ),
                    (FONT, 13).into_font().color(&c.mix(1.0)),
                ))?;
            }
        }
        // Capacity and baseline.
        let heap = k(report.run.heap_size);
        plot.series(LineSeries::new(
            [(0.0, heap), (xmax, heap)],
            ALARM.stroke_width(2),
        ))?;
        plot.draw(Text::new(
            format!("heap capacity {}", kib(report.run.heap_size)),
            (xmax * 0.005, heap + ymax * 0.045),
            (FONT, 12).into_font().color(&ALARM),
        ))?;
        if let Some(b) = baseline {
            plot.series(LineSeries::new(
                [(0.0, k(b)), (xmax, k(b))],
                INK.mix(0.6).stroke_width(1),
            ))?;
            plot.draw(Text::new(
                format!("baseline {}", kib(b)),
                (xmax * 0.78, k(b) + ymax * 0.045),
                (FONT, 12).into_font().color(&INK),
            ))?;
        }
        // The curve: a step function (the value holds until the next event).
        let mut stepped = held(points.iter().map(|&(x, u)| (x as f64, k(u))));
        if let Some(last) = stepped.last().copied() {
            stepped.push((last.0 + 1.0, last.1));
        }
        plot.series(
            AreaSeries::new(stepped.iter().copied(), 0.0, USED.mix(0.25))
                .border_style(USED.stroke_width(2)),
        )?;
        if let Some(p) = &views.peak {
            let (x, y) = (p.step as f64, k(p.used));
            plot.draw(Circle::new((x, y), 5, ALARM.filled()))?;
            let label = peak_label(p);
            // Keep the label inside the plot: right of the marker, or left near the end.
            let est = label.len() as f64 * 7.0 / px_per_step;
            let lx = if x + est > xmax * 0.98 {
                (x - est).max(0.0)
            } else {
                x + 8.0 / px_per_step
            };
            plot.draw(Text::new(
                label,
                (lx, y + ymax * 0.035),
                (FONT, 14).into_font().style(FontStyle::Bold).color(&ALARM),
            ))?;
        }
        Ok(())
    })
}

/// One run's water level on the overlay: used bytes per step, its colour, its line width.
pub type Overlaid<'a> = (&'a [u64], RGBColor, u32);

/// Draws several runs' water levels on one frame, step by step from 0, with the largest heap
/// capacity as a line: the diff page's overlay.
pub fn overlay_svg(curves: &[Overlaid<'_>], capacity: u64) -> Result<String> {
    let top = curves
        .iter()
        .flat_map(|c| c.0.iter().copied())
        .max()
        .unwrap_or(0)
        .max(capacity);
    let xmax = curves.iter().map(|c| c.0.len()).max().unwrap_or(0).max(1) as f64;
    let ymax = k(top) * 1.1 + 0.5;
    let frame = water_level("water-level overlay", 400, xmax, ymax);
    super::draw(&frame, |plot| {
        plot.series(LineSeries::new(
            [(0.0, k(capacity)), (xmax, k(capacity))],
            ALARM.stroke_width(1),
        ))?;
        for &(levels, colour, width) in curves {
            let stepped = held(levels.iter().enumerate().map(|(i, &u)| (i as f64, k(u))));
            plot.series(LineSeries::new(stepped, colour.stroke_width(width)))?;
        }
        Ok(())
    })
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
            peak_label(&peak(Some("nn_open"))),
            "peak 2.0 KiB in nn_open (+1.0 KiB above entry)"
        );
        assert_eq!(
            peak_label(&peak(Some("dense"))),
            "peak 2.0 KiB in nn_open / dense (+1.0 KiB above entry)"
        );
        assert_eq!(
            peak_label(&peak(None)),
            "peak 2.0 KiB in nn_open (+1.0 KiB above entry)"
        );
    }
}
