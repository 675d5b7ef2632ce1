//! What an audit keeps of a long run. The first `keep` observed cycles and the last `keep` are
//! kept in full (their phase records and trace events); each cycle between is folded as it
//! leaves the tail: its events and records go, and what they said stays as exact totals,
//! per-function figures, one point of a decimated per-cycle series, and the scans that need
//! every event (late frees, the blocks live at the end of the fold). So resident memory and
//! every output stay bounded however many cycles run, and the totals are those of the whole
//! run.
//!
//! Only observed cycles (`t.cycle()`) are folded: phases a script runs one by one are its own
//! to bound. What folding costs: the overlap check on traced buffers and `memlife diff`'s
//! per-site figures see the kept cycles only; late frees are listed up to
//! [`crate::deferred::MAX_LISTED`] and counted beyond.

use crate::deferred::{DeferredBlock, DeferredScan, cycle_starts, observed_starts};
use crate::model::{PhaseRecord, TraceEvent};

// What a fold leaves behind is part of the report: its records live in memlife-report.
pub use memlife_report::model::{
    CycleBucket, DEFAULT_KEEP_CYCLES, Folded, FunctionTotals, MAX_SERIES, Totals,
};

/// The retention of one audit: which cycles are kept, and what the folded ones said.
#[derive(Debug, Clone)]
pub struct History {
    keep: Option<u64>,
    folded: Option<Folded>,
    /// Cycles per series bucket (doubles when the series is merged).
    width: u64,
    /// Every event up to the end of the fold, scanned for late frees and live blocks.
    scan: DeferredScan,
    /// The start of every cycle up to the last folded one (event sequence numbers).
    starts: Vec<u64>,
}

impl Default for History {
    fn default() -> Self {
        History::new(Some(DEFAULT_KEEP_CYCLES))
    }
}

impl History {
    /// Keeps `keep` cycles at each end (`None`: every cycle).
    pub fn new(keep: Option<u64>) -> Self {
        History {
            keep,
            folded: None,
            width: 1,
            scan: DeferredScan::default(),
            starts: Vec::new(),
        }
    }

    /// The folded cycles, once any were.
    pub fn folded(&self) -> Option<&Folded> {
        self.folded.as_ref()
    }

    /// Called when cycle `done` completed: folds the cycle that leaves the kept tail, if any.
    pub fn cycle_done(
        &mut self,
        done: u64,
        events: &mut Vec<TraceEvent>,
        records: &mut Vec<PhaseRecord>,
    ) {
        let Some(keep) = self.keep else { return };
        // Kept: cycles 1..=keep and done-keep+1..=done; the one in between ages out now.
        let Some(cycle) = done.checked_sub(keep).filter(|c| *c > keep) else {
            return;
        };
        let starts = observed_starts(records);
        let (Some(&begin), Some(&end)) = (starts.get(&cycle), starts.get(&(cycle + 1))) else {
            return;
        };
        // Cycle starts up to this one, for the late-free scan's cycle numbers.
        let known = self.starts.last().copied();
        self.starts.extend(
            starts
                .range(..=cycle)
                .map(|(_, s)| *s)
                .filter(|s| known.is_none_or(|l| *s > l)),
        );
        // Everything before the folded cycle is final: scan it first, in order.
        let from = self.scan.next_seq;
        let upto = events.partition_point(|e| e.seq < end);
        let unscanned = events.partition_point(|e| e.seq < from);
        for e in &events[unscanned..upto] {
            self.scan.feed(e, &self.starts);
        }
        let ev = events.partition_point(|e| e.seq < begin)..upto;
        // The cycle's records by its number: a cycle that traced no event (a failure run whose
        // one allocation was made to fail) has no event range to find them by.
        let rec = match (
            records.iter().position(|r| r.cycle == Some(cycle)),
            records.iter().rposition(|r| r.cycle == Some(cycle)),
        ) {
            (Some(first), Some(last)) => first..last + 1,
            _ => 0..0,
        };
        let folded_events: Vec<TraceEvent> = events.drain(ev).collect();
        let folded_records: Vec<PhaseRecord> = records.drain(rec).collect();
        self.fold(cycle, begin, end, &folded_events, &folded_records);
    }

