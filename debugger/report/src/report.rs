//! The audit report: one document with everything an audit recorded, put together in one place
//! ([`AuditReport::assemble`]) and written as JSON ([`AuditReport::write_json`]); read back by
//! [`AuditReport::from_slice`] (see [`crate::read`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use memlife_core::output::{WriteError, write_atomic};

use crate::model::{
    ArenaRecord, CheckResult, CheckSummary, DeferredBlock, FirmwareTime, Folded, HeapMap,
    InjectedFailure, ModelCycles, PeakMethod, PhaseRecord, RunFacts, ScriptError, TaskRecord,
    Totals, TraceEvent, TraceFacts, Verdict, summarize,
};

/// Everything an audit recorded.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(default)]
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
    pub totals: Totals,
    /// Observed cycles completed.
    pub cycles: u64,
    /// The cycles folded out of the middle of a long run (`--keep-cycles`): their exact totals,
    /// per-function figures and a decimated per-cycle series. Absent when every cycle is kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folded: Option<Folded>,
    /// Heap dumps written.
    pub dumps: Vec<String>,
    /// Phase aliases to functions (`load` → `model_load`), to tell a phase's role.
    pub phase_aliases: BTreeMap<String, String>,
    /// Names of span arguments by span function (`op_init` → operator names), given by the
    /// script with `t.label_spans`.
    pub labels: BTreeMap<String, Vec<String>>,
    /// `memlife.toml` `[components]`: a function or `file:line` site to a component name. The
    /// HTML report colours blocks by it ([`crate::views::composition::component_of`]).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub components: BTreeMap<String, String>,
    /// The heap after the last release, block by block, leaked blocks marked.
    pub heap_map: Option<HeapMap>,
    /// Blocks allocated in one cycle and freed in a later one: late frees, not leaks. The first
    /// 1000 ([`crate::model::MAX_LISTED`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deferred: Vec<DeferredBlock>,
    /// Late frees past those listed in `deferred`.
    #[serde(skip_serializing_if = "is_zero")]
    pub deferred_unlisted: u64,
    /// Allocations memlife made fail (`t.fail_alloc`), with what the phase returned.
    pub injected: Vec<InjectedFailure>,
    /// An RTOS firmware's tasks: what each allocated and freed, what it still held at the end,
    /// its least stack margin. Absent without an RTOS.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<TaskRecord>,
    /// TensorFlow Lite Micro's arenas observed while they were built (firmware with TFLM).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arenas: Option<ArenaRecord>,
    /// Allocations made to fail past those listed in `injected` (a script that fails
    /// allocations in a loop).
    #[serde(skip_serializing_if = "is_zero")]
    pub injected_unlisted: u64,
    /// The observed cycles by model, where the firmware alternates between models (at least
    /// two seen): what each model's cycles lost.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelCycles>,
    /// The error that stopped the audit.
    pub error: Option<ScriptError>,
    /// 0 all passed, 1 a check failed, 2 error.
    pub exit_code: i32,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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

/// What the engine recorded over a run, handed over at its end (`memlife_audit` makes one from
/// its `Debugger`).
#[derive(Debug, Clone, Default)]
pub struct EngineRecord {
    /// Allocator walked.
    pub allocator: String,
    /// Heap capacity in bytes.
    pub heap_size: u64,
    /// Breakpoint stops handled.
    pub stops: u64,
    /// Resumes done on the host.
    pub emulated: u64,
    /// Resumes that needed a single step.
    pub stepped: u64,
    /// Breakpoints armed at most, the target's limit, the estimate.
    pub breakpoints: crate::model::BreakpointUse,
    /// What the allocation trace recorded, and why.
    pub trace: TraceFacts,
    /// How long the firmware ran and was held halted.
    pub firmware_time: Option<FirmwareTime>,
    /// Phase records kept.
    pub phases: Vec<PhaseRecord>,
    /// Trace events kept.
    pub events: Vec<TraceEvent>,
    /// Totals over the whole run.
    pub totals: Totals,
    /// Observed cycles completed.
    pub cycles: u64,
    /// The folded cycles, with the blocks live at their end.
    pub folded: Option<Folded>,
    /// Span argument names by span function.
    pub labels: BTreeMap<String, Vec<String>>,
    /// `[components]`.
    pub components: BTreeMap<String, String>,
    /// The heap after the last release, late frees already told apart from leaks.
    pub heap_map: Option<HeapMap>,
    /// Late frees listed.
    pub deferred: Vec<DeferredBlock>,
    /// Late frees past those listed.
    pub deferred_unlisted: u64,
    /// Allocations made to fail.
    pub injected: Vec<InjectedFailure>,
    /// An RTOS firmware's tasks.
    pub tasks: Vec<TaskRecord>,
    /// TFLM's arenas, when the firmware has TFLM.
    pub arenas: Option<ArenaRecord>,
    /// Allocations made to fail past those listed.
    pub injected_unlisted: u64,
    /// The observed cycles by model (at least two models).
    pub models: Vec<ModelCycles>,
}

/// What the script recorded.
#[derive(Debug, Clone, Default)]
pub struct ScriptRecord {
    /// Check calls in the order recorded.
    pub checks: Vec<CheckResult>,
    /// Files written by `dump`, as paths.
    pub dumps: Vec<String>,
    /// The error that stopped the script, if any.
    pub error: Option<ScriptError>,
}

