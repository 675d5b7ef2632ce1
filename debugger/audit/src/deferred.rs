//! Late frees: a block one lifecycle allocates and a later one frees. It keeps the heap below
//! its baseline after a release without being lost, so it is reported apart from leaks, as
//! `deferred`, with its allocation site and how many cycles it lived.
//!
//! Cycles are the ones the script observed (`t.cycles(n)` numbers each phase record's cycle);
//! for phases run one by one, a cycle starts at every call of the audit's first phase function.
//! The trace events are numbered, and each phase record says where its events begin. Only what the trace saw counts: a block allocated or
//! freed while tracing was off is neither a leak nor deferred here.

use std::collections::BTreeMap;

use crate::model::{EventKind, HeapMap, PhaseRecord, Site, TraceEvent};

// The late frees are part of the report: their record lives in memlife-report.
pub use memlife_report::model::{DeferredBlock, MAX_LISTED};

/// The event sequence numbers at which cycles start: where the first phase of each observed
/// cycle begins (`t.cycles(n)` numbers the phases' cycles), else, for phases run one by one,
/// where every call of the first phase function begins.
pub fn cycle_starts(phases: &[PhaseRecord]) -> Vec<u64> {
    let observed = observed_starts(phases);
    if !observed.is_empty() {
        let mut starts: Vec<u64> = observed.into_values().collect();
        starts.sort_unstable();
        return starts;
    }
    let Some(first) = phases.first().map(|p| p.function.as_str()) else {
        return Vec::new();
    };
    phases
        .iter()
        .filter(|p| p.function == first)
        .map(|p| p.seq_begin)
        .collect()
}

/// Where each observed cycle among `phases` begins: cycle → the first event number of its
/// first phase.
pub fn observed_starts(phases: &[PhaseRecord]) -> BTreeMap<u64, u64> {
    let mut observed: BTreeMap<u64, u64> = BTreeMap::new();
    for p in phases {
        if let Some(c) = p.cycle {
            let start = observed.entry(c).or_insert(p.seq_begin);
            *start = (*start).min(p.seq_begin);
        }
    }
    observed
}

/// The cycle (1-based) of the event `seq`: 0 before the first cycle starts.
fn cycle_of(starts: &[u64], seq: u64) -> u64 {
    starts.partition_point(|&s| s <= seq) as u64
}

/// Every traced block allocated in a cycle and freed in a later one, in the order of their
/// frees.
pub fn classify(events: &[TraceEvent], phases: &[PhaseRecord]) -> Vec<DeferredBlock> {
    let starts = cycle_starts(phases);
    let mut scan = DeferredScan::default();
    for e in events {
        scan.feed(e, &starts);
    }
    scan.found
}

/// The classification as a scan over events in sequence order, so that a long run can feed it
/// the events it folds away (`crate::history`) and still classify the whole run: what it keeps
/// is the blocks allocated and not yet freed (bounded by the heap) and the late frees found.
#[derive(Debug, Clone, Default)]
pub struct DeferredScan {
    /// Block address → the event that allocated it.
    allocated: BTreeMap<u64, TraceEvent>,
    /// Late frees found so far, in the order of their frees, the first [`MAX_LISTED`].
    pub found: Vec<DeferredBlock>,
    /// Late frees found past the first [`MAX_LISTED`].
    pub unlisted: u64,
    /// One past the last event fed.
    pub next_seq: u64,
}

impl DeferredScan {
    /// Feeds one event; `starts` must hold every cycle start at or before `e.seq`.
    pub fn feed(&mut self, e: &TraceEvent, starts: &[u64]) {
        self.next_seq = e.seq + 1;
        match e.kind {
            EventKind::Alloc => {
                self.allocated.insert(e.addr, e.clone());
            }
            EventKind::Free => {
                let Some(a) = self.allocated.remove(&e.addr) else {
                    return;
                };
                let (from, to) = (cycle_of(starts, a.seq), cycle_of(starts, e.seq));
                if from >= 1 && to > from && self.found.len() >= MAX_LISTED {
                    self.unlisted += 1;
                } else if from >= 1 && to > from {
                    self.found.push(DeferredBlock {
                        addr: a.addr,
                        size: a.size,
                        request: a.request,
                        site: a.site,
                        allocated_cycle: from,
                        freed_cycle: to,
                        cycles: to - from,
                        allocated_in: a.phase,
                        freed_in: e.phase.clone(),
                    });
                }
            }
        }
    }

    /// The blocks allocated and not freed among the events fed, in address order: what a
    /// replay must start from after a gap.
    pub fn live(&self) -> impl Iterator<Item = &TraceEvent> {
        self.allocated.values()
    }
}

