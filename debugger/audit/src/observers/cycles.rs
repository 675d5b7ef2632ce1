//! What the lifecycle's cycles leave behind: how many completed, where the last one left the
//! target (halted at the entry of the call that begins the next, still unrecorded), whether the
//! program exited, and what a long run keeps of its cycles ([`crate::history`]). The observing
//! itself, stop by stop, is `crate::debugger::cycle_run`.

use crate::error::AuditError;
use crate::history::{Folded, History};
use crate::model::{PhaseRecord, TraceEvent};

/// Where the last cycle left the target: halted at the entry of `function`, which no phase
/// recorded yet, as of the `stops`-th stop.
#[derive(Debug, Clone)]
struct CycleStart {
    function: String,
    stops: u64,
}

/// The cycles of one audit.
#[derive(Debug, Default)]
pub struct Cycles {
    /// Cycles observed to their end.
    done: u64,
    /// Where the last cycle left the target, while it is still there.
    start: Option<CycleStart>,
    /// The program's exit status once it exited while cycles were observed.
    exited: Option<i32>,
    /// Which cycles are kept in full, and what the folded ones said.
    history: History,
}

impl Cycles {
    /// Cycles observed to their end.
    pub fn done(&self) -> u64 {
        self.done
    }

    /// The target is halted at the entry of `function`, at the `stops`-th stop, and that call
    /// begins the next cycle.
    pub fn ended_at(&mut self, function: String, stops: u64) {
        self.start = Some(CycleStart { function, stops });
    }

    /// Whether the target is halted at the entry of `function` where the last cycle ended (at
    /// the `stops`-th stop: nothing ran since), that call still unrecorded; consumes it.
    pub fn take_start(&mut self, function: &str, stops: u64) -> bool {
        self.start
            .take()
            .is_some_and(|s| s.function == function && s.stops == stops)
    }

    /// The target was reset: it is no longer where a cycle ended.
    pub fn on_reset(&mut self) {
        self.start = None;
    }

    /// The program exited with `status`.
    pub fn set_exited(&mut self, status: i32) {
        self.exited = Some(status);
    }

    /// The program's exit status, once it exited.
    pub fn exited(&self) -> Option<i32> {
        self.exited
    }

    /// The error for a cycle asked for, or that cannot complete, after the program exited
    /// with `status` (`during`: the phase open then).
    pub fn exited_error(&self, status: i32, during: Option<String>) -> AuditError {
        AuditError::ExitedAfterCycles {
            cycles: self.done,
            status,
            during,
        }
    }

    /// Cycle `index` completed: a long run keeps its first and last cycles, and the one
    /// leaving the tail is folded out of `events` and `records`.
    pub fn completed(
        &mut self,
        index: u64,
        events: &mut Vec<TraceEvent>,
        records: &mut Vec<PhaseRecord>,
    ) {
        self.done = index;
        self.history.cycle_done(index, events, records);
    }

    /// Keeps `keep` observed cycles in full at each end of the run (`None`: every cycle).
    pub fn set_keep(&mut self, keep: Option<u64>) {
        self.history = History::new(keep);
    }

    /// What a long run keeps.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The cycles folded out of the middle of the run, once any were.
    pub fn folded(&self) -> Option<&Folded> {
        self.history.folded()
    }
}
