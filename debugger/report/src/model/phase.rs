//! Phases and spans: one record per call of a lifecycle function, with the nested calls inside,
//! where its peak was and what the peak was made of.

use serde::{Deserialize, Deserializer, Serialize};

use super::{HeapSummary, Site};

/// How the peak inside a phase is found (README, "Audits and the Rhai API").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PeakMethod {
    /// Breakpoints on malloc/free: every event, exact curve, allocation sites.
    #[default]
    Trace,
    /// Snapshots at phase and span boundaries only.
    Sample,
    /// The allocator's low-water mark, reset at phase entry (writes target RAM; restored).
    Watermark,
}

impl PeakMethod {
    /// Every method, by the name `--method` and `[trace] method` take.
    pub const ALL: [(PeakMethod, &'static str); 3] = [
        (PeakMethod::Trace, "trace"),
        (PeakMethod::Sample, "sample"),
        (PeakMethod::Watermark, "watermark"),
    ];

    /// The method's name (`trace`).
    pub fn name(self) -> &'static str {
        PeakMethod::ALL
            .iter()
            .find(|(m, _)| *m == self)
            .map_or("", |(_, n)| n)
    }
}

impl std::str::FromStr for PeakMethod {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PeakMethod::ALL
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(m, _)| *m)
            .ok_or_else(|| format!("unknown peak method `{s}` (trace, sample, watermark)"))
    }
}

impl std::fmt::Display for PeakMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One nested call inside a phase (an `op_init`, an `op_invoke`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct SpanRecord {
    /// Function.
    pub function: String,
    /// Which call of this function in the audit (1-based).
    pub call: u64,
    /// Position among this phase's spans (0-based).
    pub index: usize,
    /// r0..r3 at entry (the arguments). Read back, a shorter list leaves the rest 0.
    #[serde(deserialize_with = "four_args")]
    pub args: [u64; 4],
    /// The argument that tells this function's spans apart (`[labels]` arg; the second by
    /// default): the layer or operator index.
    pub arg: u64,
    /// Its name, from `[labels]` (a name table or a string argument), control characters
    /// escaped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Used bytes at entry.
    pub before_used: u64,
    /// Used bytes at return.
    pub after_used: u64,
    /// after - before.
    pub delta: i64,
    /// Highest used bytes inside.
    pub peak_used: u64,
    /// Trace events with `seq_begin <= seq < seq_end` happened inside (equal when none did):
    /// places the span on the report's timeline.
    pub seq_begin: u64,
    /// One past the last event inside.
    pub seq_end: u64,
    /// Damage to blocks' contents the walk at the span's return found (ESP-IDF heap poisoning:
    /// broken canaries or free fill); empty when none, or when the allocator has no canaries.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub damage: Vec<Damage>,
    /// The firmware's tick count (`xTickCount`) at entry and at return, where it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticks: Option<Ticks>,
}

impl SpanRecord {
    /// Highest used bytes inside above the entry: the span's transient high.
    pub fn transient(&self) -> u64 {
        self.peak_used.saturating_sub(self.before_used)
    }
}

/// Up to four registers; those a report leaves out read 0.
fn four_args<'de, D: Deserializer<'de>>(d: D) -> Result<[u64; 4], D::Error> {
    let given = Vec::<u64>::deserialize(d)?;
    if given.len() > 4 {
        return Err(serde::de::Error::invalid_length(
            given.len(),
            &"at most 4 arguments (r0..r3)",
        ));
    }
    let mut args = [0; 4];
    args[..given.len()].copy_from_slice(&given);
    Ok(args)
}

/// A block whose contents a walk found damaged (a broken canary or fill).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct Damage {
    /// `overrun`, `underrun` or `write-after-free`.
    pub kind: String,
    /// The block (the address the heap walk lists).
    pub block: u64,
    /// The size its caller asked for, where the allocator records it.
    pub alloc_size: Option<u64>,
    /// Where it was allocated, when the audit traced it.
    pub site: Option<String>,
    /// The walk's words.
    pub message: String,
}

/// The firmware's own clock (an RTOS kernel's tick count) at a call's entry and return: the
/// samples taken there, on the firmware's time axis.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct Ticks {
    /// At entry.
    pub begin: u64,
    /// At return.
    pub end: u64,
}

