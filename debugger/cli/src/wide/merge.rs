//! What a wide run writes once its targets are done: one JUnit file with a test suite per
//! target, one summary JSON, and a short table on stdout.
//!
//! A target's suite is its own audit's, renamed after the target; a target with no usable JUnit
//! of its own (it timed out, or never started) gets a suite with one errored case saying why, so
//! a CI reading the file sees every target of the list.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::{Value, json};

use super::list::{Expected, Target};

/// A target's verdict, from its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Exit 0.
    Pass,
    /// Exit 1.
    Fail,
    /// Exit 2, a timeout, a crash: the audit could not say.
    Error,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Error => "error",
        }
    }
}

/// How one target ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub target: Target,
    pub script: PathBuf,
    pub dir: PathBuf,
    pub verdict: Verdict,
    /// The child's exit code, when it exited.
    pub exit: Option<i32>,
    pub seconds: f64,
    /// Why it is an error.
    pub error: Option<String>,
    /// The child's own JUnit may stand for it (it ran to its end, not stopped by this run).
    pub own_junit: bool,
}

impl Outcome {
    /// Whether the verdict is the one expected; `None` when nothing was expected.
    pub fn as_expected(&self) -> Option<bool> {
        self.target.expect.map(|e| {
            matches!(
                (e, self.verdict),
                (Expected::Pass, Verdict::Pass) | (Expected::Fail, Verdict::Fail)
            )
        })
    }
}

/// The exit code of the run: 2 when any target had a tool error, else 1 when any target failed
/// (with `--expect`: when any verdict is not the expected one), else 0.
pub fn exit_code(outcomes: &[Outcome], expect: bool) -> u8 {
    if outcomes.iter().any(|o| o.verdict == Verdict::Error) {
        2
    } else if outcomes.iter().any(|o| {
        if expect {
            o.as_expected() == Some(false)
                || (o.as_expected().is_none() && o.verdict == Verdict::Fail)
        } else {
            o.verdict == Verdict::Fail
        }
    }) {
        1
    } else {
        0
    }
}

/// The value of `attr="..."` in an opening tag.
fn attr(tag: &str, attr: &str) -> Option<u64> {
    let from = tag.find(&format!(" {attr}=\""))? + attr.len() + 3;
    tag[from..].split('"').next()?.parse().ok()
}

/// The `<testsuite>` element of a memlife JUnit file, renamed `name`, and its (tests, failures,
/// errors).
fn own_suite(junit: &str, name: &str) -> Option<(String, [u64; 3])> {
    let start = junit.find("<testsuite ")?;
    let end = junit.rfind("</testsuite>")? + "</testsuite>".len();
    // The file is read back from disk: a close before the open is no suite, not a panic.
    let suite = junit.get(start..end)?;
    let open_end = suite.find('>')?;
    let (open, rest) = suite.split_at(open_end);
    let counts = [
        attr(open, "tests")?,
        attr(open, "failures")?,
        attr(open, "errors")?,
    ];
    let name_at = open.find(" name=\"")? + " name=\"".len();
    let name_end = name_at + open[name_at..].find('"')?;
    // Test cases are told apart by classname and name in CI tools: each target's get its own.
    let rest = rest.replace(
        " classname=\"",
        &format!(" classname=\"{}.", memlife_core::text::xml(name)),
    );
    let renamed = format!(
        "{}{}{}{rest}",
        &open[..name_at],
        memlife_core::text::xml(name),
        &open[name_end..]
    );
    Some((format!("  {renamed}\n"), counts))
}

/// A suite of one errored case for a target without a JUnit file of its own.
fn error_suite(o: &Outcome) -> (String, [u64; 3]) {
    let name = memlife_core::text::xml(&o.target.name);
    let why = memlife_core::text::xml(o.error.as_deref().unwrap_or("no JUnit output"));
    (
        format!(
            "  <testsuite name=\"{name}\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" time=\"{:.3}\">\n    <testcase name=\"audit\" classname=\"{name}\">\n      <error message=\"{why}\" type=\"memlife\">{why}</error>\n    </testcase>\n  </testsuite>\n",
            o.seconds
        ),
        [1, 0, 1],
    )
}

/// The merged JUnit file.
pub fn junit(outcomes: &[Outcome], seconds: f64) -> String {
    let mut suites = String::new();
    let mut total = [0u64; 3];
    for o in outcomes {
        let own = o
            .own_junit
            .then(|| std::fs::read_to_string(o.dir.join("junit.xml")).ok())
            .flatten()
            .and_then(|text| own_suite(&text, &o.target.name));
        let (suite, counts) = own.unwrap_or_else(|| error_suite(o));
        suites.push_str(&suite);
        for (t, c) in total.iter_mut().zip(counts) {
            // Counts parsed from the children's files: a huge one must not overflow the sum.
            *t = t.saturating_add(c);
        }
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"memlife\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{seconds:.3}\">\n{suites}</testsuites>\n",
        total[0], total[1], total[2]
    )
}

