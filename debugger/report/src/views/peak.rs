//! The run's peak: the highest used heap of the run, in which phase, and at which operator,
//! layer or allocation site inside it.

use crate::AuditReport;
use crate::views::timeline::{PhaseSlot, Timeline};

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

/// The highest used value of the run: the phase with the highest peak (the first of equals),
/// where inside it the peak was reached.
pub fn peak(report: &AuditReport, t: &Timeline<'_>) -> Option<Peak> {
    let slot = t
        .phases
        .iter()
        .fold(None, |best: Option<&PhaseSlot<'_>>, s| match best {
            Some(b) if b.record.peak_used >= s.record.peak_used => Some(b),
            _ => Some(s),
        })?;
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
            Some(report.label_for(function, arg))
        }
        _ => a.site.as_ref().and_then(|s| s.function.clone()),
    });
    Some(Peak {
        used: p.peak_used,
        step,
        phase: p.name(),
        role: slot.role.clone(),
        at: what,
        above_entry: p.peak_above_before,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The first phase that reached the highest level holds the peak, named by the layer the
    /// script labelled; a sampled phase's peak is its highest point.
    #[test]
    fn the_peak_is_the_first_highest_phase_at_its_labelled_layer() {
        let r = AuditReport::from_slice(
            br#"{"run": {}, "labels": {"op_invoke": ["conv_a", "head_p5"]},
              "phases": [
                {"function": "model_load", "call": 1, "before": {"used": 0}, "after": {"used": 100}, "peak_used": 100, "peak_above_before": 100},
                {"function": "inference_run", "call": 1, "before": {"used": 100}, "after": {"used": 100}, "peak_used": 300, "peak_above_before": 200,
                 "seq_begin": 0, "seq_end": 2,
                 "peak_at": {"seq": 1, "span": "op_invoke#2", "span_arg1": 1}},
                {"function": "inference_run", "call": 2, "before": {"used": 100}, "after": {"used": 100}, "peak_used": 300, "peak_above_before": 200}],
              "events": [{"seq": 0, "kind": "alloc", "used_after": 200}, {"seq": 1, "kind": "alloc", "used_after": 300}]}"#,
        )
        .unwrap();
        let t = Timeline::build(&r);
        let p = peak(&r, &t).unwrap();
        assert_eq!(
            (p.used, p.phase.as_str(), p.at.as_deref(), p.above_entry),
            (300, "inference_run#1", Some("head_p5"), 200)
        );
        assert_eq!(Some(p.step), t.step_of(1));
        assert!(peak(&AuditReport::default(), &Timeline::default()).is_none());
    }
}