    fn fold(
        &mut self,
        cycle: u64,
        begin: u64,
        end: u64,
        events: &[TraceEvent],
        records: &[PhaseRecord],
    ) {
        let f = self.folded.get_or_insert_with(|| Folded {
            first_cycle: cycle,
            last_cycle: cycle,
            seq_begin: begin,
            seq_end: end,
            totals: Totals::default(),
            functions: Vec::new(),
            series: Vec::new(),
            live_after: Vec::new(),
        });
        f.last_cycle = cycle;
        f.seq_end = end;
        f.totals = f.totals.plus(&Totals::of(events, records));
        for r in records {
            let after = r.after.used;
            match f.functions.iter_mut().find(|x| x.function == r.function) {
                Some(x) => {
                    x.calls += 1;
                    x.allocs += r.allocs;
                    x.frees += r.frees;
                    if r.peak_used > x.peak_used {
                        x.peak_used = r.peak_used;
                        x.peak_call = r.call;
                    }
                    x.peak_above_before = x.peak_above_before.max(r.peak_above_before);
                    x.delta_used = x.delta_used.saturating_add(r.delta_used);
                    x.after_used_min = x.after_used_min.min(after);
                    x.after_used_max = x.after_used_max.max(after);
                }
                None => f.functions.push(FunctionTotals {
                    function: r.function.clone(),
                    calls: 1,
                    allocs: r.allocs,
                    frees: r.frees,
                    peak_used: r.peak_used,
                    peak_call: r.call,
                    peak_above_before: r.peak_above_before,
                    delta_used: r.delta_used,
                    after_used_min: after,
                    after_used_max: after,
                }),
            }
        }
        if let Some(last) = records.last() {
            let bucket = CycleBucket {
                first: cycle,
                last: cycle,
                end_free_min: last.after.free,
                end_free_max: last.after.free,
                peak_used: records.iter().map(|r| r.peak_used).max().unwrap_or(0),
            };
            match f.series.last_mut() {
                Some(b) if b.last + 1 - b.first < self.width => b.merge(&bucket),
                _ => f.series.push(bucket),
            }
            if f.series.len() > MAX_SERIES {
                f.series = f
                    .series
                    .chunks(2)
                    .map(|pair| {
                        let mut b = pair[0].clone();
                        if let Some(o) = pair.get(1) {
                            b.merge(o);
                        }
                        b
                    })
                    .collect();
                self.width *= 2;
            }
        }
    }

    /// The folded cycles as the report gives them: with the blocks live at the fold's end.
    pub fn folded_report(&self) -> Option<Folded> {
        let mut f = self.folded.clone()?;
        f.live_after = self.scan.live().cloned().collect();
        Some(f)
    }

