//! Per-layer deltas during inference ([`memlife_report::views::Layers`]): one bar per layer,
//! what it kept (positive) or gave back (negative), with its transient high above its entry as
//! an outline, and the reuse verdict; and the diff page's paired bars, two runs' layers side by
//! side.

use plotters::prelude::*;

use memlife_report::views::Layers;

use super::{ALARM, Frame, GOOD, INK, category_label, k, kd};
use crate::{Result, delta};

/// `buffer reuse effective: ...` or `no reuse across N layers: ...`.
pub fn verdict(l: &Layers) -> String {
    let growing: Vec<String> = l
        .growing()
        .map(|x| format!("{} {}", x.name, delta(x.delta)))
        .collect();
    if growing.is_empty() {
        "buffer reuse effective: no layer keeps memory".to_string()
    } else {
        format!(
            "no reuse across {} layers: {}",
            growing.len(),
            growing.join(", ")
        )
    }
}

/// A label with one decimal.
fn tenths(v: &f64) -> String {
    format!("{v:.1}")
}

/// Draws the bars.
pub fn svg(l: &Layers) -> Result<String> {
    let n = l.layers.len();
    let hi = l
        .layers
        .iter()
        .map(|x| kd(x.delta).max(kd(x.peak_above as i64)))
        .fold(0.5f64, f64::max);
    let lo = l.layers.iter().map(|x| kd(x.delta)).fold(-0.5f64, f64::min);
    let names: Vec<String> = l.layers.iter().map(|x| x.name.clone()).collect();
    let label_of = |v: &f64| category_label(&names, *v);
    // `+ 0.0` turns -0.0 into 0.0: the axis says 0.0, not -0.0.
    let y_format = |v: &f64| tenths(&(v + 0.0));
    let frame = Frame {
        x_labels: Some(n),
        x_format: &label_of,
        y_format: &y_format,
        y_desc: "KiB kept (+) or given back (-)",
        ..Frame::new(
            "per-layer",
            380,
            -0.5f64..(n as f64 - 0.5),
            (lo * 1.2)..(hi * 1.2),
        )
    };
    super::draw(&frame, |plot| {
        plot.draw(PathElement::new(
            vec![(-0.5, 0.0), (n as f64 - 0.5, 0.0)],
            INK.stroke_width(1),
        ))?;
        for (i, layer) in l.layers.iter().enumerate() {
            let x = i as f64;
            if layer.peak_above > 0 {
                plot.draw(Rectangle::new(
                    [(x - 0.4, 0.0), (x + 0.4, kd(layer.peak_above as i64))],
                    ALARM.mix(0.7).stroke_width(1),
                ))?;
            }
            if layer.delta != 0 {
                let c = if layer.delta > 0 { ALARM } else { GOOD };
                plot.draw(Rectangle::new(
                    [(x - 0.3, 0.0), (x + 0.3, kd(layer.delta))],
                    c.filled(),
                ))?;
            }
        }
        Ok(())
    })
}

/// One layer of two runs: its name, and in each run that has it, what it kept and its
/// transient high.
#[derive(Debug, Clone, PartialEq)]
pub struct Paired {
    /// The layer.
    pub name: String,
    /// (kept, transient high) in BASE.
    pub base: Option<(i64, u64)>,
    /// (kept, transient high) in HEAD.
    pub head: Option<(i64, u64)>,
}

/// The layers of two runs matched by name: HEAD's in order, then those only BASE has.
pub fn pair(base: Option<&Layers>, head: Option<&Layers>) -> Vec<Paired> {
    let figures = |l: &memlife_report::views::Layer| (l.delta, l.peak_above);
    let mut out: Vec<Paired> = head
        .iter()
        .flat_map(|h| &h.layers)
        .map(|l| Paired {
            name: l.name.clone(),
            base: base.and_then(|b| b.get(&l.name)).map(figures),
            head: Some(figures(l)),
        })
        .collect();
    for l in base.iter().flat_map(|b| &b.layers) {
        if head.is_none_or(|h| h.get(&l.name).is_none()) {
            out.push(Paired {
                name: l.name.clone(),
                base: Some(figures(l)),
                head: None,
            });
        }
    }
    out
}

/// Draws two runs' layers as pairs of bars, BASE left in `colours.0`, HEAD right in
/// `colours.1`: kept as a bar, the transient high as an outline.
pub fn paired_svg(pairs: &[Paired], colours: (RGBColor, RGBColor)) -> Result<String> {
    let names: Vec<String> = pairs.iter().map(|p| p.name.clone()).collect();
    let values = pairs
        .iter()
        .flat_map(|p| [p.base, p.head])
        .flatten()
        .flat_map(|(d, t)| [d, t as i64]);
    let (lo, hi) = values.fold((0i64, 0i64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (ymin, ymax) = (kd(lo) * 1.15 - 0.2, kd(hi) * 1.15 + 0.5);
    let n = names.len();
    let label_of = |v: &f64| category_label(&names, *v);
    let frame = Frame {
        x_labels: Some(n),
        x_format: &label_of,
        y_format: &tenths,
        y_desc: "kept (bar) and transient high (outline), KiB",
        label_size: 11,
        ..Frame::new("paired layers", 380, -0.5f64..(n as f64 - 0.5), ymin..ymax)
    };
    super::draw(&frame, |plot| {
        plot.series(LineSeries::new(
            [(-0.5, 0.0), (n as f64, 0.0)],
            INK.stroke_width(1),
        ))?;
        for (i, p) in pairs.iter().enumerate() {
            for (v, colour, off) in [(p.base, colours.0, -0.2), (p.head, colours.1, 0.2)] {
                let Some((d, t)) = v else { continue };
                let x = i as f64 + off;
                plot.draw(Rectangle::new(
                    [(x - 0.18, 0.0), (x + 0.18, kd(d))],
                    colour.filled(),
                ))?;
                if t > 0 {
                    plot.draw(Rectangle::new(
                        [(x - 0.18, 0.0), (x + 0.18, k(t))],
                        colour.stroke_width(1),
                    ))?;
                }
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlife_report::views::Layer;

    fn layers(figures: &[(&str, i64, u64)]) -> Layers {
        Layers {
            phase: "inference_run#1".into(),
            layers: figures
                .iter()
                .map(|&(name, delta, peak_above)| Layer {
                    name: name.into(),
                    delta,
                    peak_above,
                })
                .collect(),
            peak_above: 0,
        }
    }

    #[test]
    fn the_verdict_names_the_layers_that_keep_memory() {
        assert_eq!(
            verdict(&layers(&[("a", 0, 10), ("b", -8, 0)])),
            "buffer reuse effective: no layer keeps memory"
        );
        assert_eq!(
            verdict(&layers(&[("a", 368, 0), ("b", 0, 0), ("c", 2048, 0)])),
            "no reuse across 2 layers: a +368 B, c +2.0 KiB"
        );
    }

    #[test]
    fn layers_pair_by_name_heads_first_then_those_only_base_has() {
        let b = layers(&[("a", 0, 10), ("gone", 8, 0)]);
        let h = layers(&[("new", 16, 0), ("a", 4, 20)]);
        let paired = |name: &str, base, head| Paired {
            name: name.into(),
            base,
            head,
        };
        assert_eq!(
            pair(Some(&b), Some(&h)),
            [
                paired("new", None, Some((16, 0))),
                paired("a", Some((0, 10)), Some((4, 20))),
                paired("gone", Some((8, 0)), None)
            ]
        );
        assert!(pair(None, None).is_empty());
        assert_eq!(pair(Some(&b), None).len(), 2);
    }
}
