//! The audit JSON report as the diff reads it: only the fields it compares, each with a default,
//! so that a report from an older or newer memlife (fields added, fields missing) still reads.
//! Unknown fields are ignored.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::DiffError;

/// Facts about the run.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RunFacts {
    /// Firmware ELF.
    pub elf: String,
    /// Allocator walked.
    pub allocator: String,
    /// Heap capacity in bytes.
    pub heap_size: u64,
    /// The script.
    pub script: String,
    /// When the audit started.
    pub date: String,
}

/// A heap summary at a phase boundary.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Summary {
    /// Free bytes.
    pub free: u64,
    /// Used bytes.
    pub used: u64,
    /// Largest free block.
    pub largest_free: u64,
    /// largest_free / free.
    pub largest_free_ratio: Option<f64>,
    /// The allocator's low-water mark of free bytes.
    pub min_ever_free: Option<u64>,
    /// Free blocks.
    pub free_blocks: u64,
    /// Used blocks.
    pub used_blocks: u64,
    /// ok / busy / corrupt / uninitialised.
    pub status: String,
}

/// Where an allocation was made.
#[derive(
    Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq, Eq, Hash, PartialOrd, Ord,
)]
#[serde(default)]
pub struct Site {
    /// Function.
    pub function: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Line.
    pub line: Option<u32>,
    /// Callers, innermost first, as `function (file:line)`.
    pub chain: Vec<String>,
}

impl Site {
    /// `build_graph (engine.c:51)`.
    pub fn describe(&self) -> String {
        let f = self.function.as_deref().unwrap_or("??");
        match (&self.file, self.line) {
            (Some(file), Some(line)) => format!("{f} ({file}:{line})"),
            _ => f.to_string(),
        }
    }

    /// `engine.c:51`, or the function when the line is unknown.
    pub fn location(&self) -> String {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => format!("{file}:{line}"),
            _ => self.function.clone().unwrap_or_else(|| "??".into()),
        }
    }

    /// The call chain's functions without their locations: what stays the same when a line
    /// moves.
    pub fn chain_functions(&self) -> Vec<&str> {
        self.chain
            .iter()
            .map(|c| c.rsplit_once(" (").map_or(c.as_str(), |(f, _)| f))
            .collect()
    }
}

/// Where a phase's peak happened.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PeakAt {
    /// The span running (`op_invoke#12`).
    pub span: Option<String>,
    /// Its position in the phase.
    pub span_index: Option<usize>,
    /// Its second argument (the operator or layer index).
    pub span_arg1: Option<u64>,
    /// The allocation that reached the peak.
    pub site: Option<Site>,
}

/// A nested call inside a phase.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Span {
    /// Function.
    pub function: String,
    /// Position among the phase's spans.
    pub index: usize,
    /// r0..r3 at entry.
    pub args: Vec<u64>,
    /// Used bytes at entry.
    pub before_used: u64,
    /// Used bytes at return.
    pub after_used: u64,
    /// after - before.
    pub delta: i64,
    /// Highest used bytes inside.
    pub peak_used: u64,
    /// Trace events with `seq_begin <= seq < seq_end` happened inside.
    pub seq_begin: u64,
    /// One past the last event inside.
    pub seq_end: u64,
}

impl Span {
    /// Highest used bytes inside above the entry: the layer's transient high.
    pub fn transient(&self) -> u64 {
        self.peak_used.saturating_sub(self.before_used)
    }
}

/// One call of a phase function.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Phase {
    /// The function.
    pub function: String,
    /// The role alias (`load`), if any.
    pub alias: Option<String>,
    /// Which call of the function (1-based).
    pub call: u64,
    /// The heap at entry.
    pub before: Summary,
    /// The heap at return.
    pub after: Summary,
    /// after.used - before.used.
    pub delta_used: i64,
    /// Highest used bytes inside.
    pub peak_used: u64,
    /// peak_used - before.used.
    pub peak_above_before: u64,
    /// Where the peak happened.
    pub peak_at: Option<PeakAt>,
    /// Nested calls.
    pub spans: Vec<Span>,
    /// Allocations traced inside.
    pub allocs: u64,
    /// Frees traced inside.
    pub frees: u64,
    /// Trace events with `seq_begin <= seq < seq_end` happened inside.
    pub seq_begin: u64,
    /// One past the last event inside.
    pub seq_end: u64,
    /// The cycle (1-based) the audit observed this call in, when the script observed cycles.
    pub cycle: Option<u64>,
}