/// What the merged JUnit says while the run has not finished: a run that is killed leaves no
/// earlier run's results behind that look like this one's.
pub fn unfinished_junit() -> String {
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"memlife\" tests=\"1\" failures=\"0\" errors=\"1\">\n  <testsuite name=\"memlife\" tests=\"1\" failures=\"0\" errors=\"1\">\n    <testcase name=\"wide run\" classname=\"memlife\">\n      <error message=\"the run did not finish\" type=\"memlife\">the run did not finish</error>\n    </testcase>\n  </testsuite>\n</testsuites>\n".to_string()
}

/// The run's settings that the summary repeats.
pub struct RunInfo {
    pub jobs: usize,
    pub shard: Option<String>,
    pub listed: usize,
    pub seconds: f64,
    pub expect: bool,
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// Where a wide run is, for its summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// Targets are running (the summary written at the start).
    Running,
    /// Ctrl-C or SIGTERM stopped it: memlife exits 130 whatever the targets said.
    Interrupted,
    /// Every target was audited.
    Finished,
}

/// The summary JSON (docs: README, "Wide runs"): `finished` only when every target was audited,
/// `exit` the code memlife exits with (`null` while running).
pub fn summary(outcomes: &[Outcome], info: &RunInfo, state: RunState) -> Value {
    let count = |v: Verdict| outcomes.iter().filter(|o| o.verdict == v).count();
    let targets: Vec<Value> = outcomes
        .iter()
        .map(|o| {
            json!({
                "name": o.target.name,
                "verdict": o.verdict.word(),
                "exit": o.exit,
                "expected": o.target.expect,
                "as_expected": o.as_expected(),
                "seconds": (o.seconds * 1000.0).round() / 1000.0,
                "config": path(&o.target.config),
                "elf": o.target.elf.as_deref().map(path),
                "script": path(&o.script),
                "dir": path(&o.dir),
                "error": o.error,
            })
        })
        .collect();
    json!({
        "memlife": env!("CARGO_PKG_VERSION"),
        "finished": state == RunState::Finished,
        "interrupted": state == RunState::Interrupted,
        "exit": match state {
            RunState::Running => None,
            RunState::Interrupted => Some(crate::EXIT_INTERRUPTED),
            RunState::Finished => Some(exit_code(outcomes, info.expect)),
        },
        "jobs": info.jobs,
        "shard": info.shard,
        "listed": info.listed,
        "seconds": (info.seconds * 1000.0).round() / 1000.0,
        "counts": {
            "pass": count(Verdict::Pass),
            "fail": count(Verdict::Fail),
            "error": count(Verdict::Error),
            "unexpected": outcomes.iter().filter(|o| o.as_expected() == Some(false)).count(),
        },
        "targets": targets,
    })
}

