//! The leak trend chart ([`memlife_report::views::Trend`]): free bytes after every release,
//! lifecycle after lifecycle, folded cycles included. Flat is healthy; a staircase down is a
//! leak, and its step is the bytes lost per lifecycle.

use plotters::prelude::*;

use memlife_report::views::Trend;

use super::{ALARM, FONT, Frame, GOOD, USED, held, k};
use crate::{Result, delta};

/// A release's number, between releases nothing.
fn release_number(v: &f64) -> String {
    if (v - v.round()).abs() < 0.01 {
        format!("{v:.0}")
    } else {
        String::new()
    }
}

/// A label with two decimals.
fn hundredths(v: &f64) -> String {
    format!("{v:.2}")
}

/// What the chart says over its line: the bytes lost over the releases, or that it is flat.
fn note(tr: &Trend) -> String {
    let n = tr.at.len();
    let xmax = tr.at.last().map_or(1.0, |p| p.0);
    // Releases from the first drawn to the last: folded cycles count.
    let first = tr.at.first().map_or(1.0, |p| p.0);
    let releases = if tr.at.len() == tr.free.len() {
        n as i64
    } else {
        (xmax - first) as i64 + 1
    };
    if n < 2 {
        "one release: run more lifecycles to see a trend".to_string()
    } else if tr.leaking() {
        format!(
            "{} over {} releases ({} per lifecycle on average)",
            delta(tr.lost.saturating_neg()),
            releases,
            delta(tr.lost.saturating_neg() / (releases - 1).max(1))
        )
    } else {
        format!("flat over {releases} releases: no leak")
    }
}

/// Draws the trend.
pub fn svg(tr: &Trend) -> Result<String> {
    // Releases drawn: kept and folded; the axis runs to the last one's cycle.
    let n = tr.at.len();
    let xmax = tr.at.last().map_or(1.0, |p| p.0);
    let max = tr.at.iter().map(|p| p.1).max().unwrap_or(0);
    let min = tr.at.iter().map(|p| p.1).min().unwrap_or(0);
    // Zoom on the values: a 368-byte step must show on a 96 KiB heap. At least 1 KiB tall.
    let span = (k(max) - k(min)).max(1.0);
    let (ylo, yhi) = ((k(min) - span * 0.6).max(0.0), k(max) + span * 0.6);
    let color = if tr.leaking() { ALARM } else { GOOD };
    let frame = Frame {
        x_label_area: 40,
        y_label_area: 72,
        x_labels: Some((xmax as usize).clamp(1, 20)),
        x_format: &release_number,
        y_format: &hundredths,
        x_desc: Some("release (lifecycle)"),
        y_desc: "free after release (KiB)",
        ..Frame::new("leak trend", 320, 0.5f64..(xmax + 0.5), ylo..yhi)
    };
    super::draw(&frame, |plot| {
        // The staircase: hold each value until the next release.
        let stairs = held(tr.at.iter().map(|&(x, f)| (x, k(f))));
        plot.series(LineSeries::new(stairs, color.stroke_width(2)))?;
        // Dots while they stay apart; a long run is the line alone.
        if n <= 200 {
            plot.series(
                tr.at
                    .iter()
                    .map(|(x, f)| Circle::new((*x, k(*f)), 4, USED.filled())),
            )?;
        }
        plot.draw(Text::new(
            note(tr),
            (0.6, yhi - (yhi - ylo) * 0.04),
            (FONT, 14).into_font().style(FontStyle::Bold).color(&color),
        ))?;
        Ok(())
    })
}