/// One traced allocator call.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Event {
    /// Sequence number.
    pub seq: u64,
    /// `alloc` or `free`.
    pub kind: String,
    /// Block address.
    pub addr: u64,
    /// Block size.
    pub size: u64,
    /// Used bytes after the event.
    pub used_after: u64,
    /// The phase function running.
    pub phase: Option<String>,
    /// Where it was called from.
    pub site: Site,
}

/// One block of the heap after the last release.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct MapBlock {
    /// Address.
    pub addr: u64,
    /// Size.
    pub size: u64,
    /// On the free list.
    pub free: bool,
    /// Never handed out (newlib).
    pub unclaimed: bool,
    /// Left behind by the lifecycle.
    pub leaked: bool,
    /// Where it was allocated.
    pub site: Option<Site>,
}

/// The heap after the last release.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct HeapMap {
    /// The phase call it was walked at.
    pub at: String,
    /// First address.
    pub heap_start: u64,
    /// Size.
    pub heap_size: u64,
    /// Figures.
    pub summary: Summary,
    /// Leaked blocks.
    pub leaked_blocks: u64,
    /// Their bytes.
    pub leaked_bytes: u64,
    /// Every block in address order.
    pub blocks: Vec<MapBlock>,
}

/// The error that stopped an audit.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RunError {
    /// What.
    pub message: String,
}

/// One check, folded by name.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Check {
    /// Name.
    pub name: String,
    /// pass / fail / warn / skip.
    pub verdict: String,
    /// Message.
    pub message: String,
}

/// The cycles a long run folded out of its middle (`folded` in the audit JSON).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct FoldedCycles {
    /// First folded cycle.
    pub first_cycle: u64,
    /// Last folded cycle.
    pub last_cycle: u64,
}

/// An audit JSON report.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AuditRun {
    /// Facts.
    pub run: RunFacts,
    /// Checks by name.
    pub checks: Vec<Check>,
    /// Phases in order.
    pub phases: Vec<Phase>,
    /// Trace events.
    pub events: Vec<Event>,
    /// Role aliases to functions.
    pub phase_aliases: BTreeMap<String, String>,
    /// Span argument names by span function.
    pub labels: BTreeMap<String, Vec<String>>,
    /// The heap after the last release.
    pub heap_map: Option<HeapMap>,
    /// Observed cycles completed (0 in reports that predate it).
    pub cycles: u64,
    /// The cycles a long run folded: its phases and events leave them out.
    pub folded: Option<FoldedCycles>,
    /// The error that stopped the audit.
    pub error: Option<RunError>,
    /// The audit's exit code.
    pub exit_code: Option<i32>,
}