/// Marks the heap map's blocks allocated at a deferred block's site as deferred, not leaked:
/// the last cycle's instance is still live when the audit ends, and the next cycle would free
/// it as it freed the others.
pub fn mark_heap_map(map: &mut HeapMap, deferred: &[DeferredBlock]) {
    let sites: Vec<&Site> = deferred.iter().map(|d| &d.site).collect();
    for b in &mut map.blocks {
        if !b.free && b.site.as_ref().is_some_and(|s| sites.contains(&s)) {
            b.deferred = true;
            b.leaked = false;
        }
    }
    let leaked: Vec<u64> = map
        .blocks
        .iter()
        .filter(|b| b.leaked)
        .map(|b| b.size)
        .collect();
    map.leaked_blocks = leaked.len() as u64;
    map.leaked_bytes = leaked.iter().sum();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PeakMethod;
    use crate::model::HeapSummary;

    fn event(seq: u64, kind: EventKind, addr: u64, site: &str, phase: &str) -> TraceEvent {
        TraceEvent {
            seq,
            kind,
            addr,
            size: 72,
            request: (kind == EventKind::Alloc).then_some(64),
            used_after: 0,
            phase: Some(phase.into()),
            span: None,
            site: Site {
                function: Some(site.into()),
                ..Site::default()
            },
            task: None,
            tick: None,
        }
    }

    fn phase(function: &str, seq_begin: u64) -> PhaseRecord {
        observed(function, seq_begin, None)
    }

    fn observed(function: &str, seq_begin: u64, cycle: Option<u64>) -> PhaseRecord {
        let empty = HeapSummary {
            free: 0,
            used: 0,
            largest_free: 0,
            largest_free_ratio: None,
            free_blocks: 0,
            used_blocks: 0,
            min_ever_free: None,
            status: memlife_heap::HeapStatus::Ok,
        };
        PhaseRecord {
            function: function.into(),
            alias: None,
            call: 1,
            cycle,
            method: PeakMethod::Trace,
            before: empty.clone(),
            after: empty,
            delta_used: 0,
            peak_used: 0,
            peak_above_before: 0,
            peak_at: None,
            composition: Vec::new(),
            spans: Vec::new(),
            allocs: 0,
            frees: 0,
            events: None,
            accounting_drift: 0,
            seq_begin,
            seq_end: seq_begin,
            ticks: None,
            scope: None,
        }
    }

    /// Cycles start at model_load (events 0, 4, 8): the summary of cycle 1 freed in cycle 2 is
    /// deferred by one cycle; a block freed in its own cycle and one never freed are not.
    #[test]
    fn late_frees_are_deferred_and_same_cycle_frees_and_leaks_are_not() {
        use EventKind::{Alloc, Free};
        let phases = [
            phase("model_load", 0),
            phase("model_release", 2),
            phase("model_load", 4),
            phase("model_release", 6),
            phase("model_load", 8),
        ];
        let events = [
            event(0, Alloc, 0x100, "loader", "model_load"),
            event(1, Free, 0x100, "loader", "model_release"),
            event(2, Alloc, 0x200, "release_summary_keep", "model_release"),
            event(3, Alloc, 0x300, "build_graph", "model_release"),
            event(4, Free, 0x200, "release_summary_keep", "model_load"),
            event(6, Alloc, 0x200, "release_summary_keep", "model_release"),
            event(9, Free, 0x200, "release_summary_keep", "model_load"),
        ];
        let d = classify(&events, &phases);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(
            (
                d[0].addr,
                d[0].allocated_cycle,
                d[0].freed_cycle,
                d[0].cycles
            ),
            (0x200, 1, 2, 1)
        );
        assert_eq!(d[0].site.function.as_deref(), Some("release_summary_keep"));
        assert_eq!(d[0].allocated_in.as_deref(), Some("model_release"));
        assert_eq!(d[0].freed_in.as_deref(), Some("model_load"));
        assert_eq!((d[1].allocated_cycle, d[1].freed_cycle), (2, 3));
    }

    /// Observed cycles win over function names: here a cycle starts at `build` (event 3), so
    /// a block from `load` (event 1, before any cycle) is nobody's, and one allocated in cycle
    /// 1 and freed in cycle 2 is deferred.
    #[test]
    fn observed_cycles_decide() {
        use EventKind::{Alloc, Free};
        let phases = [
            observed("load", 0, None),
            observed("build", 3, Some(1)),
            observed("release", 5, Some(1)),
            observed("build", 7, Some(2)),
        ];
        let events = [
            event(1, Alloc, 0x100, "a", "load"),
            event(4, Alloc, 0x200, "b", "build"),
            event(8, Free, 0x100, "a", "build"),
            event(9, Free, 0x200, "b", "build"),
        ];
        let d = classify(&events, &phases);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(
            (d[0].addr, d[0].allocated_cycle, d[0].freed_cycle),
            (0x200, 1, 2)
        );
    }

    #[test]
    fn without_phases_nothing_is_deferred() {
        let events = [
            event(0, EventKind::Alloc, 0x200, "a", "f"),
            event(5, EventKind::Free, 0x200, "a", "f"),
        ];
        assert!(classify(&events, &[]).is_empty());
    }
}
