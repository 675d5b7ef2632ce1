//! Running one phase: run to the next call of a phase function, snapshot the heap, await its
//! return (matched by stack pointer), snapshot again and close the record. What is recorded on
//! the way is the observers'; this module decides when a phase starts and ends, and tells the
//! observers that care (the spans' entry breakpoint, the watermark, the injected failure's
//! return value, the added observers).

use std::rc::Rc;

use memlife_dwarf::FunctionRange;
use memlife_heap::HeapState;

use super::facade::Debugger;
use super::goal::{Goal, Outcome};
use crate::config::PeakMethod;
use crate::error::AuditError;
use crate::events::{Awaited, Boundary, Role};
use crate::figures::delta;
use crate::model::PhaseRecord;
use crate::observers::phases::{PhaseEnd, PhaseId};
use crate::session::Regs;

/// A phase being run (kept by the caller across hooks).
#[derive(Debug, Clone)]
pub struct PhaseRun {
    goal: Goal,
    function: String,
    alias: Option<String>,
    entered: bool,
}

impl Debugger {
    /// Starts a phase: the next call of the function `name` stands for (an alias or the
    /// function itself). Drive it with [`Debugger::phase_step`], close it with
    /// [`Debugger::phase_finish`].
    pub fn phase_begin(&mut self, name: &str) -> Result<PhaseRun, AuditError> {
        if self.lifecycle.in_phase() {
            return Err(AuditError::Config("a phase is already running".into()));
        }
        let function = self.settings.config.phase_function(name).to_string();
        let alias = (function != name).then(|| name.to_string());
        let addr = self.function(&function)?.entry;
        // Cycles end halted at the entry of the call that begins the next one: that call is
        // the next of its function still to record.
        let remaining = if self.take_cycle_start(&function) {
            0
        } else {
            1
        };
        Ok(PhaseRun {
            goal: Goal::Entry {
                function: function.clone(),
                addr,
                remaining,
            },
            function,
            alias,
            entered: false,
        })
    }

    /// Advances a phase: runs to its entry (snapshots, sets the return and span breakpoints),
    /// then to its return. `Some(Outcome::Hook)` when a script hook fired first (call again
    /// after running it), `None` once the phase returned.
    pub fn phase_step(&mut self, run: &mut PhaseRun) -> Result<Option<Outcome>, AuditError> {
        loop {
            if let Outcome::Hook(h) = self.run(&mut run.goal)? {
                return Ok(Some(Outcome::Hook(h)));
            }
            if run.entered {
                return Ok(None);
            }
            run.entered = true;
            self.phase_entered(&run.function, run.alias.clone(), None)?;
            run.goal = Goal::PhaseReturn;
        }
    }

    /// Whether the target is halted at the entry of `function` where the last cycle ended,
    /// that call still unrecorded; consumes it.
    pub(super) fn take_cycle_start(&mut self, function: &str) -> bool {
        let stops = self.session.stops();
        self.lifecycle.cycles.take_start(function, stops)
    }

    /// Opens the phase of `function` at its entry, where the target is halted now; the
    /// registers there (its arguments).
    pub(super) fn phase_entered(
        &mut self,
        function: &str,
        alias: Option<String>,
        cycle: Option<u64>,
    ) -> Result<Regs, AuditError> {
        let regs = self.session.read_regs()?;
        let before = Rc::new(self.session.walk()?);
        // Resynchronise the running total with the walk at every phase entry.
        self.trace.set_used(before.used);
        let span = match self.settings.config.span_of(function) {
            Some(span_fn) => Some((span_fn.to_string(), self.function(span_fn)?.entry)),
            None => None,
        };
        self.watermark.phase_entered(&mut self.session)?;
        if let Some((function, addr)) = span {
            self.session.add_entry(addr, Role::Span { function });
        }
        self.session
            .watch_return(regs.return_address(), regs.sp, Awaited::Phase);
        let phases = &mut self.lifecycle.phases;
        let call = phases.calls(function);
        self.reporter.progress.current = Some(format!("{function}#{call}"));
        let id = PhaseId {
            function: function.to_string(),
            alias,
            call,
            cycle,
        };
        let used = before.used;
        phases.enter(id, before, self.trace.next_seq());
        // A trace scoped to phases is armed from here, with the walk's total.
        let in_scope = self.trace_in_scope();
        self.trace
            .rescope(&mut self.session, in_scope, Some(used))?;
        self.tell_observers(&Boundary::PhaseEntered {
            function,
            call,
            cycle,
        })?;
        Ok(regs)
    }

    /// At the return of the open phase: what an allocation that failed during it returned.
    pub(super) fn phase_returned(&mut self, regs: &Regs) {
        let Some(function) = self.lifecycle.phases.open_function() else {
            return;
        };
        self.injection
            .phase_returned(self.session.symbols(), function, regs.args[0], regs.args[1]);
    }

    /// Closes the phase after its return was reached: the record, the heap at its entry and
    /// the heap now.
    pub fn phase_finish(
        &mut self,
    ) -> Result<(PhaseRecord, Rc<HeapState>, Rc<HeapState>), AuditError> {
        let after = Rc::new(self.session.walk()?);
        let Some(function) = self.lifecycle.phases.open_function().map(str::to_string) else {
            return Err(AuditError::Config("no phase is running".into()));
        };
        if let Some(span_fn) = self.settings.config.span_of(&function).map(str::to_string)
            && let Ok(FunctionRange { entry: addr, .. }) = self.function(&span_fn)
        {
            self.session
                .remove_entry(addr, &Role::Span { function: span_fn });
        }
        self.session
            .breakpoints_mut()
            .forget_returns(|r| matches!(r, Awaited::Span), false);
        let watermark_peak = self
            .watermark
            .phase_returned(&mut self.session, after.heap_size)?;
        let traced = self.trace.is_on();
        let drift = if traced {
            delta(after.used, self.trace.used())
        } else {
            0
        };
        self.trace.set_used(after.used);
        // A phase run without the trace's breakpoints had its peak sampled at boundaries.
        let method = match self.settings.method {
            PeakMethod::Trace if !traced => PeakMethod::Sample,
            m => m,
        };
        let end = PhaseEnd {
            method,
            seq: self.trace.next_seq(),
            drift,
            watermark_peak,
            is_release: function == self.settings.config.phase_function("release"),
        };
        let spans = self.spans.take();
        let Some((mut record, before)) = self.lifecycle.phases.finish(&after, end, spans) else {
            return Err(AuditError::Config("no phase is running".into()));
        };
        // A trace scoped to phases is disarmed until the next one.
        let in_scope = self.trace_in_scope();
        self.trace.rescope(&mut self.session, in_scope, None)?;
        if let Some(peak_seq) = record.peak_at.as_ref().and_then(|p| p.seq) {
            record.composition = crate::composition::compose(
                self.trace.events(),
                record.seq_begin,
                peak_seq,
                &self.settings.config.components,
            );
            if let Some(last) = self.lifecycle.phases.last_record_mut() {
                last.composition = record.composition.clone();
            }
        }
        self.reporter.progress.phases += 1;
        self.reporter.progress.current = None;
        self.tell_observers(&Boundary::PhaseReturned(&record))?;
        Ok((record, before, after))
    }
}
