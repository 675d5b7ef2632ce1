//! Spans: the nested calls of a span function inside the open phase (every `op_init` of
//! `graph_build`, every layer's invoke of `inference_run`), each with the bytes in use at its
//! entry and return and the peak inside; and their names ([`SpanLabels`]).
//!
//! The engine opens a span at the span function's entry when a phase is open and awaits its
//! return by stack pointer; events raise the open spans' peaks; at the phase's end the closed
//! spans go into its record, in call order.

use crate::figures::delta;
use crate::model::{Damage, PeakSite, Site, SpanRecord};
use crate::observers::labels::SpanLabels;

/// A span whose return is awaited.
#[derive(Debug, Clone)]
pub struct OpenSpan {
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
    /// `function#call`, what events are filed under.
    pub fn name(&self) -> String {
        format!("{}#{}", self.function, self.call)
    }

    /// Its index among the phase's spans.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Where a peak reached inside it is: event `seq` (none for a boundary sample) made at
    /// `site`.
    pub fn peak_site(&self, seq: Option<u64>, site: Option<Site>) -> PeakSite {
        PeakSite {
            seq,
            span: Some(self.name()),
            span_index: Some(self.index),
            span_arg1: Some(self.args[1]),
            span_arg: Some(self.arg),
            span_label: self.label.clone(),
            site,
        }
    }
}

/// What a span's entry told.
#[derive(Debug, Clone)]
pub struct SpanEntry {
    /// The span function.
    pub function: String,
    /// Its call number.
    pub call: u64,
    /// Its arguments (r0-r3).
    pub args: [u64; 4],
    /// The argument that tells its spans apart.
    pub arg: u64,
    /// Its name, when `[labels]` gives one.
    pub label: Option<String>,
}

/// The spans of the open phase.
#[derive(Debug, Default)]
pub struct Spans {
    /// Entered and not returned, innermost last.
    open: Vec<OpenSpan>,
    /// Returned, in the order they returned.
    closed: Vec<SpanRecord>,
    /// Their names.
    labels: SpanLabels,
}

impl Spans {
    /// Opens a span at its entry with `used` bytes in use, event `seq` next.
    pub fn open(&mut self, entry: SpanEntry, used: u64, seq: u64) {
        let index = self.closed.len() + self.open.len();
        self.open.push(OpenSpan {
            seq_begin: seq,
            function: entry.function,
            call: entry.call,
            index,
            args: entry.args,
            arg: entry.arg,
            label: entry.label,
            before_used: used,
            peak_used: used,
        });
    }

    /// The innermost open span.
    pub fn innermost(&self) -> Option<&OpenSpan> {
        self.open.last()
    }

    /// An event left `used` bytes in use: the open spans' peaks rise.
    pub fn on_event(&mut self, used: u64) {
        for s in &mut self.open {
            s.peak_used = s.peak_used.max(used);
        }
    }

    /// The innermost span returned with `used` bytes in use, event `seq` next: its record is
    /// kept for the phase, and the span is given back (its peak site, for a sampled peak).
    pub fn close(
        &mut self,
        used: u64,
        seq: u64,
        damage: Vec<Damage>,
    ) -> Option<(OpenSpan, &SpanRecord)> {
        let s = self.open.pop()?;
        self.closed.push(SpanRecord {
            function: s.function.clone(),
            call: s.call,
            index: s.index,
            args: s.args,
            arg: s.arg,
            label: s.label.clone(),
            before_used: s.before_used,
            after_used: used,
            delta: delta(s.before_used, used),
            peak_used: s.peak_used.max(used),
            seq_begin: s.seq_begin,
            seq_end: seq,
            damage,
            ticks: None,
        });
        let record = self.closed.last()?;
        Some((s, record))
    }

    /// The phase ended: its spans in call order; spans still open are dropped.
    pub fn take(&mut self) -> Vec<SpanRecord> {
        self.open.clear();
        let mut spans = std::mem::take(&mut self.closed);
        spans.sort_by_key(|s| s.index);
        spans
    }

    /// The phase was abandoned: its spans go with it.
    pub fn clear(&mut self) {
        self.open.clear();
        self.closed.clear();
    }

    /// The span names.
    pub fn labels(&self) -> &SpanLabels {
        &self.labels
    }

    /// The span names, to read or set.
    pub fn labels_mut(&mut self) -> &mut SpanLabels {
        &mut self.labels
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn entry(call: u64, arg: u64) -> SpanEntry {
        SpanEntry {
            function: "op_init".into(),
            call,
            args: [0, arg, 0, 0],
            arg,
            label: None,
        }
    }

    #[test]
    fn nested_spans_keep_their_own_peaks_and_end_in_call_order() {
        let mut s = Spans::default();
        s.open(entry(1, 0), 0, 0);
        s.on_event(32);
        s.open(entry(2, 1), 32, 1);
        s.on_event(48);
        let (inner, record) = s.close(48, 2, Vec::new()).unwrap();
        assert_eq!(
            (record.before_used, record.delta, record.peak_used),
            (32, 16, 48)
        );
        assert_eq!(inner.name(), "op_init#2");
        s.on_event(32);
        let (_, outer) = s.close(32, 3, Vec::new()).unwrap();
        assert_eq!((outer.delta, outer.peak_used), (32, 48));
        assert!(s.close(0, 4, Vec::new()).is_none(), "no span is open");
        let spans = s.take();
        assert_eq!(spans.iter().map(|s| s.call).collect::<Vec<_>>(), vec![1, 2]);
        assert!(s.take().is_empty());
    }
}