impl AuditRun {
    /// Reads a report; `which` names it in errors (`BASE.json`). A file that is not an audit
    /// report, or the report of an audit that recorded no phase, is an error that says so.
    pub fn parse(bytes: &[u8], which: &str) -> Result<Self, DiffError> {
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| DiffError::NotAReport {
                which: which.to_string(),
                reason: format!("not JSON: {e}"),
            })?;
        Self::from_value(value, which)
    }

    /// As [`AuditRun::parse`], from a JSON value (`memlife audit --baseline` diffs the report
    /// it just made without writing it first).
    pub fn from_value(value: serde_json::Value, which: &str) -> Result<Self, DiffError> {
        let not = |reason: String| DiffError::NotAReport {
            which: which.to_string(),
            reason,
        };
        let obj = value
            .as_object()
            .ok_or_else(|| not("not a JSON object".into()))?;
        for key in ["run", "phases"] {
            if !obj.contains_key(key) {
                return Err(not(format!(
                    "no `{key}` field: not a memlife audit JSON report (`memlife audit --json FILE` writes one)"
                )));
            }
        }
        let run: AuditRun =
            serde_json::from_value(value).map_err(|e| not(format!("unexpected content: {e}")))?;
        if run.phases.is_empty() {
            let why = run.error.as_ref().map_or_else(
                || "no phase was recorded".to_string(),
                |e| e.message.clone(),
            );
            return Err(DiffError::NoPhases {
                which: which.to_string(),
                reason: why,
            });
        }
        Ok(run)
    }

    /// The role of a phase: its alias, else the alias that names its function, else the
    /// function itself.
    pub fn role_of<'a>(&'a self, phase: &'a Phase) -> &'a str {
        if let Some(a) = phase.alias.as_deref() {
            return a;
        }
        self.role_of_function(&phase.function)
    }

    /// The role a phase function plays (its alias), or the function itself.
    pub fn role_of_function<'a>(&'a self, function: &'a str) -> &'a str {
        self.phase_aliases
            .iter()
            .find(|(_, f)| f.as_str() == function)
            .map_or(function, |(a, _)| a.as_str())
    }

    /// The water level: used bytes at every phase and span boundary and after every traced
    /// event, in order, one point per step (the same steps whether a phase allocated or not, so
    /// that two runs' curves line up).
    pub fn curve(&self) -> Vec<u64> {
        let mut out = Vec::new();
        for p in &self.phases {
            out.push(p.before.used);
            // (seq, order at that seq, used): a span's end before the next one's start, both
            // before the event with that number.
            let mut points: Vec<(u64, u8, u64)> = self
                .events
                .iter()
                .filter(|e| (p.seq_begin..p.seq_end).contains(&e.seq))
                .map(|e| (e.seq, 2, e.used_after))
                .collect();
            for s in &p.spans {
                points.push((s.seq_begin, 1, s.before_used));
                points.push((s.seq_end, 0, s.after_used));
            }
            points.sort_by_key(|&(seq, order, _)| (seq, order));
            out.extend(points.into_iter().map(|(_, _, used)| used));
            out.push(p.after.used);
        }
        out
    }

    /// The first phase of `role` that recorded spans.
    pub fn first_with_spans(&self, role: &str) -> Option<&Phase> {
        self.phases
            .iter()
            .find(|p| self.role_of(p) == role && !p.spans.is_empty())
    }

    /// The name of a span: the label the script gave its second argument, else `#index`.
    pub fn span_label(&self, span: &Span) -> Option<String> {
        let arg = *span.args.get(1)?;
        let names = self.labels.get(&span.function)?;
        usize::try_from(arg)
            .ok()
            .and_then(|i| names.get(i))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reads_a_minimal_report_and_ignores_unknown_fields() {
        let r = AuditRun::parse(
            br#"{"run": {"elf": "a.elf", "new_field": 1}, "phases": [{"function": "model_load", "alias": "load", "peak_above_before": 10, "lifecycle": {"x": 1}}]}"#,
            "BASE",
        )
        .unwrap();
        assert_eq!(r.phases[0].peak_above_before, 10);
        assert_eq!(r.role_of(&r.phases[0]), "load");
        assert!(r.heap_map.is_none());
    }

    #[test]
    fn refuses_what_is_not_a_report_and_a_run_without_phases() {
        let e = AuditRun::parse(b"[1]", "BASE.json")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("BASE.json") && e.contains("not a JSON object"),
            "{e}"
        );
        let e = AuditRun::parse(br#"{"name": "x"}"#, "HEAD.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no `run` field"), "{e}");
        let e = AuditRun::parse(
            br#"{"run": {}, "phases": [], "error": {"message": "cannot connect"}}"#,
            "HEAD.json",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("HEAD.json") && e.contains("cannot connect"),
            "{e}"
        );
    }

    #[test]
    fn the_curve_follows_events_inside_phases_and_spans_without_them() {
        let r = AuditRun::parse(
            br#"{"run": {}, "phases": [
                {"function": "load", "before": {"used": 0}, "after": {"used": 30}, "seq_begin": 0, "seq_end": 2},
                {"function": "run", "before": {"used": 30}, "after": {"used": 30}, "seq_begin": 2, "seq_end": 4,
                 "spans": [{"before_used": 30, "after_used": 30, "seq_begin": 2, "seq_end": 2},
                           {"before_used": 30, "after_used": 30, "seq_begin": 2, "seq_end": 4}]}],
              "events": [{"seq": 0, "used_after": 40}, {"seq": 1, "used_after": 30},
                         {"seq": 2, "used_after": 50}, {"seq": 3, "used_after": 30}]}"#,
            "BASE",
        )
        .unwrap();
        assert_eq!(r.curve(), [0, 40, 30, 30, 30, 30, 30, 30, 50, 30, 30, 30]);
    }

    #[test]
    fn sites_keep_their_chain_functions_without_lines() {
        let s = Site {
            function: Some("build_graph".into()),
            file: Some("engine.c".into()),
            line: Some(51),
            chain: vec![
                "build_graph (engine.c:51)".into(),
                "graph_build (engine.c:118)".into(),
            ],
        };
        assert_eq!(s.chain_functions(), ["build_graph", "graph_build"]);
        assert_eq!(s.describe(), "build_graph (engine.c:51)");
    }
}
