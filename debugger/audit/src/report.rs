//! The audit report: one document with everything an audit recorded, put together in one place
//! ([`AuditReport::assemble`]) and written as JSON. Its other forms (JUnit XML, the HTML page,
//! the Perfetto trace) are rendered from it by `memlife-render`.

use std::path::Path;

use serde::Serialize;

use crate::config::PeakMethod;
use std::collections::BTreeMap;

use crate::model::{CheckResult, HeapMap, PhaseRecord, TraceEvent, Verdict};
use memlife_core::output::{WriteError, write_atomic};

use crate::debugger::Debugger;
use crate::script::{ScriptError, ScriptOutcome};

/// Facts about the run.
#[derive(Debug, Clone, Serialize, Default)]
pub struct RunFacts {
    /// memlife version.
    pub memlife: String,
    /// When the audit started (RFC 3339, UTC).
    pub date: String,
    /// Firmware ELF.
    pub elf: String,
    /// Allocator walked.
    pub allocator: String,
    /// Target description.
    pub target: String,
    /// Board or machine.
    pub board: Option<String>,
    /// The script.
    pub script: String,
    /// Heap capacity in bytes.
    pub heap_size: u64,
    /// Seconds the audit took.
    pub seconds: f64,
    /// Breakpoint stops handled.
    pub stops: u64,
    /// Resumes from a breakpoint done by executing its instruction on the host.
    pub emulated: u64,
    /// Resumes from a breakpoint that needed a single step.
    pub stepped: u64,
    /// Breakpoints armed at most, the target's limit, and the estimate before the run.
    pub breakpoints: crate::debugger::BreakpointUse,
}

/// All checks of one name, folded.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct CheckSummary {
    /// Name.
    pub name: String,
    /// Fail if any call failed, else warn if any warned, else pass.
    pub verdict: Verdict,
    /// The first failing (or warning, or last) message.
    pub message: String,
    /// Calls, and how many failed.
    pub calls: usize,
    /// Failed calls.
    pub failures: usize,
    /// Line of the first failing call.
    pub line: Option<usize>,
}

/// Everything an audit recorded.
#[derive(Debug, Clone, Serialize)]
pub struct AuditReport {
    /// Facts.
    pub run: RunFacts,
    /// Peak method.
    pub method: PeakMethod,
    /// Checks by name.
    pub checks: Vec<CheckSummary>,
    /// Every check call.
    pub check_calls: Vec<CheckResult>,
    /// Phases in order.
    pub phases: Vec<PhaseRecord>,
    /// Trace events (allocations and frees), but for those of folded cycles.
    pub events: Vec<TraceEvent>,
    /// Totals over the whole run, folded cycles included: phase calls, events, allocations and
    /// frees and their bytes.
    pub totals: crate::history::Totals,
    /// Observed cycles completed.
    pub cycles: u64,
    /// The cycles folded out of the middle of a long run (`--keep-cycles`): their exact totals,
    /// per-function figures and a decimated per-cycle series. Absent when every cycle is kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folded: Option<crate::history::Folded>,
    /// Heap dumps written.
    pub dumps: Vec<String>,
    /// Phase aliases to functions (`load` → `model_load`), to tell a phase's role.
    pub phase_aliases: BTreeMap<String, String>,
    /// Names of span arguments by span function (`op_init` → operator names), given by the
    /// script with `t.label_spans`.
    pub labels: BTreeMap<String, Vec<String>>,
    /// `memlife.toml` `[components]`: a function or `file:line` site to a component name. The
    /// HTML report colours blocks by it (`composition::component_of`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub components: BTreeMap<String, String>,
    /// The heap after the last release, block by block, leaked blocks marked.
    pub heap_map: Option<HeapMap>,
    /// Blocks allocated in one cycle and freed in a later one: late frees, not leaks. The first
    /// 1000 (`crate::deferred::MAX_LISTED`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deferred: Vec<crate::deferred::DeferredBlock>,
    /// Late frees past those listed in `deferred`.
    #[serde(skip_serializing_if = "is_zero")]
    pub deferred_unlisted: u64,
    /// Allocations memlife made fail (`t.fail_alloc`), with what the phase returned.
    pub injected: Vec<crate::debugger::Injected>,
    /// The error that stopped the audit.
    pub error: Option<ScriptError>,
    /// 0 all passed, 1 a check failed, 2 error.
    pub exit_code: i32,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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

/// What the caller of an audit knows about the run that the engine does not.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// When the audit started (RFC 3339, UTC; [`now_rfc3339`]).
    pub date: String,
    /// When the audit started, for its duration.
    pub started: std::time::Instant,
    /// Firmware ELF, as given.
    pub elf: String,
    /// Target description, taken before the engine held the target.
    pub target: String,
    /// Board or machine, when known.
    pub board: Option<String>,
    /// The script, as given.
    pub script: String,
    /// Peak method.
    pub method: PeakMethod,
    /// Phase aliases to functions.
    pub phase_aliases: BTreeMap<String, String>,
}

