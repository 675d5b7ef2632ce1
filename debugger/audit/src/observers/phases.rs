//! Phase tracking: the calls of the lifecycle functions, the phase open now, the peak inside and
//! where it happened, and the completed phase records. Pure bookkeeping over the numbers it is
//! given (used bytes, events, heap states, the span an event happened in): no target access,
//! so everything here is unit-tested directly.
//!
//! The engine tells it what happened ([`PhaseTracker::count_call`], [`PhaseTracker::enter`],
//! [`PhaseTracker::on_event`], [`PhaseTracker::on_span_closed`], [`PhaseTracker::finish`]); the
//! drivers (`crate::debugger::phase_run`, `cycle_run`) decide when.

use std::collections::HashMap;
use std::rc::Rc;

use memlife_heap::HeapState;

use crate::config::PeakMethod;
use crate::events::HeapEvent;
use crate::figures::delta;
use crate::model::{EventKind, HeapMap, PeakSite, PhaseRecord, Site, SpanRecord};
use crate::observers::spans::OpenSpan;

/// Which call a phase is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseId {
    /// The function.
    pub function: String,
    /// The name it was asked for by (a role), when not the function's.
    pub alias: Option<String>,
    /// Its call number (1-based).
    pub call: u64,
    /// The cycle it is part of, when cycles are observed.
    pub cycle: Option<u64>,
}

/// The highest bytes in use seen, and where.
#[derive(Debug, Clone)]
struct Peak {
    used: u64,
    at: Option<PeakSite>,
}

/// Events counted in the open phase.
#[derive(Debug, Clone, Default)]
struct Counts {
    first_event: Option<u64>,
    allocs: u64,
    frees: u64,
}

#[derive(Debug, Clone)]
struct OpenPhase {
    id: PhaseId,
    before: Rc<HeapState>,
    seq_begin: u64,
    peak: Peak,
    counts: Counts,
    /// An observer left some of the heap events during it out (a phase limited to a task):
    /// the walk at its return is not its own, its figures come from the events it counted.
    left_out: bool,
}

/// What closing a phase needs to know besides the heap after it.
#[derive(Debug, Clone, Copy)]
pub struct PhaseEnd {
    /// How peaks were found.
    pub method: PeakMethod,
    /// The next event sequence number (one past the phase's last event).
    pub seq: u64,
    /// Traced used bytes minus the walk's at the return (0 when not tracing).
    pub drift: i64,
    /// The peak the low-water mark shows, when the watermark method read one.
    pub watermark_peak: Option<u64>,
    /// Whether this phase is the lifecycle's release (its heap is kept for the heap map).
    pub is_release: bool,
}

/// The heaps the report's heap map compares to tell leaked blocks from blocks kept for good.
#[derive(Debug, Default)]
struct Releases {
    /// At the first phase's entry.
    baseline: Option<Rc<HeapState>>,
    /// After the first release.
    first: Option<Rc<HeapState>>,
    /// After the last release, with its `function#call`.
    last: Option<(String, Rc<HeapState>)>,
}

/// The phases of one audit.
#[derive(Debug, Default)]
pub struct PhaseTracker {
    open: Option<OpenPhase>,
    records: Vec<PhaseRecord>,
    calls: HashMap<String, u64>,
    releases: Releases,
}

impl PhaseTracker {
    /// Records one more entry of `function`; returns its number (1-based).
    pub fn count_call(&mut self, function: &str) -> u64 {
        let c = self.calls.entry(function.to_string()).or_default();
        *c += 1;
        *c
    }

    /// Entries of `function` seen so far.
    pub fn calls(&self, function: &str) -> u64 {
        self.calls.get(function).copied().unwrap_or(0)
    }

    /// The function of the phase open now.
    pub fn open_function(&self) -> Option<&str> {
        self.open.as_ref().map(|p| p.id.function.as_str())
    }

    /// The open phase's call number, the heap at its entry and its first event number.
    pub fn open_call(&self) -> Option<(u64, Rc<HeapState>, u64)> {
        self.open
            .as_ref()
            .map(|p| (p.id.call, Rc::clone(&p.before), p.seq_begin))
    }

    /// Drops the open phase, which can no longer end (the target is being reset after the phase
    /// failed: a hang, a fault or an exit). Returns its function.
    pub fn abandon(&mut self) -> Option<String> {
        self.open.take().map(|p| p.id.function)
    }

    /// Completed phases.
    pub fn records(&self) -> &[PhaseRecord] {
        &self.records
    }

    /// Completed phases, for the history to fold.
    pub fn records_mut(&mut self) -> &mut Vec<PhaseRecord> {
        &mut self.records
    }

    /// The last completed phase, to add what needs the trace (its peak's composition).
    pub fn last_record_mut(&mut self) -> Option<&mut PhaseRecord> {
        self.records.last_mut()
    }

