//! What phases and spans are called: a phase's role, a span's name as people read it, and the
//! names under which `memlife diff` aligns two runs' spans.

use crate::AuditReport;
use crate::model::{PhaseRecord, SpanRecord};

/// How a view names the spans of a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanNames {
    /// As people read them ([`AuditReport::span_name`]): the `[labels]` name, else the
    /// script's label, else `function(arg)`. The audit report's charts.
    Readable,
    /// As `memlife diff` aligns two runs ([`AuditReport::aligned_span_names`]): the script's
    /// labels when every span has one and they are unique, else positions (`#3`).
    Aligned,
}

impl AuditReport {
    /// What a phase is for: its alias, else the alias that names its function, else the
    /// function itself.
    pub fn role_of<'a>(&'a self, phase: &'a PhaseRecord) -> &'a str {
        match phase.alias.as_deref() {
            Some(alias) => alias,
            None => self.role_of_function(&phase.function),
        }
    }

    /// The role a phase function plays (its alias), or the function itself.
    pub fn role_of_function<'a>(&'a self, function: &'a str) -> &'a str {
        self.phase_aliases
            .iter()
            .find(|(_, f)| f.as_str() == function)
            .map_or(function, |(a, _)| a.as_str())
    }

    /// The first phase of `role` that recorded spans: the one the build stairs and the
    /// per-layer bars show.
    pub fn first_with_spans(&self, role: &str) -> Option<&PhaseRecord> {
        self.phases
            .iter()
            .find(|p| self.role_of(p) == role && !p.spans.is_empty())
    }

    /// The script's name (`t.label_spans`) for `function`'s span whose second argument is
    /// `arg`.
    pub fn script_label(&self, function: &str, arg: u64) -> Option<&str> {
        let names = self.labels.get(function)?;
        names.get(usize::try_from(arg).ok()?).map(String::as_str)
    }

    /// The label of `function`'s span whose second argument is `arg`: the script's, else
    /// `function(arg)`.
    pub fn label_for(&self, function: &str, arg: u64) -> String {
        self.script_label(function, arg)
            .map_or_else(|| format!("{function}({arg})"), str::to_string)
    }

    /// The name of a span: its `[labels]` name, else the script's label for its second
    /// argument (`conv_b`), else `function(arg)`.
    pub fn span_name(&self, s: &SpanRecord) -> String {
        s.label
            .clone()
            .unwrap_or_else(|| self.label_for(&s.function, s.args[1]))
    }

    /// The spans of `phase` under the names `memlife diff` aligns them by: the script's labels
    /// when every span has one and they are unique, else their positions (`#3`). (The
    /// `[labels]` names are left out: the diff has always aligned by the script's.)
    pub fn aligned_span_names(&self, phase: &PhaseRecord) -> Vec<String> {
        let labels: Vec<Option<&str>> = phase
            .spans
            .iter()
            .map(|s| self.script_label(&s.function, s.args[1]))
            .collect();
        let unique = {
            let mut names: Vec<&str> = labels.iter().flatten().copied().collect();
            names.sort_unstable();
            names.dedup();
            names.len() == labels.len()
        };
        if unique {
            labels.into_iter().flatten().map(str::to_string).collect()
        } else {
            phase
                .spans
                .iter()
                .map(|s| format!("#{}", s.index))
                .collect()
        }
    }

    /// The names of `phase`'s spans, in order, as `names` says.
    pub fn span_names(&self, phase: &PhaseRecord, names: SpanNames) -> Vec<String> {
        match names {
            SpanNames::Readable => phase.spans.iter().map(|s| self.span_name(s)).collect(),
            SpanNames::Aligned => self.aligned_span_names(phase),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn span(index: usize, arg: u64, label: Option<&str>) -> SpanRecord {
        SpanRecord {
            function: "op_init".into(),
            index,
            args: [0, arg, 0, 0],
            arg,
            label: label.map(str::to_string),
            ..SpanRecord::default()
        }
    }

    fn report(spans: Vec<SpanRecord>, labels: &[&str]) -> AuditReport {
        let mut r = AuditReport::default();
        r.phase_aliases.insert("build".into(), "graph_build".into());
        r.labels.insert(
            "op_init".into(),
            labels.iter().map(|l| l.to_string()).collect(),
        );
        r.phases.push(PhaseRecord {
            function: "graph_build".into(),
            call: 1,
            spans,
            ..PhaseRecord::default()
        });
        r
    }

    #[test]
    fn readable_names_prefer_the_firmwares_label_then_the_scripts_then_the_argument() {
        let r = report(
            vec![
                span(0, 0, Some("conv_a")),
                span(1, 1, None),
                span(2, 7, None),
            ],
            &["x", "conv_b"],
        );
        let p = r.first_with_spans("build").unwrap();
        assert_eq!(
            r.span_names(p, SpanNames::Readable),
            ["conv_a", "conv_b", "op_init(7)"]
        );
    }

    #[test]
    fn aligned_names_are_the_scripts_labels_when_unique_else_positions() {
        let r = report(
            vec![span(0, 0, Some("ignored")), span(1, 1, None)],
            &["a", "b"],
        );
        let p = &r.phases[0];
        assert_eq!(r.span_names(p, SpanNames::Aligned), ["a", "b"]);
        let r = report(vec![span(0, 0, None), span(1, 1, None)], &["a", "a"]);
        assert_eq!(r.aligned_span_names(&r.phases[0]), ["#0", "#1"]);
        let r = report(vec![span(0, 0, None), span(1, 5, None)], &["a"]);
        assert_eq!(r.aligned_span_names(&r.phases[0]), ["#0", "#1"]);
    }

    #[test]
    fn a_phase_without_alias_takes_the_role_that_names_its_function() {
        let r = report(vec![], &[]);
        assert_eq!(r.role_of(&r.phases[0]), "build");
        assert_eq!(r.role_of_function("other"), "other");
    }
}
