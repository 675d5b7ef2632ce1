//! The records an audit produces: phases, spans, trace events, checks. All serialisable: the JSON
//! report is these structures.

use serde::Serialize;

use memlife_heap::HeapState;

use crate::config::PeakMethod;

/// A heap state without its block list, for phase records (the full state is kept in memory for
/// diffs and dumps; the JSON would be large with every block of every phase).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HeapSummary {
    /// Free bytes.
    pub free: u64,
    /// Used bytes.
    pub used: u64,
    /// Largest free block.
    pub largest_free: u64,
    /// largest_free / free.
    pub largest_free_ratio: Option<f64>,
    /// Free blocks.
    pub free_blocks: u64,
    /// Used blocks.
    pub used_blocks: u64,
    /// The allocator's low-water mark.
    pub min_ever_free: Option<u64>,
    /// ok / busy / corrupt / uninitialised.
    pub status: memlife_heap::HeapStatus,
}

impl From<&HeapState> for HeapSummary {
    fn from(s: &HeapState) -> Self {
        HeapSummary {
            free: s.total_free,
            used: s.used,
            largest_free: s.largest_free,
            largest_free_ratio: s.largest_free_ratio(),
            free_blocks: s.free_blocks,
            used_blocks: s.used_blocks,
            min_ever_free: s.min_ever_free,
            status: s.status,
        }
    }
}

/// Where an allocation was made: the first frame outside the allocator and its wrappers.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Default)]
pub struct Site {
    /// Function.
    pub function: Option<String>,
    /// Source file (base name).
    pub file: Option<String>,
    /// Line.
    pub line: Option<u32>,
    /// The chain of callers, innermost first, as `function (file:line)`.
    pub chain: Vec<String>,
}

impl std::fmt::Display for Site {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.function.as_deref().unwrap_or("??"))?;
        if let (Some(file), Some(line)) = (&self.file, self.line) {
            write!(f, " ({file}:{line})")?;
        }
        Ok(())
    }
}

/// One traced allocator call.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TraceEvent {
    /// Sequence number (0-based, over the whole audit).
    pub seq: u64,
    /// `alloc` or `free`.
    pub kind: &'static str,
    /// Block address.
    pub addr: u64,
    /// Block size in the allocator's accounting.
    pub size: u64,
    /// Requested size (allocations).
    pub request: Option<u64>,
    /// Used bytes after the event.
    pub used_after: u64,
    /// The phase running (function), if any.
    pub phase: Option<String>,
    /// The innermost span running, as `function#call`.
    pub span: Option<String>,
    /// Where it was called from.
    pub site: Site,
}

/// One nested call inside a phase (an `op_init`, an `op_invoke`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SpanRecord {
    /// Function.
    pub function: String,
    /// Which call of this function in the audit (1-based).
    pub call: u64,
    /// Position among this phase's spans (0-based).
    pub index: usize,
    /// r0..r3 at entry (the arguments).
    pub args: [u64; 4],
    /// Used bytes at entry.
    pub before_used: u64,
    /// Used bytes at return.
    pub after_used: u64,
    /// after - before.
    pub delta: i64,
    /// Highest used bytes inside.
    pub peak_used: u64,
}

/// Where a phase's peak happened.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PeakSite {
    /// Trace event sequence number, when traced.
    pub seq: Option<u64>,
    /// The span running at the peak (`op_invoke#12`), if any.
    pub span: Option<String>,
    /// That span's position in the phase.
    pub span_index: Option<usize>,
    /// The span's second argument (the operator or layer index for the bundled firmware).
    pub span_arg1: Option<u64>,
    /// The allocation that reached the peak.
    pub site: Option<Site>,
}

/// One call of a phase function.
#[derive(Debug, Clone, Serialize, PartialEq)]
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
    /// after.used - before.used.
    pub delta_used: i64,
    /// Highest used bytes inside the phase.
    pub peak_used: u64,
    /// peak_used - before.used: the phase's transient overhead.
    pub peak_above_before: u64,
    /// Where the peak happened.
    pub peak_at: Option<PeakSite>,
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
}

/// One named result of a script.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct CheckResult {
    /// Name (the JUnit test case).
    pub name: String,
    /// `pass`, `fail` or `warn`.
    pub verdict: Verdict,
    /// What, where and how much.
    pub message: String,
    /// Script line that recorded it.
    pub line: Option<usize>,
}

/// The outcome of a check.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Passed.
    Pass,
    /// Failed.
    Fail,
    /// A warning: reported, not failing.
    Warn,
}
