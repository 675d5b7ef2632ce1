//! What a long run keeps of the cycles it folds (see `memlife_audit::history`, which folds
//! them): exact totals, per-function figures and a decimated per-cycle series. How many cycles
//! are kept in full at each end is a setting (`memlife_plan::KeepCycles`).

use serde::{Deserialize, Serialize};

use super::{EventKind, PhaseRecord, TraceEvent};

/// Cycles kept in full at each end of a run unless the settings say otherwise (`--keep-cycles`,
/// `keep_cycles` in memlife.toml's `[trace]`).
pub const DEFAULT_KEEP_CYCLES: u64 = 10;

/// At most this many buckets in the folded cycles' series (pairs merge when there are more).
pub const MAX_SERIES: usize = 512;

/// Counts over events and phase records.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct Totals {
    /// Phase calls completed.
    pub phases: u64,
    /// Trace events.
    pub events: u64,
    /// Allocations traced.
    pub allocs: u64,
    /// Frees traced.
    pub frees: u64,
    /// Bytes allocated (allocator accounting).
    pub alloc_bytes: u64,
    /// Bytes freed.
    pub free_bytes: u64,
}

impl Totals {
    /// The totals of these events and records.
    pub fn of(events: &[TraceEvent], records: &[PhaseRecord]) -> Self {
        let mut t = Totals {
            phases: records.len() as u64,
            ..Totals::default()
        };
        for e in events {
            t.add_event(e);
        }
        t
    }

    fn add_event(&mut self, e: &TraceEvent) {
        self.events += 1;
        match e.kind {
            EventKind::Alloc => {
                self.allocs += 1;
                self.alloc_bytes = self.alloc_bytes.saturating_add(e.size);
            }
            EventKind::Free => {
                self.frees += 1;
                self.free_bytes = self.free_bytes.saturating_add(e.size);
            }
        }
    }

    /// `self` and `other` together.
    pub fn plus(&self, other: &Totals) -> Totals {
        Totals {
            phases: self.phases + other.phases,
            events: self.events + other.events,
            allocs: self.allocs + other.allocs,
            frees: self.frees + other.frees,
            alloc_bytes: self.alloc_bytes.saturating_add(other.alloc_bytes),
            free_bytes: self.free_bytes.saturating_add(other.free_bytes),
        }
    }
}

/// One phase function's calls in the folded cycles.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct FunctionTotals {
    /// The function.
    pub function: String,
    /// Calls folded.
    pub calls: u64,
    /// Allocations traced inside them.
    pub allocs: u64,
    /// Frees traced inside them.
    pub frees: u64,
    /// The highest peak of used bytes among them.
    pub peak_used: u64,
    /// Which call reached it.
    pub peak_call: u64,
    /// The largest transient (peak above the used bytes at entry).
    pub peak_above_before: u64,
    /// The sum of their used-bytes deltas: what they left behind together.
    pub delta_used: i64,
    /// The lowest and the highest used bytes at their returns.
    pub after_used_min: u64,
    /// See `after_used_min`.
    pub after_used_max: u64,
}

/// Folded cycles `first..=last`, decimated to one point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct CycleBucket {
    /// First cycle.
    pub first: u64,
    /// Last cycle.
    pub last: u64,
    /// The lowest free bytes at a cycle's end (its last phase's return: the release, in a
    /// load-build-run-release cycle).
    pub end_free_min: u64,
    /// The highest.
    pub end_free_max: u64,
    /// The highest peak of used bytes inside these cycles.
    pub peak_used: u64,
}

impl CycleBucket {
    /// Widens this bucket to the cycles of `o`, which come right after it.
    pub fn merge(&mut self, o: &CycleBucket) {
        self.last = o.last;
        self.end_free_min = self.end_free_min.min(o.end_free_min);
        self.end_free_max = self.end_free_max.max(o.end_free_max);
        self.peak_used = self.peak_used.max(o.peak_used);
    }
}

/// The cycles folded out of the middle of a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct Folded {
    /// First folded cycle.
    pub first_cycle: u64,
    /// Last folded cycle.
    pub last_cycle: u64,
    /// Trace events with `seq_begin <= seq < seq_end` were folded.
    pub seq_begin: u64,
    /// One past the last folded event.
    pub seq_end: u64,
    /// What the folded cycles did, exactly.
    pub totals: Totals,
    /// Per phase function, in order of first call.
    pub functions: Vec<FunctionTotals>,
    /// One bucket per folded cycle or run of cycles, at most [`MAX_SERIES`].
    pub series: Vec<CycleBucket>,
    /// The blocks allocated and not freed at `seq_end` (their allocation events): where a
    /// replay of the kept events after the fold starts. Filled for the report, not at every
    /// fold.
    pub live_after: Vec<TraceEvent>,
}
