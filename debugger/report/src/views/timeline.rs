//! One time axis for a run, and the water level on it. The target has no clock memlife can
//! read, so time is counted in steps: every allocator event, phase entry and return, and span
//! entry and return is one step, in the order they happened (events by sequence number; span
//! boundaries placed by the sequence numbers recorded with them). The water-level curves of
//! the audit report and the diff report, and the Perfetto trace, share it.

use std::collections::HashMap;

use crate::AuditReport;
use crate::model::{PhaseRecord, SpanRecord, TraceEvent};

/// A phase on the axis.
#[derive(Debug, Clone)]
pub struct PhaseSlot<'a> {
    /// Step of the entry.
    pub x0: u64,
    /// Step of the return.
    pub x1: u64,
    /// Its role: `load`, `build`, `run`, `switch`, `release` or the function name.
    pub role: String,
    /// The record.
    pub record: &'a PhaseRecord,
}

/// A span on the axis.
#[derive(Debug, Clone)]
pub struct SpanSlot<'a> {
    /// Step of the entry.
    pub x0: u64,
    /// Step of the return.
    pub x1: u64,
    /// Index of its phase in [`Timeline::phases`].
    pub phase: usize,
    /// The record.
    pub record: &'a SpanRecord,
}

/// The run laid out on the step axis.
#[derive(Debug, Clone, Default)]
pub struct Timeline<'a> {
    /// Used bytes at each step where it is known, in step order: the water level.
    pub points: Vec<(u64, u64)>,
    /// Phases in order.
    pub phases: Vec<PhaseSlot<'a>>,
    /// Spans in order.
    pub spans: Vec<SpanSlot<'a>>,
    /// Allocator events with their step.
    pub events: Vec<(u64, &'a TraceEvent)>,
    /// The last step.
    pub end: u64,
}

/// Order of the happenings at one sequence number: the boundaries recorded with it come before
/// the event that carries it (a boundary records the next event's number). Spans that began
/// earlier close first, innermost first; then spans that begin here open in order, each closing
/// right after itself when nothing happened inside.
type Key = (u64, u8, i64, u8);

impl<'a> Timeline<'a> {
    /// Lays out `report`.
    pub fn build(report: &'a AuditReport) -> Self {
        let mut t = Timeline::default();
        let mut x = 0u64;
        let mut events = report.events.iter().peekable();
        for p in &report.phases {
            while let Some(e) = events.next_if(|e| e.seq < p.seq_begin) {
                x += 1;
                t.points.push((x, e.used_after));
                t.events.push((x, e));
            }
            x += 1;
            let x0 = x;
            t.points.push((x0, p.before.used));
            let phase = t.phases.len();
            let mut happenings: Vec<(Key, Happening<'a>)> = Vec::new();
            for (i, s) in p.spans.iter().enumerate() {
                let i64_ = i as i64;
                happenings.push(((s.seq_begin, 1, i64_, 0), Happening::Begin(i)));
                let end = if s.seq_end > s.seq_begin {
                    (s.seq_end, 0, -i64_, 0)
                } else {
                    (s.seq_end, 1, i64_, 1)
                };
                happenings.push((end, Happening::End(i)));
            }
            while let Some(e) = events.next_if(|e| e.seq < p.seq_end) {
                happenings.push(((e.seq, 2, 0, 0), Happening::Event(e)));
            }
            happenings.sort_by_key(|h| h.0);
            let mut open: HashMap<usize, u64> = HashMap::new();
            for (_, h) in happenings {
                x += 1;
                match h {
                    Happening::Begin(i) => {
                        open.insert(i, x);
                        t.points.push((x, p.spans[i].before_used));
                    }
                    Happening::End(i) => {
                        t.points.push((x, p.spans[i].after_used));
                        t.spans.push(SpanSlot {
                            x0: open.remove(&i).unwrap_or(x),
                            x1: x,
                            phase,
                            record: &p.spans[i],
                        });
                    }
                    Happening::Event(e) => {
                        t.points.push((x, e.used_after));
                        t.events.push((x, e));
                    }
                }
            }
            x += 1;
            t.points.push((x, p.after.used));
            t.phases.push(PhaseSlot {
                x0,
                x1: x,
                role: report.role_of(p).to_string(),
                record: p,
            });
        }
        for e in events {
            x += 1;
            t.points.push((x, e.used_after));
            t.events.push((x, e));
        }
        t.spans.sort_by_key(|s| (s.x0, s.x1));
        t.end = x;
        t
    }

    /// The water level alone: used bytes at every step, in order, one value per step (the same
    /// steps whether a phase allocated or not, so that two runs' curves line up).
    pub fn levels(&self) -> impl Iterator<Item = u64> + '_ {
        self.points.iter().map(|&(_, used)| used)
    }

