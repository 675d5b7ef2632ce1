//! Stops at a span function's entry and at its return: the spans observer opens and closes the
//! span, the open phase is told of a sampled peak, the added observers of the boundary.

use super::facade::Debugger;
use crate::error::AuditError;
use crate::events::{Awaited, Boundary};
use crate::observers::spans::SpanEntry;
use crate::session::Regs;

impl Debugger {
    /// A span function was entered: open a span in the phase and await its return.
    pub(super) fn span_entered(&mut self, function: &str, regs: &Regs) -> Result<(), AuditError> {
        let call = self.lifecycle.phases.count_call(function);
        let used = self.trace.current_used(&mut self.session)?;
        if !self.lifecycle.in_phase() {
            return Ok(());
        }
        let settings = self.settings.config.labels_of(function);
        let symbols = self.session.symbols_rc();
        let (arg, label) = self.spans.labels_mut().read(
            settings,
            &symbols,
            self.session.memory(),
            function,
            &regs.args,
        );
        let entry = SpanEntry {
            function: function.to_string(),
            call,
            args: regs.args,
            arg,
            label,
        };
        self.spans.open(entry, used, self.trace.next_seq());
        self.session
            .watch_return(regs.return_address(), regs.sp, Awaited::Span);
        if !self.extensions.is_empty() {
            let index = self.spans.innermost().map_or(0, |s| s.index());
            let boundary = Boundary::SpanOpened {
                function,
                call,
                index,
                arg,
            };
            self.tell_observers(&boundary)?;
        }
        Ok(())
    }

    /// The innermost span returned.
    pub(super) fn span_returned(&mut self) -> Result<(), AuditError> {
        let used = self.trace.current_used(&mut self.session)?;
        let traced = self.trace.is_on();
        let damage = if self.session.walker().checks_integrity() {
            let state = self.session.walk()?;
            self.trace.live_blocks().damage(&state)
        } else {
            Vec::new()
        };
        let Some((span, record)) = self.spans.close(used, self.trace.next_seq(), damage) else {
            return Ok(());
        };
        self.lifecycle.phases.on_span_closed(&span, used, traced);
        if !self.extensions.is_empty() {
            let record = record.clone();
            self.tell_observers(&Boundary::SpanClosed(&record))?;
        }
        Ok(())
    }

    /// Tells the added observers of a boundary.
    pub(super) fn tell_observers(&mut self, boundary: &Boundary<'_>) -> Result<(), AuditError> {
        if self.extensions.is_empty() {
            return Ok(());
        }
        let open = self.open_view();
        self.extensions
            .on_boundary(&mut self.session, boundary, &open)
    }
}
