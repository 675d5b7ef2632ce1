//! The script-facing "run one phase" API: run to the next call of a phase function, snapshot
//! the heap, await its return (matched by stack pointer), snapshot again and close the record.
//! What is recorded on the way is [`super::phases`]'s; this module only decides when a phase
//! starts and ends. Also here: the watermark method, which resets the allocator's low-water
//! mark at the entry and reads it back at the return.

use std::rc::Rc;

use memlife_heap::{HeapState, LowWaterMark};

use super::Debugger;
use super::breakpoints::{BreakRole, ReturnRole, ReturnWatch};
use super::phases::{PhaseEnd, WatermarkState};
use super::run::{Goal, Outcome};
use crate::config::PeakMethod;
use crate::error::AuditError;
use crate::model::PhaseRecord;

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
        if self.phases.open_function().is_some() {
            return Err(AuditError::Config("a phase is already running".into()));
        }
        let function = self.config.phase_function(name).to_string();
        let alias = (function != name).then(|| name.to_string());
        let (addr, _) = self.function(&function)?;
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

    /// Opens the phase of `function` at its entry, where the target is halted now.
    pub(super) fn phase_entered(
        &mut self,
        function: &str,
        alias: Option<String>,
        cycle: Option<u64>,
    ) -> Result<(), AuditError> {
        let regs = self.read_regs()?;
        let before = Rc::new(self.walk()?);
        // Resynchronise the running total with the walk at every phase entry.
        self.trace.used = before.used;
        let watermark = if self.method == PeakMethod::Watermark {
            Some(self.arm_watermark()?)
        } else {
            None
        };
        if let Some(span_fn) = self.config.span_of(function).map(str::to_string) {
            let (addr, _) = self.function(&span_fn)?;
            self.bps
                .add_entry(addr, BreakRole::Span { function: span_fn });
        }
        self.bps.watch_return(ReturnWatch {
            addr: regs.lr & !1,
            sp: regs.sp,
            role: ReturnRole::Phase,
        });
        let call = self.phases.calls(function);
        self.progress.current = Some(format!("{function}#{call}"));
        self.phases.enter(
            function,
            alias,
            call,
            before,
            watermark,
            self.trace.seq,
            cycle,
        );
        Ok(())
    }

    /// Closes the phase after its return was reached: the record, the heap at its entry and
    /// the heap now.
    pub fn phase_finish(
        &mut self,
    ) -> Result<(PhaseRecord, Rc<HeapState>, Rc<HeapState>), AuditError> {
        let after = Rc::new(self.walk()?);
        let Some(function) = self.phases.open_function().map(str::to_string) else {
            return Err(AuditError::Config("no phase is running".into()));
        };
        if let Some(span_fn) = self.config.span_of(&function).map(str::to_string)
            && let Ok((addr, _)) = self.function(&span_fn)
        {
            self.bps
                .remove_entry(addr, &BreakRole::Span { function: span_fn });
        }
        self.bps.clear_span_returns();
        let watermark_peak = match self.phases.open_watermark() {
            Some(wm) => {
                let observed = self.target.as_memory().read_u32(wm.min_addr)?;
                self.restore_watermark(wm, Some(observed))?;
                Some(after.heap_size.saturating_sub(u64::from(observed)))
            }
            None => None,
        };
        let drift = if self.trace.on {
            crate::values::delta(after.used, self.trace.used)
        } else {
            0
        };
        self.trace.used = after.used;
        let end = PhaseEnd {
            method: self.method,
            seq: self.trace.seq,
            drift,
            watermark_peak,
            is_release: function == self.config.phase_function("release"),
        };
        let Some((mut record, before)) = self.phases.finish(&after, end) else {
            return Err(AuditError::Config("no phase is running".into()));
        };
        if let Some(peak_seq) = record.peak_at.as_ref().and_then(|p| p.seq) {
            record.composition = crate::composition::compose(
                &self.trace.events,
                record.seq_begin,
                peak_seq,
                &self.config.components,
            );
            if let Some(last) = self.phases.last_record_mut() {
                last.composition = record.composition.clone();
            }
        }
        self.progress.phases += 1;
        self.progress.current = None;
        Ok((record, before, after))
    }

    /// The allocator's free-bytes and minimum-ever counters, when it keeps one pair for the heap.
    pub(super) fn watermark_addrs(&self) -> Option<(u64, u64)> {
        match self.walker.low_water_mark() {
            LowWaterMark::Counters { free, minimum } => Some((free, minimum)),
            _ => None,
        }
    }

    /// Resets the low-water mark to the free bytes now, so that at the return it shows the
    /// phase's own minimum.
    fn arm_watermark(&mut self) -> Result<WatermarkState, AuditError> {
        let (free_addr, min_addr) = self
            .watermark_addrs()
            .ok_or_else(|| AuditError::Config("no watermark".into()))?;
        let mem = self.target.as_memory();
        let free = mem.read_u32(free_addr)?;
        let original_min = mem.read_u32(min_addr)?;
        if let Some(w) = self.target.memory_write() {
            w.write(min_addr, &free.to_le_bytes())?;
        }
        Ok(WatermarkState {
            min_addr,
            original_min,
        })
    }

    /// Puts back the value the allocator would hold had memlife not reset it.
    pub(super) fn restore_watermark(
        &mut self,
        wm: WatermarkState,
        observed: Option<u32>,
    ) -> Result<(), AuditError> {
        let value = observed.map_or(wm.original_min, |o| o.min(wm.original_min));
        if let Some(w) = self.target.memory_write() {
            w.write(wm.min_addr, &value.to_le_bytes())?;
        }
        Ok(())
    }
}
