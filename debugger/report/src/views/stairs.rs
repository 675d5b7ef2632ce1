//! The graph-build stairs: resident memory after each operator's init, cumulative, one step
//! per operator, the largest step marked. When the build was traced, each step is broken down
//! by component: the blocks allocated since the previous step and still live at its end.

use crate::AuditReport;
use crate::model::Part;
use crate::views::{SpanNames, signed_delta};

/// One operator's step.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Operator (label or `op_init(3)`).
    pub name: String,
    /// Bytes its init kept.
    pub delta: i64,
    /// Resident bytes of the build after it (relative to the build's entry).
    pub resident: i64,
    /// What it kept by component (`[components]` name or allocation site), largest first:
    /// the blocks allocated since the previous step ended and live at its end (empty when
    /// the build was not traced).
    pub parts: Vec<Part>,
}

/// The stairs of the first build phase with spans.
#[derive(Debug, Clone, PartialEq)]
pub struct Stairs {
    /// The phase call (`graph_build#1`).
    pub phase: String,
    /// Steps in order.
    pub steps: Vec<Step>,
    /// Index of the largest step.
    pub largest: usize,
    /// The build's whole delta (operators plus what the build allocates around them).
    pub total: i64,
    /// What the whole build kept by component, largest first (empty when not traced).
    pub total_parts: Vec<Part>,
}

impl Stairs {
    /// The stairs, when a build phase recorded spans; steps named as `names` says.
    pub fn of(report: &AuditReport, names: SpanNames) -> Option<Stairs> {
        let p = report.first_with_spans("build")?;
        let mut from = p.seq_begin;
        let steps: Vec<Step> = p
            .spans
            .iter()
            .zip(report.span_names(p, names))
            .map(|(s, name)| {
                let parts = report.kept_between(from, s.seq_end);
                from = s.seq_end;
                Step {
                    name,
                    delta: s.delta,
                    resident: signed_delta(p.before.used, s.after_used),
                    parts,
                }
            })
            .collect();
        let largest = steps.iter().enumerate().fold(0, |best, (i, s)| {
            if steps.get(best).is_some_and(|b| s.delta > b.delta) {
                i
            } else {
                best
            }
        });
        Some(Stairs {
            phase: p.name(),
            steps,
            largest,
            total: p.delta_used,
            total_parts: report.kept_between(p.seq_begin, p.seq_end),
        })
    }

    /// The same stairs without their breakdown by component: the heights alone, as the diff
    /// page compares them side by side.
    pub fn without_parts(mut self) -> Self {
        for s in &mut self.steps {
            s.parts.clear();
        }
        self.total_parts.clear();
        self
    }

    /// The largest step, when it kept memory.
    pub fn largest_step(&self) -> Option<&Step> {
        self.steps.get(self.largest).filter(|s| s.delta > 0)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A traced build of two operators: conv_a keeps a 136-byte context, conv_b a context and
    /// a 9216-byte re-layout copy; the build also plans a 4096-byte arena before them.
    fn build() -> AuditReport {
        AuditReport::from_slice(
            br#"{"run": {}, "phase_aliases": {"build": "graph_build"},
              "labels": {"op_init": ["conv_a", "conv_b"]},
              "components": {"op_prepare": "operator contexts", "relayout": "re-layout copy"},
              "phases": [{"function": "graph_build", "call": 1, "before": {"used": 1000}, "after": {"used": 14584},
                "delta_used": 13584, "seq_begin": 0, "seq_end": 6,
                "spans": [
                  {"function": "op_init", "index": 0, "args": [0, 0, 0, 0], "before_used": 5096, "after_used": 5232, "delta": 136, "seq_begin": 1, "seq_end": 2},
                  {"function": "op_init", "index": 1, "args": [0, 1, 0, 0], "before_used": 5232, "after_used": 14584, "delta": 9352, "seq_begin": 2, "seq_end": 6}]}],
              "events": [
                {"seq": 0, "kind": "alloc", "addr": 256, "size": 4096, "site": {"function": "planner_plan"}},
                {"seq": 1, "kind": "alloc", "addr": 8192, "size": 136, "site": {"function": "op_prepare"}},
                {"seq": 2, "kind": "alloc", "addr": 9000, "size": 136, "site": {"function": "op_prepare"}},
                {"seq": 3, "kind": "alloc", "addr": 12000, "size": 9216, "site": {"function": "relayout"}},
                {"seq": 4, "kind": "alloc", "addr": 30000, "size": 64, "site": {"function": "scratch"}},
                {"seq": 5, "kind": "free", "addr": 30000, "size": 64},
                {"seq": 6, "kind": "alloc", "addr": 40000, "size": 32, "site": {"function": "after_build"}}]}"#,
        )
        .unwrap()
    }

    fn parts(p: &[Part]) -> Vec<(&str, u64)> {
        p.iter().map(|p| (p.name.as_str(), p.bytes)).collect()
    }

    /// The figures the audit page's stair chart showed before the views were shared: each
    /// step's delta and resident level, the largest step, each step's parts.
    #[test]
    fn each_step_is_its_delta_its_level_and_what_it_kept() {
        let r = build();
        let st = Stairs::of(&r, SpanNames::Readable).unwrap();
        assert_eq!(st.phase, "graph_build#1");
        let steps: Vec<(&str, i64, i64)> = st
            .steps
            .iter()
            .map(|s| (s.name.as_str(), s.delta, s.resident))
            .collect();
        assert_eq!(steps, [("conv_a", 136, 4232), ("conv_b", 9352, 13584)]);
        assert_eq!(st.largest_step().map(|s| s.name.as_str()), Some("conv_b"));
        // conv_a's step runs from the build's entry: the arena planned before it counts.
        assert_eq!(
            parts(&st.steps[0].parts),
            [("planner_plan", 4096), ("operator contexts", 136)]
        );
        // conv_b's: its context and the copy; the scratch block it freed is gone.
        assert_eq!(
            parts(&st.steps[1].parts),
            [("re-layout copy", 9216), ("operator contexts", 136)]
        );
        assert_eq!(st.total, 13584);
        assert_eq!(
            parts(&st.total_parts),
            [
                ("re-layout copy", 9216),
                ("planner_plan", 4096),
                ("operator contexts", 272)
            ]
        );
        let plain = st.clone().without_parts();
        assert!(plain.steps.iter().all(|s| s.parts.is_empty()) && plain.total_parts.is_empty());
        assert_eq!(plain.steps[1].resident, st.steps[1].resident);
    }

    #[test]
    fn the_diff_names_steps_as_it_aligns_them_and_a_run_without_a_build_has_no_stairs() {
        let mut r = build();
        r.labels.clear();
        let st = Stairs::of(&r, SpanNames::Aligned).unwrap();
        let names: Vec<&str> = st.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["#0", "#1"]);
        r.phase_aliases.clear();
        assert!(Stairs::of(&r, SpanNames::Readable).is_none());
    }
}
