//! The charts of the HTML report, each an SVG string drawn with plotters' SVG backend, and the
//! figures each one shows (the page prints them beside the chart, so they can be copied).
//!
//! Axes are in KiB; labels name phases, operators and layers as the script labelled them.

pub mod curve;
pub mod layers;
pub mod stairs;
pub mod trend;

use plotters::style::RGBColor;

use crate::ReportError;

/// Chart width in pixels (the page scales it down on narrow screens and in print).
pub const WIDTH: u32 = 960;

/// The font family of every chart text: the reader's own sans-serif, nothing is embedded.
pub const FONT: &str = "sans-serif";

/// Colour of a phase role's band and legend chip.
pub fn role_color(role: &str) -> RGBColor {
    match role {
        "load" => RGBColor(245, 166, 35),
        "build" => RGBColor(74, 144, 226),
        "run" => RGBColor(80, 180, 100),
        "switch" => RGBColor(155, 110, 200),
        "release" => RGBColor(150, 150, 150),
        _ => RGBColor(60, 170, 170),
    }
}

/// The same colour as CSS.
pub fn css(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// Used-memory line colour.
pub const USED: RGBColor = RGBColor(31, 78, 140);
/// Capacity and failures.
pub const ALARM: RGBColor = RGBColor(200, 40, 40);
/// Good news (memory given back).
pub const GOOD: RGBColor = RGBColor(40, 150, 70);
/// Neutral text.
pub const INK: RGBColor = RGBColor(40, 40, 40);

/// Turns a plotters error into ours.
pub(crate) fn failed<E: std::fmt::Debug>(chart: &'static str) -> impl Fn(E) -> ReportError {
    move |e| ReportError::Chart {
        chart,
        message: format!("{e:?}"),
    }
}

/// Bytes to KiB on the axes.
/// The name of the bar at an x position of a category axis (bars sit at 0, 1, 2, ...): empty
/// between bars, so plotters' in-between ticks stay unlabelled.
pub(crate) fn category_label(names: &[String], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() < 0.01 && i >= 0.0 {
        names.get(i as usize).cloned().unwrap_or_default()
    } else {
        String::new()
    }
}

pub(crate) fn k(bytes: u64) -> f64 {
    bytes as f64 / 1024.0
}

/// A signed delta in KiB.
pub(crate) fn kd(bytes: i64) -> f64 {
    bytes as f64 / 1024.0
}

/// `to - from` in bytes, saturating at the ends of i64: heap figures come from target RAM (via
/// the report) and may be anything.
pub(crate) fn delta(from: u64, to: u64) -> i64 {
    let d = i128::from(to) - i128::from(from);
    i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    /// `as i64` turned a figure above i64::MAX negative and the subtraction overflowed.
    #[test]
    fn delta_saturates_on_huge_figures() {
        assert_eq!(super::delta(1, 1 << 63), i64::MAX);
        assert_eq!(super::delta(u64::MAX, 0), i64::MIN);
        assert_eq!(super::delta(10, 4), -6);
    }
}