impl RunContext {
    /// Facts with what the engine reports left empty (for [`AuditReport::unfinished`]).
    fn facts(&self) -> RunFacts {
        RunFacts {
            memlife: env!("CARGO_PKG_VERSION").to_string(),
            date: self.date.clone(),
            elf: self.elf.clone(),
            target: self.target.clone(),
            board: self.board.clone(),
            script: self.script.clone(),
            seconds: self.started.elapsed().as_secs_f64(),
            ..RunFacts::default()
        }
    }
}

impl AuditReport {
    /// The report of a finished run (passed, failed or stopped by a script error), from the
    /// engine after the script and what the script recorded. The one place a report is put
    /// together: `memlife audit` and `monitor audit` both call it.
    pub fn assemble(ctx: &RunContext, debugger: &Debugger, outcome: &ScriptOutcome) -> Self {
        let checks = summarize(&outcome.checks);
        let exit_code = Self::exit_code_for(&checks, outcome.error.as_ref());
        let (deferred, deferred_unlisted) = debugger.deferred();
        AuditReport {
            run: RunFacts {
                allocator: debugger.allocator().to_string(),
                heap_size: debugger.heap_size(),
                stops: debugger.progress().stops,
                emulated: debugger.emulated(),
                stepped: debugger.stepped(),
                breakpoints: debugger.breakpoint_use(),
                ..ctx.facts()
            },
            method: ctx.method,
            checks,
            check_calls: outcome.checks.clone(),
            phases: debugger.records().to_vec(),
            events: debugger.events().to_vec(),
            totals: debugger.totals(),
            cycles: debugger.cycles_done(),
            folded: debugger.folded_report(),
            dumps: outcome
                .dumps
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            phase_aliases: ctx.phase_aliases.clone(),
            labels: debugger.labels().clone(),
            components: debugger.config().components.clone(),
            heap_map: debugger.heap_map().map(|mut map| {
                crate::deferred::mark_heap_map(&mut map, &deferred);
                map
            }),
            deferred,
            deferred_unlisted,
            injected: debugger.injected().to_vec(),
            error: outcome.error.clone(),
            exit_code,
        }
    }

    /// The report of a run that has not finished: written in place of each output when an
    /// audit starts, so that a run that is interrupted or crashes leaves no earlier run's
    /// result behind, but a report that says so (exit code 2, an error, no checks).
    pub fn unfinished(ctx: &RunContext) -> Self {
        Self::without_results(
            ctx,
            format!(
                "the audit started at {} has not finished: it is running, or it was interrupted or crashed before writing its results",
                ctx.date
            ),
        )
    }

