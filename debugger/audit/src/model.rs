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

/// What a traced allocator call did.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    /// A block was allocated (`"alloc"` in the JSON).
    Alloc,
    /// A block was freed (`"free"` in the JSON).
    Free,
}

impl EventKind {
    /// The name the JSON report uses.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Alloc => "alloc",
            EventKind::Free => "free",
        }
    }
}

/// One traced allocator call.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TraceEvent {
    /// Sequence number (0-based, over the whole audit).
    pub seq: u64,
    /// Allocation or release.
    pub kind: EventKind,
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
}

/// A block whose contents a walk found damaged (a broken canary or fill).
#[derive(Debug, Clone, Serialize, PartialEq)]
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
    /// The span's argument that tells spans apart (`[labels]` arg; the second by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_arg: Option<u64>,
    /// The span's name, from `[labels]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_label: Option<String>,
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
    /// What the peak is made of: the blocks the phase allocated and held at its peak, by
    /// `[components]` name or allocation site, largest first (traced peaks only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub composition: Vec<crate::composition::Part>,
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
}

/// One block of a [`HeapMap`].
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MapBlock {
    /// Address of the block header.
    pub addr: u64,
    /// Size in the allocator's accounting.
    pub size: u64,
    /// On the free list.
    pub free: bool,
    /// newlib: not yet handed out by sbrk.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unclaimed: bool,
    /// Used now and not used at the audit's baseline: a block the lifecycle left behind.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub leaked: bool,
    /// Used now, allocated at the site of a block a later cycle freed: a late free, not a leak
    /// (see `crate::deferred`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deferred: bool,
    /// Where the trace saw it allocated, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site: Option<Site>,
}

/// The heap after the last release, block by block, for the report's heap map.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HeapMap {
    /// The phase call it was walked at the return of (`model_release#3`).
    pub at: String,
    /// First address of the arena.
    pub heap_start: u64,
    /// Arena size.
    pub heap_size: u64,
    /// The heap's figures.
    pub summary: HeapSummary,
    /// Leaked blocks: used here and not used at the baseline (the heap at the first release
    /// when the audit released more than once, else at the first phase's entry), and the
    /// baseline's blocks allocated at the same site as one of those.
    pub leaked_blocks: u64,
    /// Their bytes.
    pub leaked_bytes: u64,
    /// Every block in address order.
    pub blocks: Vec<MapBlock>,
}

impl HeapMap {
    /// Builds the map of `state`; `baseline` says which used blocks are not leaks, `site` names
    /// where a block was allocated.
    pub fn new(
        at: String,
        state: &HeapState,
        baseline: Option<&HeapState>,
        site: impl Fn(u64) -> Option<Site>,
    ) -> Self {
        let kept: std::collections::BTreeSet<(u64, u64)> = baseline
            .map(|b| {
                b.blocks
                    .iter()
                    .filter(|x| !x.free && !x.unclaimed)
                    .map(|x| (x.addr, x.size))
                    .collect()
            })
            .unwrap_or_default();
        let mut blocks: Vec<MapBlock> = state
            .blocks
            .iter()
            .map(|b| {
                let used = !b.free && !b.unclaimed;
                MapBlock {
                    addr: b.addr,
                    size: b.size,
                    free: b.free,
                    unclaimed: b.unclaimed,
                    leaked: used && baseline.is_some() && !kept.contains(&(b.addr, b.size)),
                    deferred: false,
                    site: if used { site(b.addr) } else { None },
                }
            })
            .collect();
        // A block the baseline already held is a leak too when a later lifecycle left another
        // behind from the same allocation site: the first step of the staircase.
        let leaking_sites: Vec<Site> = blocks
            .iter()
            .filter(|b| b.leaked)
            .filter_map(|b| b.site.clone())
            .collect();
        for b in &mut blocks {
            if !b.leaked && b.site.as_ref().is_some_and(|s| leaking_sites.contains(s)) {
                b.leaked = true;
            }
        }
        let leaked: Vec<&MapBlock> = blocks.iter().filter(|b| b.leaked).collect();
        HeapMap {
            at,
            heap_start: state.heap_start,
            heap_size: state.heap_size,
            summary: state.into(),
            leaked_blocks: leaked.len() as u64,
            leaked_bytes: leaked.iter().map(|b| b.size).sum(),
            blocks,
        }
    }
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
    /// Not run: the configuration lacks what the check needs (the message says what to add).
    Skip,
}

impl Verdict {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn event_kinds_serialise_as_the_json_report_always_named_them() {
        for (kind, name) in [(EventKind::Alloc, "alloc"), (EventKind::Free, "free")] {
            assert_eq!(serde_json::to_value(kind).unwrap(), name);
            assert_eq!(kind.as_str(), name);
        }
    }
}
