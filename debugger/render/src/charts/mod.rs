//! The charts of the HTML pages (the audit report and the diff report), each an SVG string
//! drawn with plotters' SVG backend from a view of `memlife_report::views`; the page prints
//! the figures beside the chart, so they can be copied.
//!
//! Every chart is built here the same way ([`Frame`], [`draw`]): the frame (white background,
//! margins, axes, the light y grid, their words), then what [`Plot`] draws on it. A chart's own
//! module says only what it draws. Axes are in KiB; labels name phases, operators and layers as
//! the script labelled them.

pub mod curve;
pub mod layers;
pub mod stairs;
pub mod ticks;
pub mod trend;

use std::borrow::Borrow;
use std::ops::Range;

use plotters::coord::types::RangedCoordf64;
use plotters::element::{CoordMapper, Drawable, PointCollection};
use plotters::prelude::*;

use crate::{ReportError, Result};

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

/// How an axis writes the label of a value.
pub(crate) type Format<'a> = &'a dyn Fn(&f64) -> String;

/// A chart's frame: its size and ranges, its axes and their words.
pub(crate) struct Frame<'a> {
    /// Which chart, for errors (`build stairs`).
    pub name: &'static str,
    /// Height in pixels (the width is [`WIDTH`]).
    pub height: u32,
    /// The x range.
    pub x: Range<f64>,
    /// The y range.
    pub y: Range<f64>,
    /// Room for the x labels, in pixels.
    pub x_label_area: u32,
    /// Room for the y labels, in pixels.
    pub y_label_area: u32,
    /// How many x labels plotters places; its default when `None`.
    pub x_labels: Option<usize>,
    /// An x label.
    pub x_format: Format<'a>,
    /// A y label.
    pub y_format: Format<'a>,
    /// The x axis's words, if any.
    pub x_desc: Option<&'a str>,
    /// The y axis's words.
    pub y_desc: &'a str,
    /// Label font size.
    pub label_size: u32,
}

impl Frame<'_> {
    /// A frame with the usual room for labels (36 px under the plot, 64 px left of it), whole
    /// numbers on both axes, plotters' count of x labels and no words on the axes: a chart
    /// says what differs.
    pub fn new(name: &'static str, height: u32, x: Range<f64>, y: Range<f64>) -> Self {
        Frame {
            name,
            height,
            x,
            y,
            x_label_area: 36,
            y_label_area: 64,
            x_labels: None,
            x_format: &whole,
            y_format: &whole,
            x_desc: None,
            y_desc: "",
            label_size: 12,
        }
    }
}

/// A label without decimals.
pub(crate) fn whole(v: &f64) -> String {
    format!("{v:.0}")
}

/// A chart's drawing area, its coordinates those of its frame.
pub(crate) type Chart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// What a chart draws on its frame: elements and series, each failure named by the chart.
pub(crate) struct Plot<'c, 'a, 'b> {
    chart: &'c mut Chart<'a, 'b>,
    name: &'static str,
}

impl<'b> Plot<'_, '_, 'b> {
    /// Draws a series of elements (a line, an area, circles).
    pub fn series<B, E, R, S>(&mut self, series: S) -> Result<()>
    where
        B: CoordMapper,
        for<'e> &'e E: PointCollection<'e, (f64, f64), B>,
        E: Drawable<SVGBackend<'b>, B>,
        R: Borrow<E>,
        S: IntoIterator<Item = R>,
    {
        self.chart
            .draw_series(series)
            .map(|_| ())
            .map_err(failed(self.name))
    }

    /// Draws one element (a rectangle, a text).
    pub fn draw<B, E>(&mut self, element: E) -> Result<()>
    where
        B: CoordMapper,
        for<'e> &'e E: PointCollection<'e, (f64, f64), B>,
        E: Drawable<SVGBackend<'b>, B>,
    {
        self.series(std::iter::once(element))
    }
}

/// Draws a chart: its `frame`, then what `body` plots on it; the SVG.
pub(crate) fn draw(
    frame: &Frame<'_>,
    body: impl FnOnce(&mut Plot<'_, '_, '_>) -> Result<()>,
) -> Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, frame.height)).into_drawing_area();
        let fail = failed(frame.name);
        root.fill(&WHITE).map_err(&fail)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .margin_right(24)
            .x_label_area_size(frame.x_label_area)
            .y_label_area_size(frame.y_label_area)
            .build_cartesian_2d(frame.x.clone(), frame.y.clone())
            .map_err(&fail)?;
        {
            let mut mesh = chart.configure_mesh();
            mesh.disable_x_mesh()
                .light_line_style(RGBColor(235, 235, 235))
                .x_label_formatter(frame.x_format)
                .y_label_formatter(frame.y_format)
                .y_desc(frame.y_desc)
                .axis_desc_style((FONT, 14))
                .label_style((FONT, frame.label_size));
            if let Some(n) = frame.x_labels {
                mesh.x_labels(n);
            }
            if let Some(d) = frame.x_desc {
                mesh.x_desc(d);
            }
            mesh.draw().map_err(&fail)?;
        }
        body(&mut Plot {
            chart: &mut chart,
            name: frame.name,
        })?;
        root.present().map_err(&fail)?;
    }
    Ok(out)
}

/// A step function through `points`: each value holds until the next point.
pub(crate) fn held(points: impl IntoIterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    let points = points.into_iter();
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(points.size_hint().0 * 2);
    for (x, y) in points {
        if let Some(&(_, prev)) = out.last() {
            out.push((x, prev));
        }
        out.push((x, y));
    }
    out
}

/// Turns a plotters error into ours.
pub(crate) fn failed<E: std::fmt::Debug>(chart: &'static str) -> impl Fn(E) -> ReportError {
    move |e| ReportError::Chart {
        chart,
        message: format!("{e:?}"),
    }
}

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

/// Bytes to KiB on the axes.
pub(crate) fn k(bytes: u64) -> f64 {
    bytes as f64 / 1024.0
}

/// A signed delta in KiB.
pub(crate) fn kd(bytes: i64) -> f64 {
    bytes as f64 / 1024.0
}