    /// The report of a run that stopped before the script could run (the target could not be
    /// reached, the allocator not found...): no checks, exit code 2, `message` as the error.
    pub fn without_results(ctx: &RunContext, message: String) -> Self {
        AuditReport {
            run: ctx.facts(),
            method: ctx.method,
            checks: Vec::new(),
            check_calls: Vec::new(),
            phases: Vec::new(),
            events: Vec::new(),
            totals: crate::history::Totals::default(),
            cycles: 0,
            folded: None,
            dumps: Vec::new(),
            phase_aliases: ctx.phase_aliases.clone(),
            labels: BTreeMap::new(),
            components: BTreeMap::new(),
            heap_map: None,
            deferred: Vec::new(),
            deferred_unlisted: 0,
            injected: Vec::new(),
            error: Some(ScriptError {
                message,
                line: None,
                column: None,
            }),
            exit_code: 2,
        }
    }

    /// The exit code for these checks and error: 2 on error, 1 when a check failed, else 0.
    pub fn exit_code_for(checks: &[CheckSummary], error: Option<&ScriptError>) -> i32 {
        if error.is_some() {
            2
        } else if checks.iter().any(|c| c.verdict == Verdict::Fail) {
            1
        } else {
            0
        }
    }

    /// The traced blocks allocated and not freed up to event `until` (inclusive), replayed from
    /// the first kept event, or across the folded cycles from the blocks live at their end.
    pub fn live_at(&self, until: u64) -> Vec<&TraceEvent> {
        let Some(f) = self.folded.as_ref().filter(|f| until >= f.seq_end) else {
            return crate::composition::live_blocks(&self.events, 0, until);
        };
        let mut live: BTreeMap<u64, &TraceEvent> =
            f.live_after.iter().map(|e| (e.addr, e)).collect();
        let after = self.events.partition_point(|e| e.seq < f.seq_end);
        crate::composition::replay(
            &mut live,
            self.events[after..].iter().take_while(|e| e.seq <= until),
        );
        live.into_values().collect()
    }

    /// Writes the JSON report atomically.
    pub fn write_json(&self, path: &Path) -> Result<(), WriteError> {
        let json = serde_json::to_vec_pretty(self).map_err(|e| WriteError {
            path: path.to_path_buf(),
            source: e.into(),
        })?;
        write_atomic(path, &json)
    }
}

/// UTC now as RFC 3339, without a date crate: days since the epoch to a civil date.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn call(name: &str, verdict: Verdict, msg: &str) -> CheckResult {
        CheckResult {
            name: name.into(),
            verdict,
            message: msg.into(),
            line: Some(3),
        }
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_790), (2026, 12, 3));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn folds_checks_by_name() {
        let s = summarize(&[
            call("leak", Verdict::Pass, "ok 1"),
            call("leak", Verdict::Fail, "lost 396 B"),
            call("leak", Verdict::Fail, "lost 792 B"),
            call("fragmentation", Verdict::Warn, "0.55"),
            call("fragmentation", Verdict::Pass, "0.7"),
        ]);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].verdict, Verdict::Fail);
        assert_eq!(s[0].message, "lost 396 B");
        assert_eq!((s[0].calls, s[0].failures), (3, 2));
        assert_eq!(s[1].verdict, Verdict::Warn);
        assert_eq!(AuditReport::exit_code_for(&s, None), 1);
        assert_eq!(AuditReport::exit_code_for(&s[1..], None), 0);
    }

    #[test]
    fn an_unfinished_report_is_an_error_not_a_pass() {
        let ctx = RunContext {
            date: "2026-05-01T10:00:00Z".into(),
            started: std::time::Instant::now(),
            elf: "fw.elf".into(),
            target: "gdb-remote 127.0.0.1:1234".into(),
            board: None,
            script: "scripts/leak.rhai".into(),
            method: PeakMethod::Trace,
            phase_aliases: BTreeMap::new(),
        };
        let r = AuditReport::unfinished(&ctx);
        assert_eq!(r.exit_code, 2);
        assert!(r.checks.is_empty());
        let message = &r.error.as_ref().unwrap().message;
        assert!(message.contains("2026-05-01T10:00:00Z") && message.contains("not finished"));
        let json: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert_eq!(json["exit_code"], 2);
        assert_eq!(json["run"]["elf"], "fw.elf");
    }
}
