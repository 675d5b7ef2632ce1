//! Per-layer figures of inference: for each layer (span) of the first run phase with spans,
//! what it kept (positive) or gave back (negative) and its transient high above its entry.

use crate::AuditReport;
use crate::views::SpanNames;

/// One layer.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    /// Layer (label or `op_invoke(3)`).
    pub name: String,
    /// Bytes it kept (negative: gave back).
    pub delta: i64,
    /// Highest used above its entry: its transient high.
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
}

impl Layers {
    /// The per-layer figures, when an inference phase recorded spans; layers named as `names`
    /// says.
    pub fn of(report: &AuditReport, names: SpanNames) -> Option<Layers> {
        let p = report.first_with_spans("run")?;
        let layers = p
            .spans
            .iter()
            .zip(report.span_names(p, names))
            .map(|(s, name)| Layer {
                name,
                delta: s.delta,
                peak_above: s.transient(),
            })
            .collect();
        Some(Layers {
            phase: p.name(),
            layers,
            peak_above: p.peak_above_before,
        })
    }

    /// The layers that keep memory: buffer reuse did not work for them.
    pub fn growing(&self) -> impl Iterator<Item = &Layer> {
        self.layers.iter().filter(|l| l.delta > 0)
    }

    /// The layer named `name`.
    pub fn get(&self, name: &str) -> Option<&Layer> {
        self.layers.iter().find(|l| l.name == name)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The figures the audit page's per-layer chart showed before the views were shared.
    #[test]
    fn each_layer_is_what_it_kept_and_its_transient_high() {
        let r = AuditReport::from_slice(
            br#"{"run": {}, "phase_aliases": {"run": "inference_run"},
              "labels": {"op_invoke": ["conv_a", "conv_b"]},
              "phases": [{"function": "inference_run", "call": 2, "peak_above_before": 900, "spans": [
                {"function": "op_invoke", "index": 0, "args": [0, 0, 0, 0], "before_used": 1000, "after_used": 1000, "delta": 0, "peak_used": 1900},
                {"function": "op_invoke", "index": 1, "args": [0, 1, 0, 0], "before_used": 1000, "after_used": 1368, "delta": 368, "peak_used": 1500}]}]}"#,
        )
        .unwrap();
        let l = Layers::of(&r, SpanNames::Readable).unwrap();
        assert_eq!((l.phase.as_str(), l.peak_above), ("inference_run#2", 900));
        let got: Vec<(&str, i64, u64)> = l
            .layers
            .iter()
            .map(|x| (x.name.as_str(), x.delta, x.peak_above))
            .collect();
        assert_eq!(got, [("conv_a", 0, 900), ("conv_b", 368, 500)]);
        let growing: Vec<&str> = l.growing().map(|x| x.name.as_str()).collect();
        assert_eq!(growing, ["conv_b"]);
        assert_eq!(l.get("conv_b").map(|x| x.delta), Some(368));
        assert!(Layers::of(&AuditReport::default(), SpanNames::Aligned).is_none());
    }
}