    /// Opens a phase: the call `id`, the heap `before`, the event sequence number at entry.
    pub fn enter(&mut self, id: PhaseId, before: Rc<HeapState>, seq: u64) {
        if self.releases.baseline.is_none() {
            self.releases.baseline = Some(Rc::clone(&before));
        }
        self.open = Some(OpenPhase {
            id,
            peak: Peak {
                used: before.used,
                at: None,
            },
            before,
            seq_begin: seq,
            counts: Counts::default(),
            left_out: false,
        });
    }

    /// An observer left an allocation or release out while the phase is open (another task's,
    /// in a phase limited to one task).
    pub fn event_left_out(&mut self) {
        if let Some(p) = self.open.as_mut() {
            p.left_out = true;
        }
    }

    /// A traced event, made inside `span` when one is open: raises the open phase's peak.
    /// Returns the phase function to file the event under.
    pub fn on_event(&mut self, event: &HeapEvent, span: Option<&OpenSpan>) -> Option<String> {
        let p = self.open.as_mut()?;
        p.counts.first_event.get_or_insert(event.seq);
        match event.kind {
            EventKind::Alloc => p.counts.allocs += 1,
            EventKind::Free => p.counts.frees += 1,
        }
        if event.used_after > p.peak.used {
            p.peak.used = event.used_after;
            let site = (event.kind == EventKind::Alloc).then(|| event.site.clone());
            p.peak.at = Some(match span {
                Some(s) => s.peak_site(Some(event.seq), site),
                None => PeakSite {
                    seq: Some(event.seq),
                    span: None,
                    span_index: None,
                    span_arg1: None,
                    span_arg: None,
                    span_label: None,
                    site,
                },
            });
        }
        Some(p.id.function.clone())
    }

    /// `span` returned with `used` bytes in use. Without tracing, the boundary sample is the
    /// only peak evidence, and it is credited to the span.
    pub fn on_span_closed(&mut self, span: &OpenSpan, used: u64, traced: bool) {
        let Some(p) = self.open.as_mut() else {
            return;
        };
        if !traced && used > p.peak.used {
            p.peak.used = used;
            p.peak.at = Some(span.peak_site(None, None));
        }
    }

    /// Closes the open phase with the heap `after` its return and its `spans`. Returns the
    /// record and the heap at its entry; `None` when no phase is open.
    pub fn finish(
        &mut self,
        after: &Rc<HeapState>,
        end: PhaseEnd,
        spans: Vec<SpanRecord>,
    ) -> Option<(PhaseRecord, Rc<HeapState>)> {
        let p = self.open.take()?;
        // With events left out, what the counted events leave in use (the trace's total at the
        // return) stands for the heap after the phase in its figures.
        let own_after = if p.left_out {
            u64::try_from(i128::from(after.used) + i128::from(end.drift)).unwrap_or(after.used)
        } else {
            after.used
        };
        let mut peak_used = p.peak.used.max(own_after);
        let mut peak_at = p.peak.at;
        if let Some(wm_peak) = end.watermark_peak
            && wm_peak > peak_used
        {
            peak_used = wm_peak;
            peak_at = None;
        }
        let record = PhaseRecord {
            function: p.id.function.clone(),
            alias: p.id.alias,
            call: p.id.call,
            method: end.method,
            before: (&*p.before).into(),
            after: (&**after).into(),
            delta_used: delta(p.before.used, own_after),
            peak_used,
            peak_above_before: peak_used.saturating_sub(p.before.used),
            peak_at,
            composition: Vec::new(),
            spans,
            allocs: p.counts.allocs,
            frees: p.counts.frees,
            events: p.counts.first_event.map(|f| (f, end.seq.saturating_sub(1))),
            accounting_drift: end.drift,
            seq_begin: p.seq_begin,
            seq_end: end.seq,
            cycle: p.id.cycle,
            ticks: None,
            scope: None,
        };
        if end.is_release {
            if self.releases.first.is_none() {
                self.releases.first = Some(Rc::clone(after));
            }
            self.releases.last =
                Some((format!("{}#{}", p.id.function, p.id.call), Rc::clone(after)));
        }
        self.records.push(record.clone());
        Some((record, p.before))
    }

    /// The heap after the last release, block by block, leaked blocks marked with their
    /// allocation sites; `None` when no release phase ran. The baseline is the first release
    /// when there were several (blocks an application keeps after its first lifecycle are not
    /// a leak, a block more after every lifecycle is), else the first phase's entry.
    pub fn heap_map(&self, site: impl Fn(u64) -> Option<Site>) -> Option<HeapMap> {
        let (at, last) = self.releases.last.as_ref()?;
        let baseline = match &self.releases.first {
            Some(first) if !Rc::ptr_eq(first, last) => Some(first),
            _ => self.releases.baseline.as_ref(),
        };
        Some(HeapMap::new(at.clone(), last, baseline.map(|b| &**b), site))
    }
}
