//! The leak trend: free bytes after every release, lifecycle after lifecycle. Flat is healthy;
//! a staircase down is a leak, and its step is the bytes lost per lifecycle.

use plotters::prelude::*;

use memlife_audit::AuditReport;

use super::{ALARM, FONT, GOOD, USED, WIDTH, failed, k};
use crate::timeline::role;
use crate::{Result, delta};

/// Free bytes after each release phase.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    /// Free bytes after release 1, 2, ...
    pub free: Vec<u64>,
    /// Largest free block after each release.
    pub largest: Vec<u64>,
    /// Drop from the first to the last release (positive: lost).
    pub lost: i64,
}

impl Trend {
    /// Whether free memory fell between any two releases.
    pub fn leaking(&self) -> bool {
        self.free.windows(2).any(|w| w[1] < w[0])
    }
}

/// The trend, when any release phase ran.
pub fn trend(report: &AuditReport) -> Option<Trend> {
    let releases: Vec<_> = report
        .phases
        .iter()
        .filter(|p| role(report, p) == "release")
        .collect();
    if releases.is_empty() {
        return None;
    }
    let free: Vec<u64> = releases.iter().map(|p| p.after.free).collect();
    let largest = releases.iter().map(|p| p.after.largest_free).collect();
    // `releases` is not empty (checked above), so neither is `free`.
    let lost = match (free.first(), free.last()) {
        (Some(&first), Some(&last)) => super::delta(last, first),
        _ => 0,
    };
    Some(Trend {
        free,
        largest,
        lost,
    })
}

/// Draws the trend.
pub fn svg(tr: &Trend) -> Result<String> {
    let mut out = String::new();
    let n = tr.free.len();
    let max = tr.free.iter().copied().max().unwrap_or(0);
    let min = tr.free.iter().copied().min().unwrap_or(0);
    // Zoom on the values: a 368-byte step must show on a 96 KiB heap. At least 1 KiB tall.
    let span = (k(max) - k(min)).max(1.0);
    let (ylo, yhi) = ((k(min) - span * 0.6).max(0.0), k(max) + span * 0.6);
    let leaking = tr.leaking();
    let color = if leaking { ALARM } else { GOOD };
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, 320)).into_drawing_area();
        let fail = failed("leak trend");
        root.fill(&WHITE).map_err(&fail)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .margin_right(24)
            .x_label_area_size(40)
            .y_label_area_size(72)
            .build_cartesian_2d(0.5f64..(n as f64 + 0.5), ylo..yhi)
            .map_err(&fail)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(RGBColor(235, 235, 235))
            .x_labels(n.min(20))
            .x_label_formatter(&|v| {
                if (v - v.round()).abs() < 0.01 {
                    format!("{v:.0}")
                } else {
                    String::new()
                }
            })
            .x_desc("release (lifecycle)")
            .y_desc("free after release (KiB)")
            .axis_desc_style((FONT, 14))
            .label_style((FONT, 12))
            .y_label_formatter(&|v| format!("{v:.2}"))
            .draw()
            .map_err(&fail)?;
        // The staircase: hold each value until the next release.
        let mut stairs = Vec::with_capacity(2 * n);
        for (i, f) in tr.free.iter().enumerate() {
            let x = i as f64 + 1.0;
            if i > 0 {
                stairs.push((x, k(tr.free[i - 1])));
            }
            stairs.push((x, k(*f)));
        }
        chart
            .draw_series(LineSeries::new(stairs, color.stroke_width(2)))
            .map_err(&fail)?;
        chart
            .draw_series(
                tr.free
                    .iter()
                    .enumerate()
                    .map(|(i, f)| Circle::new((i as f64 + 1.0, k(*f)), 4, USED.filled())),
            )
            .map_err(&fail)?;
        let note = if n < 2 {
            "one release: run more lifecycles to see a trend".to_string()
        } else if leaking {
            format!(
                "{} over {} releases ({} per lifecycle on average)",
                delta(tr.lost.saturating_neg()),
                n,
                delta(tr.lost.saturating_neg() / (n as i64 - 1))
            )
        } else {
            format!("flat over {n} releases: no leak")
        };
        chart
            .draw_series(std::iter::once(Text::new(
                note,
                (0.6, yhi - (yhi - ylo) * 0.04),
                (FONT, 14).into_font().style(FontStyle::Bold).color(&color),
            )))
            .map_err(&fail)?;
        root.present().map_err(&fail)?;
    }
    Ok(out)
}