    /// Every late free of the run, those found in folded cycles and those among the kept
    /// events: the first [`crate::deferred::MAX_LISTED`], and how many more there were.
    pub fn deferred(
        &self,
        events: &[TraceEvent],
        records: &[PhaseRecord],
    ) -> (Vec<DeferredBlock>, u64) {
        if self.folded.is_none() {
            let starts = cycle_starts(records);
            let mut scan = DeferredScan::default();
            for e in events {
                scan.feed(e, &starts);
            }
            return (scan.found, scan.unlisted);
        }
        let mut starts = self.starts.clone();
        starts.extend(cycle_starts(records));
        starts.sort_unstable();
        starts.dedup();
        let mut scan = self.scan.clone();
        for e in events.iter().filter(|e| e.seq >= self.scan.next_seq) {
            scan.feed(e, &starts);
        }
        (scan.found, scan.unlisted)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::PeakMethod;
    use crate::model::{EventKind, HeapSummary, Site};

    fn summary(used: u64) -> HeapSummary {
        HeapSummary {
            free: 1_000_000 - used,
            used,
            largest_free: 0,
            largest_free_ratio: None,
            free_blocks: 0,
            used_blocks: 0,
            min_ever_free: None,
            status: memlife_heap::HeapStatus::Ok,
        }
    }

    /// A run of `cycles` cycles, each a `build` then a `release` phase: build allocates a
    /// block at 0x100 and one at 0x200 + cycle (a leak every third cycle, freed one cycle
    /// late otherwise), release frees 0x100.
    fn run(cycles: u64, history: &mut History) -> (Vec<TraceEvent>, Vec<PhaseRecord>) {
        let mut events = Vec::new();
        let mut records = Vec::new();
        let mut seq = 0;
        let mut used = 0u64;
        let ev = |seq: &mut u64, used: &mut u64, kind, addr, size, phase: &str| {
            match kind {
                EventKind::Alloc => *used += size,
                EventKind::Free => *used -= size,
            }
            let e = TraceEvent {
                seq: *seq,
                kind,
                addr,
                size,
                request: None,
                used_after: *used,
                phase: Some(phase.into()),
                span: None,
                site: Site {
                    function: Some(format!("site{}", addr & 0xf00)),
                    ..Site::default()
                },
                task: None,
                tick: None,
            };
            *seq += 1;
            e
        };
        let record = |function: &str, call, cycle, begin, end, before, after, peak| PhaseRecord {
            function: function.into(),
            alias: None,
            call,
            method: PeakMethod::Trace,
            before: summary(before),
            after: summary(after),
            delta_used: after as i64 - before as i64,
            peak_used: peak,
            peak_above_before: peak - before,
            peak_at: None,
            composition: Vec::new(),
            spans: Vec::new(),
            allocs: 0,
            frees: 0,
            events: None,
            accounting_drift: 0,
            seq_begin: begin,
            seq_end: end,
            cycle: Some(cycle),
            ticks: None,
            scope: None,
        };
        for c in 1..=cycles {
            let (begin, before) = (seq, used);
            events.push(ev(
                &mut seq,
                &mut used,
                EventKind::Alloc,
                0x100,
                64,
                "build",
            ));
            if c > 1 && (c - 1) % 3 != 0 {
                events.push(ev(
                    &mut seq,
                    &mut used,
                    EventKind::Free,
                    0x200 + c - 1,
                    8,
                    "build",
                ));
            }
            events.push(ev(
                &mut seq,
                &mut used,
                EventKind::Alloc,
                0x200 + c,
                8,
                "build",
            ));
            let peak = used;
            records.push(record("build", c, c, begin, seq, before, used, peak));
            let (begin, before) = (seq, used);
            events.push(ev(
                &mut seq,
                &mut used,
                EventKind::Free,
                0x100,
                64,
                "release",
            ));
            records.push(record("release", c, c, begin, seq, before, used, before));
            history.cycle_done(c, &mut events, &mut records);
        }
        (events, records)
    }

    #[test]
    fn cycles_that_traced_no_event_are_folded_by_their_number() {
        // A loop of failure runs whose one allocation was made to fail: a record each, no
        // event, so every cycle begins at the same event number.
        let mut h = History::new(Some(2));
        let mut events = Vec::new();
        let mut records = Vec::new();
        for c in 1..=9 {
            records.push(PhaseRecord {
                function: "model_load".into(),
                call: c,
                seq_begin: 7,
                seq_end: 7,
                cycle: Some(c),
                ..PhaseRecord::default()
            });
            h.cycle_done(c, &mut events, &mut records);
        }
        let kept: Vec<Option<u64>> = records.iter().map(|r| r.cycle).collect();
        assert_eq!(kept, [1, 2, 8, 9].map(Some));
        let f = h.folded().unwrap();
        assert_eq!((f.first_cycle, f.last_cycle, f.totals.phases), (3, 7, 5));
    }

    #[test]
    fn short_runs_keep_everything() {
        let mut h = History::new(Some(3));
        let (events, records) = run(6, &mut h);
        assert!(h.folded().is_none());
        assert_eq!(records.len(), 12);
        assert_eq!(events.len(), Totals::of(&events, &records).events as usize);
    }

    #[test]
    fn a_long_run_keeps_both_ends_and_exact_totals_of_the_middle() {
        let mut all = History::new(None);
        let (full_events, full_records) = run(40, &mut all);
        let mut h = History::new(Some(3));
        let (events, records) = run(40, &mut h);
        let f = h.folded().unwrap();
        assert_eq!((f.first_cycle, f.last_cycle), (4, 37));
        let kept: Vec<Option<u64>> = records.iter().map(|r| r.cycle).collect();
        let want: Vec<Option<u64>> = [1, 1, 2, 2, 3, 3, 38, 38, 39, 39, 40, 40]
            .into_iter()
            .map(Some)
            .collect();
        assert_eq!(kept, want);
        // Exact totals: kept plus folded equal the unfolded run's.
        assert_eq!(
            Totals::of(&events, &records).plus(&f.totals),
            Totals::of(&full_events, &full_records)
        );
        // The kept events are the unfolded run's outside the fold.
        let outside: Vec<&TraceEvent> = full_events
            .iter()
            .filter(|e| e.seq < f.seq_begin || e.seq >= f.seq_end)
            .collect();
        assert_eq!(events.iter().collect::<Vec<_>>(), outside);
        // Late frees, the live blocks at the fold's end, and per-function figures.
        assert_eq!(
            h.deferred(&events, &records),
            (crate::deferred::classify(&full_events, &full_records), 0)
        );
        let live_full: Vec<&TraceEvent> =
            crate::composition::live_blocks(&full_events, 0, f.seq_end - 1);
        let reported = h.folded_report().unwrap();
        assert!(!live_full.is_empty());
        assert_eq!(reported.live_after.iter().collect::<Vec<_>>(), live_full);
        let build = f.functions.iter().find(|x| x.function == "build").unwrap();
        assert_eq!(build.calls, 34);
        let folded_build: Vec<&PhaseRecord> = full_records
            .iter()
            .filter(|r| r.function == "build" && (4..=37).contains(&r.cycle.unwrap()))
            .collect();
        assert_eq!(
            build.peak_used,
            folded_build.iter().map(|r| r.peak_used).max().unwrap()
        );
        assert_eq!(
            build.delta_used,
            folded_build.iter().map(|r| r.delta_used).sum::<i64>()
        );
        // One series point per folded cycle, ending where the cycle's release returned.
        assert_eq!(f.series.len(), 34);
        assert_eq!(f.series[0].end_free_max, full_records[2 * 3 + 1].after.free);
    }

    #[test]
    fn late_frees_past_the_listed_ones_are_counted() {
        let mut h = History::new(Some(2));
        let (events, records) = run(3000, &mut h);
        let (listed, unlisted) = h.deferred(&events, &records);
        // Cycles 2..=3000 free the block of the cycle before unless its number is a multiple
        // of 3: 2000 late frees.
        assert_eq!(listed.len(), crate::deferred::MAX_LISTED);
        assert_eq!(listed.len() as u64 + unlisted, 2000);
        assert_eq!(listed[0].allocated_cycle, 1);
    }

    #[test]
    fn the_series_stays_bounded_and_keeps_the_extremes() {
        let mut h = History::new(Some(2));
        let (_, _) = run(3000, &mut h);
        let f = h.folded().unwrap();
        assert!(f.series.len() <= MAX_SERIES, "{}", f.series.len());
        assert!(f.series.len() > MAX_SERIES / 4);
        assert_eq!(f.series.first().unwrap().first, 3);
        assert_eq!(f.series.last().unwrap().last, 2998);
        // Cycles are covered once each, in order.
        for w in f.series.windows(2) {
            assert_eq!(w[0].last + 1, w[1].first);
        }
        let top = f.series.iter().map(|b| b.end_free_max).max().unwrap();
        let bottom = f.series.iter().map(|b| b.end_free_min).min().unwrap();
        let mut all = History::new(None);
        let (_, records) = run(3000, &mut all);
        let ends: Vec<u64> = records
            .iter()
            .filter(|r| r.function == "release" && (3..=2998).contains(&r.cycle.unwrap()))
            .map(|r| r.after.free)
            .collect();
        assert_eq!(top, *ends.iter().max().unwrap());
        assert_eq!(bottom, *ends.iter().min().unwrap());
    }
}
