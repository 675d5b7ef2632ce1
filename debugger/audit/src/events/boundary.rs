//! Phase and span boundaries: when the lifecycle observer opens or closes a phase and the spans
//! observer a span, the engine tells the added observers ([`super::Observer::on_boundary`]).

use crate::model::{PhaseRecord, SpanRecord};

/// A phase or a span began or ended.
#[derive(Debug, Clone, Copy)]
pub enum Boundary<'a> {
    /// A phase's function was entered (the target is halted at its entry).
    PhaseEntered {
        /// The function.
        function: &'a str,
        /// Its call number (1-based).
        call: u64,
        /// The cycle it is part of, when cycles are observed.
        cycle: Option<u64>,
    },
    /// The open phase returned: its record.
    PhaseReturned(&'a PhaseRecord),
    /// A span's function was entered inside the open phase.
    SpanOpened {
        /// The function.
        function: &'a str,
        /// Its call number.
        call: u64,
        /// Its index among the phase's spans.
        index: usize,
        /// The argument that tells its spans apart.
        arg: u64,
    },
    /// The innermost span returned: its record.
    SpanClosed(&'a SpanRecord),
}
