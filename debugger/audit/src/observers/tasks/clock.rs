//! The firmware's own clock at phase and span boundaries: the kernel's tick count at each
//! call's entry and return, kept by call for the report's records.

use std::collections::HashMap;

use crate::model::Ticks;

/// Calls kept at most: a run past this many phase and span calls keeps the first ones only.
const MAX_CALLS: usize = 1 << 20;

/// The ticks of every phase and span call seen, by (function, call).
#[derive(Debug, Default)]
pub struct Clock {
    phases: HashMap<(String, u64), Ticks>,
    spans: HashMap<(String, u64), Ticks>,
    /// The open phase's entry tick.
    phase_begin: Option<u64>,
    /// The open spans' entry ticks, innermost last.
    span_begins: Vec<Option<u64>>,
}

impl Clock {
    /// A phase was entered at `tick`.
    pub fn phase_entered(&mut self, tick: Option<u64>) {
        self.phase_begin = tick;
        self.span_begins.clear();
    }

    /// The open phase, call `call` of `function`, returned at `tick`.
    pub fn phase_returned(&mut self, function: &str, call: u64, tick: Option<u64>) {
        if let (Some(begin), Some(end)) = (self.phase_begin.take(), tick)
            && self.phases.len() < MAX_CALLS
        {
            self.phases
                .insert((function.to_string(), call), Ticks { begin, end });
        }
    }

    /// A span was opened at `tick`.
    pub fn span_opened(&mut self, tick: Option<u64>) {
        self.span_begins.push(tick);
    }

    /// The innermost span, call `call` of `function`, returned at `tick`.
    pub fn span_closed(&mut self, function: &str, call: u64, tick: Option<u64>) {
        if let (Some(Some(begin)), Some(end)) = (self.span_begins.pop(), tick)
            && self.spans.len() < MAX_CALLS
        {
            self.spans
                .insert((function.to_string(), call), Ticks { begin, end });
        }
    }

    /// The ticks of a phase call.
    pub fn phase(&self, function: &str, call: u64) -> Option<Ticks> {
        self.phases.get(&(function.to_string(), call)).copied()
    }

    /// The ticks of a span call.
    pub fn span(&self, function: &str, call: u64) -> Option<Ticks> {
        self.spans.get(&(function.to_string(), call)).copied()
    }

    /// The target was reset: nothing is open.
    pub fn on_reset(&mut self) {
        self.phase_begin = None;
        self.span_begins.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_call_keeps_its_entry_and_return_ticks() {
        let mut c = Clock::default();
        c.phase_entered(Some(100));
        c.span_opened(Some(101));
        c.span_opened(Some(102));
        c.span_closed("inner", 1, Some(103));
        c.span_closed("outer", 1, Some(105));
        c.phase_returned("inference_run", 2, Some(110));
        assert_eq!(
            c.span("inner", 1),
            Some(Ticks {
                begin: 102,
                end: 103
            })
        );
        assert_eq!(
            c.span("outer", 1),
            Some(Ticks {
                begin: 101,
                end: 105
            })
        );
        assert_eq!(
            c.phase("inference_run", 2),
            Some(Ticks {
                begin: 100,
                end: 110
            })
        );
        // No tick at entry (no kernel clock): nothing kept.
        c.phase_entered(None);
        c.phase_returned("model_load", 1, Some(120));
        assert_eq!(c.phase("model_load", 1), None);
    }
}