/// The table on stdout.
pub fn print_table(outcomes: &[Outcome], info: &RunInfo, files: &[PathBuf]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let width = outcomes
        .iter()
        .map(|o| o.target.name.len())
        .max()
        .unwrap_or(0)
        .max(6);
    writeln!(out, "{:width$}  VERDICT  EXPECTED  SECONDS  NOTE", "TARGET")?;
    for o in outcomes {
        let expected = o.target.expect.map_or("-", |e| match e {
            Expected::Pass => "pass",
            Expected::Fail => "fail",
        });
        let note = match (&o.error, info.expect, o.as_expected()) {
            (Some(e), _, _) => memlife_core::text::printable(e).into_owned(),
            (None, true, Some(false)) => "UNEXPECTED".to_string(),
            _ => String::new(),
        };
        let line = format!(
            "{:width$}  {:7}  {:8}  {:7.1}  {note}",
            o.target.name,
            o.verdict.word(),
            expected,
            o.seconds
        );
        writeln!(out, "{}", line.trim_end())?;
    }
    let count = |v: Verdict| outcomes.iter().filter(|o| o.verdict == v).count();
    let unexpected = outcomes
        .iter()
        .filter(|o| o.as_expected() == Some(false))
        .count();
    writeln!(
        out,
        "{} targets{}: {} passed, {} failed, {} errors{} ({:.1} s, -j {})",
        outcomes.len(),
        info.shard
            .as_deref()
            .map(|s| format!(" (shard {s} of {})", info.listed))
            .unwrap_or_default(),
        count(Verdict::Pass),
        count(Verdict::Fail),
        count(Verdict::Error),
        if info.expect {
            format!("; {unexpected} not as expected")
        } else {
            String::new()
        },
        info.seconds,
        info.jobs
    )?;
    let names: Vec<String> = files.iter().map(|f| path(f)).collect();
    writeln!(out, "{}", names.join(", "))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::wide::list::Overrides;

    fn outcome(name: &str, verdict: Verdict, expect: Option<Expected>) -> Outcome {
        Outcome {
            target: Target {
                name: name.into(),
                config: "m.toml".into(),
                elf: None,
                script: None,
                expect,
                overrides: Overrides::default(),
            },
            script: "s.rhai".into(),
            dir: format!("/nonexistent/{name}").into(),
            verdict,
            exit: None,
            seconds: 1.0,
            error: (verdict == Verdict::Error).then(|| "timed out <here>".into()),
            own_junit: false,
        }
    }

    #[test]
    fn exit_codes_follow_the_contract_with_and_without_expectations() {
        let pass = outcome("a", Verdict::Pass, Some(Expected::Pass));
        let fail_expected = outcome("b", Verdict::Fail, Some(Expected::Fail));
        let fail_unexpected = outcome("c", Verdict::Fail, Some(Expected::Pass));
        let error = outcome("d", Verdict::Error, Some(Expected::Fail));
        assert_eq!(exit_code(std::slice::from_ref(&pass), false), 0);
        assert_eq!(exit_code(&[pass.clone(), fail_expected.clone()], false), 1);
        assert_eq!(exit_code(&[pass.clone(), fail_expected.clone()], true), 0);
        assert_eq!(exit_code(&[pass.clone(), fail_unexpected], true), 1);
        assert_eq!(exit_code(&[pass, fail_expected, error], true), 2);
    }

    #[test]
    fn a_child_suite_is_renamed_and_counted_and_a_missing_one_is_an_error_suite() {
        let child = "<?xml version=\"1.0\"?>\n<testsuites name=\"memlife\" tests=\"2\">\n  <testsuite name=\"memlife.lifecycle\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\">\n    <testcase name=\"leak\" classname=\"memlife.lifecycle\"/>\n  </testsuite>\n</testsuites>\n";
        let (suite, counts) = own_suite(child, "leak-on-switch").unwrap();
        assert!(suite.starts_with("  <testsuite name=\"leak-on-switch\" tests=\"2\""));
        assert!(
            suite.contains(
                "<testcase name=\"leak\" classname=\"leak-on-switch.memlife.lifecycle\"/>"
            )
        );
        assert_eq!(counts, [2, 1, 0]);
        let merged = junit(&[outcome("t", Verdict::Error, None)], 2.0);
        assert!(merged.contains("<testsuite name=\"t\" tests=\"1\" failures=\"0\" errors=\"1\""));
        assert!(merged.contains("timed out &lt;here&gt;"));
        assert!(
            merged.contains("<testsuites name=\"memlife\" tests=\"1\" failures=\"0\" errors=\"1\"")
        );
    }

    #[test]
    fn huge_counts_in_child_junits_saturate_instead_of_overflowing() {
        let dir = std::env::temp_dir().join(format!("memlife-merge-{}", std::process::id()));
        let mut outcomes = Vec::new();
        for name in ["a", "b"] {
            std::fs::create_dir_all(dir.join(name)).unwrap();
            std::fs::write(
                dir.join(name).join("junit.xml"),
                format!(
                    "<testsuite name=\"x\" tests=\"{max}\" failures=\"{max}\" errors=\"0\"></testsuite>",
                    max = u64::MAX
                ),
            )
            .unwrap();
            let mut o = outcome(name, Verdict::Fail, None);
            o.dir = dir.join(name);
            o.own_junit = true;
            outcomes.push(o);
        }
        let merged = junit(&outcomes, 1.0);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            merged.contains(&format!("tests=\"{}\" failures", u64::MAX)),
            "{merged}"
        );
    }

    #[test]
    fn a_child_junit_with_the_close_before_the_open_is_no_suite() {
        let bad = "</testsuite>\n<testsuite name=\"x\" tests=\"1\" failures=\"0\" errors=\"0\">";
        assert!(own_suite(bad, "t").is_none());
    }

    #[test]
    fn the_summary_says_running_interrupted_or_finished_with_the_exit_memlife_gives() {
        let info = RunInfo {
            jobs: 1,
            shard: None,
            listed: 1,
            seconds: 1.0,
            expect: false,
        };
        let done = [outcome("a", Verdict::Fail, None)];
        let got = |state| {
            let v = summary(&done, &info, state);
            (
                v["finished"].clone(),
                v["interrupted"].clone(),
                v["exit"].clone(),
            )
        };
        assert_eq!(
            got(RunState::Running),
            (false.into(), false.into(), Value::Null)
        );
        assert_eq!(
            got(RunState::Interrupted),
            (false.into(), true.into(), 130.into())
        );
        assert_eq!(
            got(RunState::Finished),
            (true.into(), false.into(), 1.into())
        );
    }
}
