//! The leak trend: free bytes after every release, lifecycle after lifecycle. Flat is healthy;
//! a staircase down is a leak, and its step is the bytes lost per lifecycle. Over a long run the
//! folded cycles (`memlife_audit::history`) join in from their series: each bucket of cycles
//! by its highest free value at its first cycle and its lowest at its last.

use plotters::prelude::*;

use memlife_audit::AuditReport;

use super::{ALARM, FONT, GOOD, USED, WIDTH, failed, k};
use crate::timeline::role;
use crate::{Result, delta};

/// Free bytes after each release phase.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    /// Free bytes after each kept release, in order.
    pub free: Vec<u64>,
    /// Where each value is drawn: the release's cycle (its number among the releases when
    /// cycles were not observed), folded cycles included, in order.
    pub at: Vec<(f64, u64)>,
    /// Largest free block after each release.
    pub largest: Vec<u64>,
    /// Drop from the first to the last release (positive: lost).
    pub lost: i64,
}

impl Trend {
    /// Whether free memory fell between any two releases.
    pub fn leaking(&self) -> bool {
        self.at.windows(2).any(|w| w[1].1 < w[0].1)
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
    let mut at: Vec<(f64, u64)> = releases
        .iter()
        .enumerate()
        .map(|(i, p)| (p.cycle.unwrap_or(i as u64 + 1) as f64, p.after.free))
        .collect();
    if let Some(f) = &report.folded {
        for b in &f.series {
            at.push((b.first as f64, b.end_free_max));
            if b.last > b.first || b.end_free_min != b.end_free_max {
                at.push((b.last as f64, b.end_free_min));
            }
        }
        at.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    // `releases` is not empty (checked above), so neither is `free`.
    let lost = match (free.first(), free.last()) {
        (Some(&first), Some(&last)) => super::delta(last, first),
        _ => 0,
    };
    Some(Trend {
        free,
        at,
        largest,
        lost,
    })
}

/// Draws the trend.
pub fn svg(tr: &Trend) -> Result<String> {
    let mut out = String::new();
    // Releases drawn: kept and folded; the axis runs to the last one's cycle.
    let n = tr.at.len();
    let xmax = tr.at.last().map_or(1.0, |p| p.0);
    let max = tr.at.iter().map(|p| p.1).max().unwrap_or(0);
    let min = tr.at.iter().map(|p| p.1).min().unwrap_or(0);
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
            .build_cartesian_2d(0.5f64..(xmax + 0.5), ylo..yhi)
            .map_err(&fail)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(RGBColor(235, 235, 235))
            .x_labels((xmax as usize).clamp(1, 20))
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
        for (i, (x, f)) in tr.at.iter().enumerate() {
            if i > 0 {
                stairs.push((*x, k(tr.at[i - 1].1)));
            }
            stairs.push((*x, k(*f)));
        }
        chart
            .draw_series(LineSeries::new(stairs, color.stroke_width(2)))
            .map_err(&fail)?;
        // Dots while they stay apart; a long run is the line alone.
        if n <= 200 {
            chart
                .draw_series(
                    tr.at
                        .iter()
                        .map(|(x, f)| Circle::new((*x, k(*f)), 4, USED.filled())),
                )
                .map_err(&fail)?;
        }
        // Releases from the first drawn to the last: folded cycles count.
        let first = tr.at.first().map_or(1.0, |p| p.0);
        let releases = if tr.at.len() == tr.free.len() {
            n as i64
        } else {
            (xmax - first) as i64 + 1
        };
        let note = if n < 2 {
            "one release: run more lifecycles to see a trend".to_string()
        } else if leaking {
            format!(
                "{} over {} releases ({} per lifecycle on average)",
                delta(tr.lost.saturating_neg()),
                releases,
                delta(tr.lost.saturating_neg() / (releases - 1).max(1))
            )
        } else {
            format!("flat over {releases} releases: no leak")
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
