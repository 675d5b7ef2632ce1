//! What the audit recorded, as the report and the scripts read it: phase records, events,
//! totals over folded cycles, late frees, live and damaged blocks, the heap map, the
//! breakpoints used. Read-only views over the observers' state.

use std::collections::BTreeMap;

use memlife_heap::HeapState;

use super::facade::Debugger;
use super::progress::Progress;
use crate::deferred::DeferredBlock;
use crate::events::Tags;
use crate::history::{Folded, Totals};
use crate::model::{
    Damage, FirmwareTime, HeapMap, ModelCycles, PhaseRecord, TraceEvent, TraceFacts,
};
use crate::observers::{Injected, LiveAlloc, Stopped};
use crate::session::BreakpointUse;

impl Debugger {
    /// Completed phases.
    pub fn records(&self) -> &[PhaseRecord] {
        self.lifecycle.phases.records()
    }

    /// Trace events kept: all of them, but for those of folded cycles (see [`Self::folded`]).
    pub fn events(&self) -> &[TraceEvent] {
        self.trace.events()
    }

    /// What added observers tagged event `seq` with.
    pub fn event_tags(&self, seq: u64) -> Option<&Tags> {
        self.trace.tags(seq)
    }

    /// The cycles folded out of the middle of the run, once any were.
    pub fn folded(&self) -> Option<&Folded> {
        self.lifecycle.cycles.folded()
    }

    /// The folded cycles as the report gives them (with the blocks live at the fold's end).
    pub fn folded_report(&self) -> Option<Folded> {
        self.lifecycle.cycles.history().folded_report()
    }

    /// Totals over the whole run: the kept phases and events, and the folded ones.
    pub fn totals(&self) -> Totals {
        let kept = Totals::of(self.trace.events(), self.lifecycle.phases.records());
        match self.folded() {
            Some(f) => kept.plus(&f.totals),
            None => kept,
        }
    }

    /// The late frees of the run (blocks one cycle allocated and a later one freed): the first
    /// [`crate::deferred::MAX_LISTED`], and how many more there were.
    pub fn deferred(&self) -> (Vec<DeferredBlock>, u64) {
        self.lifecycle
            .cycles
            .history()
            .deferred(self.trace.events(), self.lifecycle.phases.records())
    }

    /// Why the firmware stopped running its lifecycle, once a run ended in an exit, a hang or
    /// a fault; `None` while it runs (and again after a reset). See `crate::observers::cycles`.
    pub fn stopped(&self) -> Option<&Stopped> {
        self.lifecycle.cycles.stopped()
    }

    /// Cycles observed to their end.
    pub fn cycles_done(&self) -> u64 {
        self.lifecycle.cycles.done()
    }

    /// Blocks the trace saw allocated and not freed, by block address.
    pub fn live(&self) -> &BTreeMap<u64, LiveAlloc> {
        self.trace.live()
    }

    /// Entries of `function` seen so far.
    pub fn calls(&self, function: &str) -> u64 {
        self.lifecycle.phases.calls(function)
    }

    /// Stops handled so far.
    pub fn progress(&self) -> &Progress {
        &self.reporter.progress
    }

    /// The heap after the last release, block by block, leaked blocks marked with their
    /// allocation sites; `None` when no release phase ran.
    pub fn heap_map(&self) -> Option<HeapMap> {
        let live = self.trace.live();
        self.lifecycle
            .phases
            .heap_map(|addr| live.get(&addr).map(|l| l.site.clone()))
    }

    /// The blocks whose contents `state` found damaged, with the allocation site the trace
    /// recorded for each.
    pub fn damage(&self, state: &HeapState) -> Vec<Damage> {
        self.trace.live_blocks().damage(state)
    }

    /// The breakpoints this audit used so far.
    pub fn breakpoint_use(&self) -> BreakpointUse {
        self.session.breakpoint_use()
    }

    /// Whether allocations are being traced right now.
    pub fn tracing(&self) -> bool {
        self.trace.is_on()
    }

    /// What the allocation trace recorded, and why (`run.trace`).
    pub fn trace_facts(&self) -> TraceFacts {
        self.trace.arming().facts()
    }

    /// How long the firmware ran and was held halted so far (`run.firmware_time`); `None`
    /// when it was never resumed. [`Debugger::end_firmware_time`] reads its tick counter at
    /// the end.
    pub fn firmware_time(&self) -> Option<FirmwareTime> {
        self.session.firmware_time()
    }

    /// The allocations made to fail that are kept, oldest first: the first
    /// [`crate::observers::inject::MAX_LISTED_INJECTED`] and the latest (a script failing
    /// allocations in a loop keeps no list that grows with it).
    pub fn injected(&self) -> Vec<&Injected> {
        self.injection.injected().collect()
    }

    /// Allocations made to fail and no longer kept.
    pub fn injected_unlisted(&self) -> u64 {
        self.injection.unlisted()
    }

    /// The cycles by model, where the firmware alternated between at least two (see
    /// `crate::observers::models`).
    pub fn models(&self) -> Vec<ModelCycles> {
        self.models.report()
    }

    /// Cycles the model keying saw.
    pub fn model_cycles(&self) -> u64 {
        self.models.cycles()
    }

    /// Whether a request to fail an allocation waits for its allocation.
    pub fn fail_pending(&self) -> bool {
        self.injection.pending()
    }
}
