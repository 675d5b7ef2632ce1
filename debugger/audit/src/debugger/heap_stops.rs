//! Stops in the allocator: the trace's breakpoints routed to the trace, the allocation made to
//! fail when it is the one chosen, and the path of every allocation and release from the trace
//! through the spans, the open phase and the added observers back to the trace, which keeps it.

use memlife_core::Register;

use super::facade::Debugger;
use crate::error::AuditError;
use crate::events::{Admission, HeapEvent, PendingAlloc, TraceRole};
use crate::observers::Injected;
use crate::observers::inject::OpenCall;
use crate::session::Regs;

impl Debugger {
    /// A stop at one of the trace's breakpoints; `true` when the allocation was made to fail
    /// (the allocator does not run, so the stop's other roles are skipped).
    pub(super) fn trace_stop(&mut self, regs: &Regs, role: TraceRole) -> Result<bool, AuditError> {
        if !self.admits(regs, Admission::HeapEvent)? {
            self.lifecycle.phases.event_left_out();
            return Ok(false);
        }
        let lean = self.session.budget().lean;
        match role {
            TraceRole::Malloc { size_arg } | TraceRole::MallocRequest { size_arg }
                if self.fail_here(regs, size_arg)? =>
            {
                return Ok(true);
            }
            TraceRole::Malloc { size_arg } => {
                self.trace.malloc_entered(&mut self.session, regs, size_arg);
            }
            // Lean on breakpoints: the block is read at the caller's return, armed only while
            // this call is in flight (see `crate::session::Budget`).
            TraceRole::MallocRequest { size_arg } | TraceRole::MallocLean { size_arg } if lean => {
                self.trace.malloc_entered(&mut self.session, regs, size_arg);
            }
            TraceRole::MallocRequest { size_arg } => self.trace.request_entered(regs, size_arg),
            // Not armed unless lean; a stop there anyway (another role's address) is read at
            // the return instruction.
            TraceRole::MallocLean { .. } => {}
            // Not armed when lean; a stop there anyway (another role's address) is not this
            // allocation's: its caller's return reads it.
            TraceRole::MallocExit if lean => {}
            TraceRole::MallocExit => {
                if regs.args[0] != 0 {
                    let event = self.trace.malloc_exited(&mut self.session, regs)?;
                    self.record(event)?;
                } else {
                    // A failed allocation: its request is spent.
                    self.trace.request_failed(regs.sp);
                }
            }
            TraceRole::Free { ptr_arg } => {
                let ptr = regs.arg(ptr_arg);
                if ptr != 0 {
                    let event = self.trace.freed(&mut self.session, regs, ptr)?;
                    self.record(event)?;
                }
            }
        }
        Ok(false)
    }

    /// At the caller's return address of a malloc whose entry was seen.
    pub(super) fn alloc_returned(
        &mut self,
        regs: &Regs,
        pending: PendingAlloc,
    ) -> Result<(), AuditError> {
        if !self.admits(regs, Admission::HeapEvent)? {
            self.lifecycle.phases.event_left_out();
            return Ok(());
        }
        let event = self
            .trace
            .malloc_returned(&mut self.session, regs.args[0], pending)?;
        self.record(event)
    }

    /// Records an allocation or release: the open spans and phase raise their peaks and file
    /// it, the added observers tag it, the trace keeps it.
    fn record(&mut self, event: Option<HeapEvent>) -> Result<(), AuditError> {
        let Some(mut event) = event else {
            return Ok(());
        };
        self.reporter.progress.events += 1;
        let phase = self
            .lifecycle
            .phases
            .on_event(&event, self.spans.innermost());
        // Spans exist only inside a phase.
        let span = self.spans.innermost().map(|s| s.name());
        self.spans.on_event(event.used_after);
        if !self.extensions.is_empty() {
            let open = self.open_view();
            self.extensions
                .on_heap_event(&mut self.session, &mut event, &open)?;
        }
        self.trace.keep(event, phase, span);
        Ok(())
    }

    /// At the allocator's malloc entry: when this call is the one to fail, returns NULL to its
    /// caller (r0 = 0, pc = lr) and says so.
    fn fail_here(&mut self, regs: &Regs, size_arg: usize) -> Result<bool, AuditError> {
        if !self.injection.pending() {
            return Ok(false);
        }
        let open = self.open_call();
        if !self.injection.may_fail_in(open.as_ref()) {
            return Ok(false);
        }
        let backtrace = self.trace.sites().backtrace(&mut self.session, regs, &[]);
        let site = self
            .trace
            .sites()
            .site_of(self.session.symbols(), &backtrace);
        if !self.injection.chosen(&site) {
            return Ok(false);
        }
        let t = self.session.target();
        t.write_register(Register::Argument(0), 0)?;
        t.write_register(Register::ProgramCounter, regs.return_address())?;
        let seq = self.trace.next_seq();
        let phase = open.as_ref().map(|o| o.function.clone());
        self.injection.made(Injected {
            site,
            request: regs.arg(size_arg),
            awaiting_return: phase.is_some(),
            phase,
            seq,
            returned: None,
            call_seq: open.as_ref().map_or(seq, |o| o.seq_begin),
            before: open.map(|o| o.before),
        });
        self.faults.on_failure_injected(&mut self.session);
        Ok(true)
    }

    /// The open phase call, as the failure choice needs it.
    fn open_call(&self) -> Option<OpenCall> {
        let phases = &self.lifecycle.phases;
        let function = phases.open_function()?.to_string();
        let (call, before, seq_begin) = phases.open_call()?;
        Some(OpenCall {
            function,
            call,
            before,
            seq_begin,
        })
    }
}
