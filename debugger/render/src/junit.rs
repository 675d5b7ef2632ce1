//! An audit as JUnit XML: a test suite named after the script, one test case per check name
//! (a check called in a loop fails when any call failed, with how many did), and a `script` test
//! case with an error when the audit stopped on one. Text goes through the same escaper as the
//! HTML page ([`crate::escape::text`]), so control characters from target strings, which XML 1.0
//! cannot carry, never make the file unreadable to a CI's parser.

use std::path::Path;

use memlife_report::AuditReport;
use memlife_report::model::Verdict;

use crate::escape::text;

/// The JUnit XML of `report`.
pub fn junit(report: &AuditReport) -> String {
    let suite = format!(
        "memlife.{}",
        Path::new(&report.run.script)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("audit")
    );
    let failures = report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Fail)
        .count();
    let skipped = report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Skip)
        .count();
    let errors = usize::from(report.error.is_some());
    let tests = report.checks.len() + errors;
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(&format!(
        "<testsuites name=\"memlife\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{:.3}\">\n",
        report.run.seconds
    ));
    x.push_str(&format!(
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{:.3}\" timestamp=\"{}\">\n",
        text(&suite),
        report.run.seconds,
        text(&report.run.date)
    ));
    x.push_str(&format!(
        "    <properties>\n      <property name=\"elf\" value=\"{}\"/>\n      <property name=\"allocator\" value=\"{}\"/>\n      <property name=\"target\" value=\"{}\"/>\n      <property name=\"memlife\" value=\"{}\"/>\n    </properties>\n",
        text(&report.run.elf),
        text(&report.run.allocator),
        text(&report.run.target),
        text(&report.run.memlife)
    ));
    for c in &report.checks {
        x.push_str(&format!(
            "    <testcase name=\"{}\" classname=\"{}\"",
            text(&c.name),
            text(&suite)
        ));
        match c.verdict {
            Verdict::Pass => x.push_str("/>\n"),
            Verdict::Skip => x.push_str(&format!(
                ">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                text(&c.message)
            )),
            Verdict::Warn => x.push_str(&format!(
                ">\n      <system-out>warning: {}</system-out>\n    </testcase>\n",
                text(&c.message)
            )),
            Verdict::Fail => x.push_str(&format!(
                ">\n      <failure message=\"{}\" type=\"check\">{} of {} calls failed{}: {}</failure>\n    </testcase>\n",
                text(&c.message),
                c.failures,
                c.calls,
                c.line.map(|l| format!(" (first at line {l})")).unwrap_or_default(),
                text(&c.message)
            )),
        }
    }
    if let Some(e) = &report.error {
        x.push_str(&format!(
            "    <testcase name=\"script\" classname=\"{}\">\n      <error message=\"{}\" type=\"error\"/>\n    </testcase>\n",
            text(&suite),
            text(&e.to_string())
        ));
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// Writes the JUnit XML of `report` to `path` atomically.
pub fn write_junit(report: &AuditReport, path: &Path) -> crate::Result<()> {
    crate::write_atomic(path, junit(report).as_bytes())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::BTreeMap;

    use memlife_report::model::{CheckResult, PeakMethod, RunFacts, ScriptError, summarize};

    use super::*;

    fn call(name: &str, verdict: Verdict, msg: &str) -> CheckResult {
        CheckResult {
            name: name.into(),
            verdict,
            message: msg.into(),
            line: Some(3),
        }
    }

    /// A report of `calls` for `script`, stopped by `error` when given.
    fn report(script: &str, calls: &[CheckResult], error: Option<ScriptError>) -> AuditReport {
        let checks = summarize(calls);
        let exit_code = AuditReport::exit_code_for(&checks, error.as_ref());
        AuditReport {
            run: RunFacts {
                script: script.into(),
                ..Default::default()
            },
            method: PeakMethod::Trace,
            checks,
            check_calls: calls.to_vec(),
            phases: vec![],
            events: vec![],
            totals: Default::default(),
            cycles: 0,
            folded: None,
            dumps: vec![],
            phase_aliases: BTreeMap::new(),
            labels: BTreeMap::new(),
            components: BTreeMap::new(),
            heap_map: None,
            deferred: Vec::new(),
            deferred_unlisted: 0,
            injected: Vec::new(),
            tasks: Vec::new(),
            injected_unlisted: 0,
            models: Vec::new(),
            arenas: None,
            error,
            exit_code,
        }
    }

    #[test]
    fn junit_escapes_and_counts() {
        let report = report(
            "scripts/leak.rhai",
            &[
                call("leak", Verdict::Fail, "a <b> & \"c\""),
                call("peak", Verdict::Pass, ""),
            ],
            Some(ScriptError {
                message: "boom".into(),
                line: Some(4),
                column: Some(2),
            }),
        );
        let x = junit(&report);
        assert!(
            x.contains("<testsuite name=\"memlife.leak\" tests=\"3\" failures=\"1\" errors=\"1\""),
            "{x}"
        );
        assert!(x.contains("a &lt;b&gt; &amp; &quot;c&quot;"), "{x}");
        assert!(
            x.contains("<testcase name=\"peak\" classname=\"memlife.leak\"/>"),
            "{x}"
        );
        assert!(x.contains("line 4, column 2: boom"), "{x}");
    }

    #[test]
    fn a_skipped_check_is_a_skipped_testcase_and_fails_nothing() {
        let report = report(
            "scripts/leak.rhai",
            &[
                call("overlap", Verdict::Skip, "no tensor table: add [tensors]"),
                call("leak", Verdict::Pass, ""),
            ],
            None,
        );
        assert_eq!(report.exit_code, 0);
        let x = junit(&report);
        assert!(
            x.contains("failures=\"0\" errors=\"0\" skipped=\"1\""),
            "{x}"
        );
        assert!(
            x.contains("<testcase name=\"overlap\" classname=\"memlife.leak\">\n      <skipped message=\"no tensor table: add [tensors]\"/>"),
            "{x}"
        );
    }

    #[test]
    fn control_characters_from_the_target_stay_valid_xml() {
        let report = report(
            "s.rhai",
            &[call("names", Verdict::Fail, "op \u{1}\u{1b}[2J name")],
            None,
        );
        let x = junit(&report);
        assert!(!x.chars().any(|c| c.is_control() && c != '\n'), "{x:?}");
        assert!(
            !x.contains("&#1;") && !x.contains("&#27;"),
            "no references XML 1.0 forbids"
        );
        assert!(x.contains("op \u{fffd}\u{fffd}[2J name"), "{x}");
    }
}