/// Where a phase's peak happened.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct PeakSite {
    /// Trace event sequence number, when traced.
    pub seq: Option<u64>,
    /// The span running at the peak (`op_invoke#12`), if any.
    pub span: Option<String>,
    /// That span's position in the phase.
    pub span_index: Option<usize>,
    /// The span's second argument (the operator or layer index for the bundled firmware).
    pub span_arg1: Option<u64>,
    /// The span's argument that tells spans apart (`[labels]` arg; the second by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_arg: Option<u64>,
    /// The span's name, from `[labels]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_label: Option<String>,
    /// The allocation that reached the peak.
    pub site: Option<Site>,
}

/// One component (or site) of a phase's peak (see [`crate::views::composition`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct Part {
    /// The component name from `[components]`, else the allocation site (`parse_model
    /// (loader.c:188)`).
    pub name: String,
    /// Bytes in the allocator's accounting (block sizes, headers included): the parts sum to
    /// the peak above the phase's entry when the phase freed nothing it found allocated.
    pub bytes: u64,
    /// Bytes the callers asked for.
    pub requested: u64,
    /// Live blocks.
    pub blocks: u64,
}

/// One call of a phase function.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct PhaseRecord {
    /// The function.
    pub function: String,
    /// The alias used to ask for it (`load`), if any.
    pub alias: Option<String>,
    /// Which call of this function in the audit (1-based).
    pub call: u64,
    /// How the peak was found.
    pub method: PeakMethod,
    /// The heap at entry.
    pub before: HeapSummary,
    /// The heap at return.
    pub after: HeapSummary,
    /// after.used - before.used; in a phase limited to a task (`scope`), what the task's own
    /// allocations and releases left in use (other tasks' are in `accounting_drift`).
    pub delta_used: i64,
    /// Highest used bytes inside the phase.
    pub peak_used: u64,
    /// peak_used - before.used: the phase's transient overhead.
    pub peak_above_before: u64,
    /// Where the peak happened.
    pub peak_at: Option<PeakSite>,
    /// What the peak is made of: the blocks the phase allocated and held at its peak, by
    /// `[components]` name or allocation site, largest first (traced peaks only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub composition: Vec<Part>,
    /// Nested calls.
    pub spans: Vec<SpanRecord>,
    /// Allocations traced inside.
    pub allocs: u64,
    /// Frees traced inside.
    pub frees: u64,
    /// Sequence numbers of the first and last event inside (traced).
    pub events: Option<(u64, u64)>,
    /// Trace accounting disagreed with the walk at return by this many bytes (0 when exact).
    pub accounting_drift: i64,
    /// Trace events with `seq_begin <= seq < seq_end` happened inside (equal when none did).
    pub seq_begin: u64,
    /// One past the last event inside.
    pub seq_end: u64,
    /// The cycle (1-based) this call belongs to, when the script observed cycles
    /// (`t.cycles(n)`); absent for phases run one by one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle: Option<u64>,
    /// The firmware's tick count (`xTickCount`) at entry and at return, where it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticks: Option<Ticks>,
    /// The task or caller the call was limited to (`task Infer`, `caller infer_cycle`): its
    /// figures count only that task's allocations (`[phases]` in memlife.toml).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl PhaseRecord {
    /// `graph_build#1`: the function and which call of it.
    pub fn name(&self) -> String {
        format!("{}#{}", self.function, self.call)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn peak_methods_read_back_their_names() {
        for (method, name) in PeakMethod::ALL {
            assert_eq!(name.parse::<PeakMethod>(), Ok(method));
            assert_eq!(method.to_string(), name);
            assert_eq!(serde_json::to_value(method).unwrap(), name);
        }
        assert!(
            "guess"
                .parse::<PeakMethod>()
                .unwrap_err()
                .contains("trace, sample, watermark")
        );
    }

    #[test]
    fn a_span_read_back_with_fewer_arguments_leaves_the_rest_zero() {
        let s: SpanRecord =
            serde_json::from_str(r#"{"function": "op_init", "args": [7, 1]}"#).unwrap();
        assert_eq!(s.args, [7, 1, 0, 0]);
        let e = serde_json::from_str::<SpanRecord>(r#"{"args": [1, 2, 3, 4, 5]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at most 4"), "{e}");
    }
}
