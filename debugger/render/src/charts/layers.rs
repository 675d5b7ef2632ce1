//! Per-layer deltas during inference: one bar per layer, what it kept (positive) or gave back
//! (negative), with its transient high above its entry as an outline, and the reuse verdict.

use plotters::prelude::*;

use memlife_audit::AuditReport;

use super::stairs::first_with_spans;
use super::{ALARM, FONT, GOOD, INK, WIDTH, category_label, failed, kd};
use crate::timeline::span_label;
use crate::{Result, delta};

/// One layer.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    /// Layer (label or `op_invoke(3)`).
    pub name: String,
    /// Bytes it kept (negative: gave back).
    pub delta: i64,
    /// Highest used above its entry.
    pub peak_above: u64,
}

/// The first inference phase with spans.
#[derive(Debug, Clone, PartialEq)]
pub struct Layers {
    /// The phase call.
    pub phase: String,
    /// Layers in order.
    pub layers: Vec<Layer>,
    /// The phase's peak above its entry.
    pub peak_above: u64,
    /// `buffer reuse effective: ...` or `no reuse across N layers: ...`.
    pub verdict: String,
}

/// The per-layer figures, when an inference phase recorded spans.
pub fn layers(report: &AuditReport) -> Option<Layers> {
    let p = first_with_spans(report, "run")?;
    let layers: Vec<Layer> = p
        .spans
        .iter()
        .map(|s| Layer {
            name: span_label(report, s),
            delta: s.delta,
            peak_above: s.peak_used.saturating_sub(s.before_used),
        })
        .collect();
    let growing: Vec<String> = layers
        .iter()
        .filter(|l| l.delta > 0)
        .map(|l| format!("{} {}", l.name, delta(l.delta)))
        .collect();
    let verdict = if growing.is_empty() {
        "buffer reuse effective: no layer keeps memory".to_string()
    } else {
        format!(
            "no reuse across {} layers: {}",
            growing.len(),
            growing.join(", ")
        )
    };
    Some(Layers {
        phase: format!("{}#{}", p.function, p.call),
        layers,
        peak_above: p.peak_above_before,
        verdict,
    })
}

/// Draws the bars.
pub fn svg(l: &Layers) -> Result<String> {
    let mut out = String::new();
    let n = l.layers.len();
    let hi = l
        .layers
        .iter()
        .map(|x| kd(x.delta).max(kd(x.peak_above as i64)))
        .fold(0.5f64, f64::max);
    let lo = l.layers.iter().map(|x| kd(x.delta)).fold(-0.5f64, f64::min);
    let names: Vec<String> = l.layers.iter().map(|x| x.name.clone()).collect();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, 380)).into_drawing_area();
        let fail = failed("per-layer");
        root.fill(&WHITE).map_err(&fail)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .margin_right(24)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), (lo * 1.2)..(hi * 1.2))
            .map_err(&fail)?;
        let label_of = |v: &f64| category_label(&names, *v);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(RGBColor(235, 235, 235))
            .x_labels(n)
            .x_label_formatter(&label_of)
            .y_desc("KiB kept (+) or given back (-)")
            .axis_desc_style((FONT, 14))
            .label_style((FONT, 12))
            .y_label_formatter(&|v| format!("{:.1}", v + 0.0))
            .draw()
            .map_err(&fail)?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(-0.5, 0.0), (n as f64 - 0.5, 0.0)],
                INK.stroke_width(1),
            )))
            .map_err(&fail)?;
        for (i, layer) in l.layers.iter().enumerate() {
            let x = i as f64;
            if layer.peak_above > 0 {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.4, 0.0), (x + 0.4, kd(layer.peak_above as i64))],
                        ALARM.mix(0.7).stroke_width(1),
                    )))
                    .map_err(&fail)?;
            }
            if layer.delta != 0 {
                let c = if layer.delta > 0 { ALARM } else { GOOD };
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.3, 0.0), (x + 0.3, kd(layer.delta))],
                        c.filled(),
                    )))
                    .map_err(&fail)?;
            }
        }
        root.present().map_err(&fail)?;
    }
    Ok(out)
}