    /// The highest water level, 0 for an empty run.
    pub fn highest(&self) -> u64 {
        self.levels().max().unwrap_or(0)
    }

    /// The step of event `seq`.
    pub fn step_of(&self, seq: u64) -> Option<u64> {
        self.events
            .binary_search_by_key(&seq, |(_, e)| e.seq)
            .ok()
            .map(|i| self.events[i].0)
    }

    /// The curve with at most about `max` points: per bucket of steps the lowest and the
    /// highest point, in step order, so peaks and dips survive decimation.
    pub fn decimated(&self, max: usize) -> Vec<(u64, u64)> {
        if self.points.len() <= max || max < 4 {
            return self.points.clone();
        }
        let buckets = (max / 2) as u64;
        let width = self.end / buckets + 1;
        let mut out = Vec::with_capacity(max + 2);
        let mut i = 0;
        while i < self.points.len() {
            let bucket = self.points[i].0 / width;
            let mut j = i;
            let (mut lo, mut hi) = (i, i);
            while j < self.points.len() && self.points[j].0 / width == bucket {
                if self.points[j].1 < self.points[lo].1 {
                    lo = j;
                }
                if self.points[j].1 > self.points[hi].1 {
                    hi = j;
                }
                j += 1;
            }
            let (a, b) = if lo <= hi { (lo, hi) } else { (hi, lo) };
            out.push(self.points[a]);
            if b != a {
                out.push(self.points[b]);
            }
            i = j;
        }
        out
    }
}

#[derive(Debug, Clone, Copy)]
enum Happening<'a> {
    Begin(usize),
    End(usize),
    Event(&'a TraceEvent),
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The water level follows events inside phases, and the span boundaries of a phase without
    /// events; the same values `memlife diff` drew before the views were shared.
    #[test]
    fn the_water_level_follows_events_inside_phases_and_spans_without_them() {
        let r = AuditReport::from_slice(
            br#"{"run": {}, "phases": [
                {"function": "load", "before": {"used": 0}, "after": {"used": 30}, "seq_begin": 0, "seq_end": 2},
                {"function": "run", "before": {"used": 30}, "after": {"used": 30}, "seq_begin": 2, "seq_end": 4,
                 "spans": [{"before_used": 30, "after_used": 30, "seq_begin": 2, "seq_end": 2},
                           {"before_used": 30, "after_used": 30, "seq_begin": 2, "seq_end": 4}]}],
              "events": [{"seq": 0, "kind": "alloc", "used_after": 40}, {"seq": 1, "kind": "free", "used_after": 30},
                         {"seq": 2, "kind": "alloc", "used_after": 50}, {"seq": 3, "kind": "free", "used_after": 30}]}"#,
        )
        .unwrap();
        let t = Timeline::build(&r);
        assert_eq!(
            t.levels().collect::<Vec<_>>(),
            [0, 40, 30, 30, 30, 30, 30, 30, 50, 30, 30, 30]
        );
        assert_eq!(t.highest(), 50);
        // One step per value, from 1.
        let steps: Vec<u64> = t.points.iter().map(|p| p.0).collect();
        assert_eq!(steps, (1..=12).collect::<Vec<_>>());
        assert_eq!((t.end, t.step_of(2)), (12, Some(9)));
    }
}
