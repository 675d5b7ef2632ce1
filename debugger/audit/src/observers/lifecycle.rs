//! The lifecycle observer: the phases ([`PhaseTracker`]) and the cycles they make up
//! ([`Cycles`]), kept together because a cycle's end folds the phases it recorded.

use super::cycles::Cycles;
use super::phases::PhaseTracker;

/// Phases and cycles.
#[derive(Debug, Default)]
pub struct Lifecycle {
    /// The phases: calls counted, the open one, the records.
    pub phases: PhaseTracker,
    /// The cycles: how many, where the last one ended, the history of a long run.
    pub cycles: Cycles,
}

impl Lifecycle {
    /// Whether a phase is open.
    pub fn in_phase(&self) -> bool {
        self.phases.open_function().is_some()
    }
}
