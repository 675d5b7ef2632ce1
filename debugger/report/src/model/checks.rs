//! What the script decided: each check call, the checks folded by name, and the error that
//! stopped the script, if one did.

use serde::{Deserialize, Serialize};

/// One named result of a script.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CheckResult {
    /// Name (the JUnit test case).
    #[serde(default)]
    pub name: String,
    /// `pass`, `fail` or `warn`.
    pub verdict: Verdict,
    /// What, where and how much.
    #[serde(default)]
    pub message: String,
    /// Script line that recorded it.
    #[serde(default)]
    pub line: Option<usize>,
}

/// The outcome of a check.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Passed.
    Pass,
    /// Failed.
    Fail,
    /// A warning: reported, not failing.
    Warn,
    /// Not run: the configuration lacks what the check needs (the message says what to add).
    Skip,
}

impl Verdict {
    /// The name the JSON report uses (`pass`).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Warn => "warn",
            Verdict::Skip => "skip",
        }
    }

    /// The word a check's line starts with (`PASS`, `FAIL`, `WARN`, `SKIP`).
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Warn => "WARN",
            Verdict::Skip => "SKIP",
        }
    }
}

/// All checks of one name, folded. Read back, every field but `verdict` may be missing.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CheckSummary {
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Fail if any call failed, else warn if any warned, else pass.
    pub verdict: Verdict,
    /// The first failing (or warning, or last) message.
    #[serde(default)]
    pub message: String,
    /// Calls, and how many failed.
    #[serde(default)]
    pub calls: usize,
    /// Failed calls.
    #[serde(default)]
    pub failures: usize,
    /// Line of the first failing call.
    #[serde(default)]
    pub line: Option<usize>,
}

/// Folds check calls by name, keeping first-appearance order.
pub fn summarize(calls: &[CheckResult]) -> Vec<CheckSummary> {
    let mut out: Vec<CheckSummary> = Vec::new();
    for c in calls {
        let idx = match out.iter().position(|s| s.name == c.name) {
            Some(i) => i,
            None => {
                out.push(CheckSummary {
                    name: c.name.clone(),
                    verdict: Verdict::Pass,
                    message: String::new(),
                    calls: 0,
                    failures: 0,
                    line: None,
                });
                out.len() - 1
            }
        };
        let s = &mut out[idx];
        s.calls += 1;
        match c.verdict {
            Verdict::Fail => {
                s.failures += 1;
                if s.verdict != Verdict::Fail {
                    s.verdict = Verdict::Fail;
                    s.message = c.message.clone();
                    s.line = c.line;
                }
            }
            Verdict::Warn if s.verdict == Verdict::Pass => {
                s.verdict = Verdict::Warn;
                s.message = c.message.clone();
                s.line = c.line;
            }
            Verdict::Skip if s.calls == 1 => {
                s.verdict = Verdict::Skip;
                s.message = c.message.clone();
                s.line = c.line;
            }
            _ if s.verdict == Verdict::Pass => s.message = c.message.clone(),
            _ => {}
        }
    }
    out
}

/// Where an audit script failed (or, in a report, what stopped the audit).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ScriptError {
    /// What went wrong.
    pub message: String,
    /// Line (1-based).
    pub line: Option<usize>,
    /// Column (1-based).
    pub column: Option<usize>,
}

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "line {l}, column {c}: {}", self.message),
            (Some(l), None) => write!(f, "line {l}: {}", self.message),
            _ => write!(f, "{}", self.message),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn verdicts_are_named_as_the_json_names_them() {
        for v in [Verdict::Pass, Verdict::Fail, Verdict::Warn, Verdict::Skip] {
            assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
        }
    }
}
