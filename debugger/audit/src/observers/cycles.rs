//! What the lifecycle's cycles leave behind: how many completed, where the last one left the
//! target (halted at the entry of the call that begins the next, still unrecorded), whether the
//! firmware stopped running them ([`Stopped`]), and what a long run keeps of its cycles
//! ([`crate::history`]). The observing itself, stop by stop, is `crate::debugger::cycle_run`.
//!
//! A firmware stops running its lifecycle when it exits (semihosting `SYS_EXIT`, how a test
//! build ends), hangs (parked in a loop, or nothing before `--timeout`) or faults. Every run
//! that ends so records it (`Debugger::stopped`) until the target is reset, so that a script
//! can give its verdict over the cycles it saw (`t.next_cycle()` returns `()` then, and
//! `t.stopped()` says why) instead of losing it to the error; the wait after an injected
//! failure reports the same three ends as what the firmware did with the failure.

use memlife_core::TargetError;

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
    /// How the firmware stopped running its lifecycle, once it did (until a reset).
    stopped: Option<Stopped>,
    /// The most role calls a completed cycle made (the bound on a cycle that never completes
    /// allows a multiple of it).
    most_calls: u64,
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

    /// The target was reset: it is no longer where a cycle ended, and runs again.
    pub fn on_reset(&mut self) {
        self.start = None;
        self.stopped = None;
    }

    /// The firmware stopped running its lifecycle.
    pub fn set_stopped(&mut self, stopped: Stopped) {
        self.stopped = Some(stopped);
    }

    /// How the firmware stopped running its lifecycle, once it did.
    pub fn stopped(&self) -> Option<&Stopped> {
        self.stopped.as_ref()
    }

    /// The program's exit status, once it exited.
    pub fn exited(&self) -> Option<i32> {
        match self.stopped {
            Some(Stopped::Exit { status, .. }) => Some(status),
            _ => None,
        }
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

    /// A completed cycle made `calls` role calls.
    pub fn made_calls(&mut self, calls: u64) {
        self.most_calls = self.most_calls.max(calls);
    }

    /// The most role calls a completed cycle made.
    pub fn most_calls(&self) -> u64 {
        self.most_calls
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

/// Why the firmware no longer runs its lifecycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// The program exited, with its status, inside this phase when one was open.
    Exit {
        /// Exit status.
        status: i32,
        /// The phase open then (its function).
        during: Option<String>,
    },
    /// It never came back: parked in a loop, or nothing before the timeout (what memlife saw).
    Hang(String),
    /// It faulted (what, where, why).
    Fault(String),
}

impl Stopped {
    /// The stop an error of a run stands for (`during`: the phase open then); `None` for
    /// errors that are not the firmware's (settings, the link, an interrupt).
    pub fn from_error(e: &AuditError, during: Option<&str>) -> Option<Stopped> {
        match e {
            AuditError::Target(TargetError::Exited(status)) => Some(Stopped::Exit {
                status: *status,
                during: during.map(str::to_string),
            }),
            AuditError::NotReached { .. } | AuditError::Parked { .. } => {
                Some(Stopped::Hang(e.to_string()))
            }
            AuditError::Faulted(what) => Some(Stopped::Fault(what.clone())),
            _ => None,
        }
    }

    /// A short name for scripts and JSON: `exit`, `hang`, `fault`.
    pub fn kind(&self) -> &'static str {
        match self {
            Stopped::Exit { .. } => "exit",
            Stopped::Hang(_) => "hang",
            Stopped::Fault(_) => "fault",
        }
    }

    /// An exit with status 0 between phases: how a test build that ran its cycles ends.
    pub fn is_clean(&self) -> bool {
        matches!(
            self,
            Stopped::Exit {
                status: 0,
                during: None
            }
        )
    }

    /// One line for messages.
    pub fn describe(&self) -> String {
        match self {
            Stopped::Exit {
                status,
                during: None,
            } => format!("the firmware exited with status {status}"),
            Stopped::Exit {
                status,
                during: Some(f),
            } => format!("the firmware exited with status {status} during {f}"),
            Stopped::Hang(what) => format!("the firmware hung: {what}"),
            Stopped::Fault(what) => format!("the firmware faulted: {what}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_firmwares_own_ends_are_stops() {
        let exit = AuditError::Target(TargetError::Exited(0));
        let s = Stopped::from_error(&exit, None);
        assert_eq!(
            s.as_ref().map(|s| (s.kind(), s.is_clean())),
            Some(("exit", true))
        );
        let inside = Stopped::from_error(&exit, Some("model_load"));
        assert_eq!(
            inside.as_ref().map(Stopped::describe).as_deref(),
            Some("the firmware exited with status 0 during model_load")
        );
        assert!(!inside.is_some_and(|s| s.is_clean()));
        let hang = AuditError::NotReached {
            what: "return of model_load".into(),
            seconds: 1.0,
            at: " at pc 0x08000100 in fw_fail".into(),
        };
        let s = Stopped::from_error(&hang, None).map(|s| s.describe());
        assert!(
            s.as_deref()
                .is_some_and(|s| s.starts_with("the firmware hung: return of model_load")
                    && s.contains("fw_fail")),
            "{s:?}"
        );
        assert_eq!(
            Stopped::from_error(&AuditError::Faulted("HardFault".into()), None).map(|s| s.kind()),
            Some("fault")
        );
        for not_the_firmware in [
            AuditError::Config("bad".into()),
            AuditError::Target(TargetError::Interrupted),
        ] {
            assert_eq!(Stopped::from_error(&not_the_firmware, None), None);
        }
    }
}
