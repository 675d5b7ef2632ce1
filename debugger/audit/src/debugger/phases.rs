//! Phase tracking: the calls of the lifecycle functions, the phase open now with its nested
//! spans, the peak inside and where it happened, and the completed phase records. Pure
//! bookkeeping over the numbers it is given (used bytes, event sequence numbers, heap states):
//! no target access, so everything here is unit-tested directly.
//!
//! The run loop tells it what happened ([`PhaseTracker::count_call`], [`PhaseTracker::enter`],
//! [`PhaseTracker::on_event`], the span opens and closes, [`PhaseTracker::finish`]); the
//! script-facing "run one phase" API ([`super::phase_run`]) decides when.

use std::collections::HashMap;
use std::rc::Rc;

use memlife_heap::HeapState;

use crate::config::PeakMethod;
use crate::model::{Damage, EventKind, HeapMap, PeakSite, PhaseRecord, Site, SpanRecord};

/// The allocator's low-water mark as memlife reset it at a phase entry (watermark method).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct WatermarkState {
    /// Address of the minimum-ever counter.
    pub min_addr: u64,
    /// Its value before memlife reset it, restored at the phase's end.
    pub original_min: u32,
}

#[derive(Debug, Clone)]
struct OpenSpan {
    seq_begin: u64,
    function: String,
    call: u64,
    index: usize,
    args: [u64; 4],
    arg: u64,
    label: Option<String>,
    before_used: u64,
    peak_used: u64,
}

impl OpenSpan {
    fn label(&self) -> String {
        format!("{}#{}", self.function, self.call)
    }
}

#[derive(Debug, Clone)]
struct OpenPhase {
    function: String,
    alias: Option<String>,
    call: u64,
    before: Rc<HeapState>,
    peak_used: u64,
    peak_at: Option<PeakSite>,
    spans: Vec<SpanRecord>,
    open_spans: Vec<OpenSpan>,
    first_event: Option<u64>,
    allocs: u64,
    frees: u64,
    watermark: Option<WatermarkState>,
    seq_begin: u64,
    cycle: Option<u64>,
}

/// What closing a phase needs to know besides the heap after it.
#[derive(Debug, Clone, Copy)]
pub(super) struct PhaseEnd {
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

/// The phases of one audit.
#[derive(Debug, Default)]
pub(super) struct PhaseTracker {
    open: Option<OpenPhase>,
    records: Vec<PhaseRecord>,
    calls: HashMap<String, u64>,
    /// The heap at the first phase's entry, and after the first and the last release: what the
    /// report's heap map compares to tell leaked blocks from blocks kept for good.
    baseline: Option<Rc<HeapState>>,
    first_release: Option<Rc<HeapState>>,
    last_release: Option<(String, Rc<HeapState>)>,
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
        self.open.as_ref().map(|p| p.function.as_str())
    }

    /// The open phase's call number, the heap at its entry and its first event number.
    pub fn open_call(&self) -> Option<(u64, Rc<HeapState>, u64)> {
        self.open
            .as_ref()
            .map(|p| (p.call, Rc::clone(&p.before), p.seq_begin))
    }

    /// Drops the open phase, which can no longer end (the target is being reset after the phase
    /// failed: a hang, a fault or an exit). Returns its function.
    pub fn abandon(&mut self) -> Option<String> {
        self.open.take().map(|p| p.function)
    }