impl AuditReport {
    /// The report of a finished run (passed, failed or stopped by a script error), from what
    /// the engine and the script recorded. The one place a report is put together: `memlife
    /// audit` and `monitor audit` both call it.
    pub fn assemble(
        ctx: &RunContext,
        engine: impl Into<EngineRecord>,
        script: impl Into<ScriptRecord>,
    ) -> Self {
        let (engine, script) = (engine.into(), script.into());
        let checks = summarize(&script.checks);
        let exit_code = Self::exit_code_for(&checks, script.error.as_ref());
        AuditReport {
            run: RunFacts {
                allocator: engine.allocator,
                heap_size: engine.heap_size,
                stops: engine.stops,
                emulated: engine.emulated,
                stepped: engine.stepped,
                breakpoints: engine.breakpoints,
                trace: engine.trace,
                firmware_time: engine.firmware_time,
                ..ctx.facts()
            },
            method: ctx.method,
            checks,
            check_calls: script.checks,
            phases: engine.phases,
            events: engine.events,
            totals: engine.totals,
            cycles: engine.cycles,
            folded: engine.folded,
            dumps: script.dumps,
            phase_aliases: ctx.phase_aliases.clone(),
            labels: engine.labels,
            components: engine.components,
            heap_map: engine.heap_map,
            deferred: engine.deferred,
            deferred_unlisted: engine.deferred_unlisted,
            injected: engine.injected,
            tasks: engine.tasks,
            arenas: engine.arenas,
            injected_unlisted: engine.injected_unlisted,
            models: engine.models,
            error: script.error,
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
            phase_aliases: ctx.phase_aliases.clone(),
            error: Some(ScriptError {
                message,
                line: None,
                column: None,
            }),
            exit_code: 2,
            ..AuditReport::default()
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

    /// Checks that were not run (their verdict is [`Verdict::Skip`]).
    pub fn skipped(&self) -> usize {
        self.checks
            .iter()
            .filter(|c| c.verdict == Verdict::Skip)
            .count()
    }

    /// A skipped check fails the audit as a failed one does (`--fail-on-skip`): the exit code
    /// is at least 1 when a check was skipped; an error's 2 stays.
    pub fn fail_on_skip(&mut self) {
        if self.skipped() > 0 {
            self.exit_code = self.exit_code.max(1);
        }
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

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_790), (2026, 12, 3));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    fn context() -> RunContext {
        RunContext {
            date: "2026-05-01T10:00:00Z".into(),
            started: std::time::Instant::now(),
            elf: "fw.elf".into(),
            target: "gdb-remote 127.0.0.1:1234".into(),
            board: None,
            script: "scripts/leak.rhai".into(),
            method: PeakMethod::Trace,
            phase_aliases: BTreeMap::new(),
        }
    }

    #[test]
    fn an_unfinished_report_is_an_error_not_a_pass() {
        let r = AuditReport::unfinished(&context());
        assert_eq!(r.exit_code, 2);
        assert!(r.checks.is_empty());
        let message = &r.error.as_ref().unwrap().message;
        assert!(message.contains("2026-05-01T10:00:00Z") && message.contains("not finished"));
        let json: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert_eq!(json["exit_code"], 2);
        assert_eq!(json["run"]["elf"], "fw.elf");
    }

    #[test]
    fn an_assembled_report_takes_the_engines_facts_and_the_scripts_verdict() {
        let engine = EngineRecord {
            allocator: "freertos-heap4".into(),
            heap_size: 98_304,
            stops: 12,
            trace: TraceFacts {
                allocations: true,
                scope: "phases".into(),
                ..TraceFacts::default()
            },
            firmware_time: Some(FirmwareTime::new(1.0, 0.25, 12, 3.0, None)),
            ..EngineRecord::default()
        };
        let script = ScriptRecord {
            checks: vec![CheckResult {
                name: "leak".into(),
                verdict: Verdict::Fail,
                message: "lost 368 B".into(),
                line: Some(4),
            }],
            ..ScriptRecord::default()
        };
        let r = AuditReport::assemble(&context(), engine, script);
        assert_eq!(
            (r.run.allocator.as_str(), r.run.heap_size, r.run.stops),
            ("freertos-heap4", 98_304, 12)
        );
        assert_eq!(r.run.elf, "fw.elf");
        assert!(r.run.trace.allocations && r.run.trace.scope == "phases");
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["run"]["firmware_time"]["halted_per_second"], 0.25);
        assert_eq!(
            (r.checks.len(), r.check_calls.len(), r.exit_code),
            (1, 1, 1)
        );
    }

    fn check_call(name: &str, verdict: Verdict, msg: &str) -> CheckResult {
        CheckResult {
            name: name.into(),
            verdict,
            message: msg.into(),
            line: Some(3),
        }
    }

    #[test]
    fn folds_checks_by_name() {
        let s = summarize(&[
            check_call("leak", Verdict::Pass, "ok 1"),
            check_call("leak", Verdict::Fail, "lost 396 B"),
            check_call("leak", Verdict::Fail, "lost 792 B"),
            check_call("fragmentation", Verdict::Warn, "0.55"),
            check_call("fragmentation", Verdict::Pass, "0.7"),
        ]);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].verdict, Verdict::Fail);
        assert_eq!(s[0].message, "lost 396 B");
        assert_eq!((s[0].calls, s[0].failures), (3, 2));
        assert_eq!(s[1].verdict, Verdict::Warn);
        assert_eq!(
            AuditReport::exit_code_for(&s, None),
            1,
            "a failed check fails the audit"
        );
        assert_eq!(AuditReport::exit_code_for(&s[1..], None), 0);
    }
}