    /// The low-water mark the open phase reset, if any.
    pub fn open_watermark(&self) -> Option<WatermarkState> {
        self.open.as_ref().and_then(|p| p.watermark)
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

    /// Opens a phase: `call` of `function` (asked for as `alias`, in `cycle` when observed as
    /// part of one), the heap `before`, the event sequence number at entry.
    #[allow(clippy::too_many_arguments)] // one record's fields, named at the one call site
    pub fn enter(
        &mut self,
        function: &str,
        alias: Option<String>,
        call: u64,
        before: Rc<HeapState>,
        watermark: Option<WatermarkState>,
        seq: u64,
        cycle: Option<u64>,
    ) {
        if self.baseline.is_none() {
            self.baseline = Some(Rc::clone(&before));
        }
        self.open = Some(OpenPhase {
            function: function.to_string(),
            alias,
            call,
            peak_used: before.used,
            before,
            peak_at: None,
            spans: Vec::new(),
            open_spans: Vec::new(),
            first_event: None,
            allocs: 0,
            frees: 0,
            watermark,
            seq_begin: seq,
            cycle,
        });
    }

    /// A traced event: raises the peaks of the open phase and spans. Returns the phase function
    /// and the innermost span (`function#call`) to file the event under.
    pub fn on_event(
        &mut self,
        seq: u64,
        used: u64,
        kind: EventKind,
        site: &Site,
    ) -> (Option<String>, Option<String>) {
        let Some(p) = self.open.as_mut() else {
            return (None, None);
        };
        let span = p.open_spans.last().map(OpenSpan::label);
        p.first_event.get_or_insert(seq);
        match kind {
            EventKind::Alloc => p.allocs += 1,
            EventKind::Free => p.frees += 1,
        }
        for s in &mut p.open_spans {
            s.peak_used = s.peak_used.max(used);
        }
        if used > p.peak_used {
            p.peak_used = used;
            let open = p.open_spans.last();
            p.peak_at = Some(PeakSite {
                seq: Some(seq),
                span: span.clone(),
                span_index: open.map(|s| s.index),
                span_arg1: open.map(|s| s.args[1]),
                span_arg: open.map(|s| s.arg),
                span_label: open.and_then(|s| s.label.clone()),
                site: (kind == EventKind::Alloc).then(|| site.clone()),
            });
        }
        (Some(p.function.clone()), span)
    }

    /// A span function was entered inside the open phase (ignored outside one), its argument
    /// `arg` telling it apart, named `label`. Returns whether a span was opened.
    #[allow(clippy::too_many_arguments)] // one record's fields, named at the one call site
    pub fn open_span(
        &mut self,
        function: &str,
        call: u64,
        args: [u64; 4],
        arg: u64,
        label: Option<String>,
        used: u64,
        seq: u64,
    ) -> bool {
        let Some(p) = self.open.as_mut() else {
            return false;
        };
        let index = p.spans.len() + p.open_spans.len();
        p.open_spans.push(OpenSpan {
            seq_begin: seq,
            function: function.to_string(),
            call,
            index,
            args,
            arg,
            label,
            before_used: used,
            peak_used: used,
        });
        true
    }

    /// The innermost span returned with `used` bytes in use. Without tracing, the boundary
    /// sample is the only peak evidence, and it is credited to the span.
    pub fn close_span(&mut self, used: u64, seq: u64, traced: bool, damage: Vec<Damage>) {
        let Some(p) = self.open.as_mut() else {
            return;
        };
        let Some(s) = p.open_spans.pop() else {
            return;
        };
        let peak = s.peak_used.max(used);
        if !traced && used > p.peak_used {
            p.peak_used = used;
            p.peak_at = Some(PeakSite {
                seq: None,
                span: Some(s.label()),
                span_index: Some(s.index),
                span_arg1: Some(s.args[1]),
                span_arg: Some(s.arg),
                span_label: s.label.clone(),
                site: None,
            });
        }
        p.spans.push(SpanRecord {
            function: s.function,
            call: s.call,
            index: s.index,
            args: s.args,
            arg: s.arg,
            label: s.label,
            before_used: s.before_used,
            after_used: used,
            delta: crate::values::delta(s.before_used, used),
            peak_used: peak,
            seq_begin: s.seq_begin,
            seq_end: seq,
            damage,
        });
        p.spans.sort_by_key(|s| s.index);
    }

    /// Closes the open phase with the heap `after` its return. Returns the record and the heap
    /// at its entry; `None` when no phase is open.
    pub fn finish(
        &mut self,
        after: &Rc<HeapState>,
        end: PhaseEnd,
    ) -> Option<(PhaseRecord, Rc<HeapState>)> {
        let p = self.open.take()?;
        let mut peak_used = p.peak_used.max(after.used);
        let mut peak_at = p.peak_at;
        if let Some(wm_peak) = end.watermark_peak
            && wm_peak > peak_used
        {
            peak_used = wm_peak;
            peak_at = None;
        }
        let record = PhaseRecord {
            function: p.function.clone(),
            alias: p.alias,
            call: p.call,
            method: end.method,
            before: (&*p.before).into(),
            after: (&**after).into(),
            delta_used: crate::values::delta(p.before.used, after.used),
            peak_used,
            peak_above_before: peak_used.saturating_sub(p.before.used),
            peak_at,
            composition: Vec::new(),
            spans: p.spans,
            allocs: p.allocs,
            frees: p.frees,
            events: p.first_event.map(|f| (f, end.seq.saturating_sub(1))),
            accounting_drift: end.drift,
            seq_begin: p.seq_begin,
            seq_end: end.seq,
            cycle: p.cycle,
        };
        if end.is_release {
            if self.first_release.is_none() {
                self.first_release = Some(Rc::clone(after));
            }
            self.last_release = Some((format!("{}#{}", p.function, p.call), Rc::clone(after)));
        }
        self.records.push(record.clone());
        Some((record, p.before))
    }

    /// The heap after the last release, block by block, leaked blocks marked with their
    /// allocation sites; `None` when no release phase ran. The baseline is the first release
    /// when there were several (blocks an application keeps after its first lifecycle are not
    /// a leak, a block more after every lifecycle is), else the first phase's entry.
    pub fn heap_map(&self, site: impl Fn(u64) -> Option<Site>) -> Option<HeapMap> {
        let (at, last) = self.last_release.as_ref()?;
        let baseline = match &self.first_release {
            Some(first) if !Rc::ptr_eq(first, last) => Some(first),
            _ => self.baseline.as_ref(),
        };
        Some(HeapMap::new(at.clone(), last, baseline.map(|b| &**b), site))
    }
}
