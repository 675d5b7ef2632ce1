//! The engine's extension point: an [`Observer`] added at run time
//! ([`crate::debugger::Debugger::add_observer`]) sees the audit through the same events the
//! built-in observers do, and nothing else:
//!
//! - its own breakpoints' stops ([`Observer::on_break`]), set through its [`Ctx`] with codes
//!   of its own, entries and awaited returns alike;
//! - phase and span boundaries ([`Observer::on_boundary`]);
//! - every allocation and release before it is recorded, to tag it
//!   ([`Observer::on_heap_event`]);
//! - a say in whether a stop counts ([`Observer::admits`]): a lifecycle role's entry, an
//!   allocation or a release can be left out (a phase scoped to one task, tracing inside it
//!   only).
//!
//! It reads target memory, registers and symbols at its stops through the [`Ctx`], forgets
//! what it held when the target is reset ([`Observer::on_reset`]), and gives its records for
//! the report at the end ([`Observer::report`]); the engine finds an observer of a given type
//! again ([`crate::debugger::Debugger::observer`]) for what the report and scripts read from
//! it. Adding one touches neither the other observers nor the routing table
//! ([`super::Role`]).

use std::any::Any;

use memlife_core::{Memory, Register};
use memlife_dwarf::Symbols;

use super::boundary::Boundary;
use super::heap::HeapEvent;
use super::roles::{AuditSession, Awaited, ObserverId, Role};
use crate::error::AuditError;
use crate::session::{Arm, Regs};

/// What is running when an observer is called: the open phase and the innermost open span.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Open {
    /// The open phase's function.
    pub phase: Option<String>,
    /// Its call number.
    pub call: Option<u64>,
    /// The innermost open span (`function#call`).
    pub span: Option<String>,
}

/// A stop an observer may leave out (see [`Observer::admits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission<'a> {
    /// The entry of a lifecycle role's function (or of a function a run waits for): left
    /// out, it is not counted and ends no wait.
    Entry {
        /// The function.
        function: &'a str,
    },
    /// An allocation or a release stop: left out, the trace records nothing there.
    HeapEvent,
}

/// An observer's view of the engine while it is called.
pub struct Ctx<'a> {
    session: &'a mut AuditSession,
    id: ObserverId,
    regs: Option<Regs>,
    open: &'a Open,
}

impl<'a> Ctx<'a> {
    /// The view for observer `id`; `regs` at a stop.
    pub(crate) fn new(
        session: &'a mut AuditSession,
        id: ObserverId,
        regs: Option<Regs>,
        open: &'a Open,
    ) -> Self {
        Ctx {
            session,
            id,
            regs,
            open,
        }
    }

    /// This observer's id.
    pub fn id(&self) -> ObserverId {
        self.id
    }

    /// The registers at the stop, when called at one.
    pub fn regs(&self) -> Option<Regs> {
        self.regs
    }

    /// What is running.
    pub fn open(&self) -> &Open {
        self.open
    }

    /// The firmware's symbols.
    pub fn symbols(&self) -> &Symbols {
        self.session.symbols()
    }

    /// The target's memory (the target is halted).
    pub fn memory(&mut self) -> &mut dyn Memory {
        self.session.memory()
    }

    /// One register of the halted core (one that [`Ctx::regs`] does not carry: xPSR, say).
    pub fn register(&mut self, reg: Register) -> Result<u64, AuditError> {
        Ok(self.session.target().read_register(reg)?)
    }

    /// The memory and the symbols together, for a reader that needs both.
    pub fn memory_and_symbols(&mut self) -> (&mut dyn Memory, std::rc::Rc<Symbols>) {
        let symbols = self.session.symbols_rc();
        (self.session.memory(), symbols)
    }

    /// Sets a breakpoint of this observer's at `addr`: [`Observer::on_break`] gets `code`.
    pub fn break_at(&mut self, addr: u64, code: u32, arm: Arm) {
        let observer = self.id;
        self.session.add_entry(
            addr,
            Role::Extension {
                observer,
                code,
                arm,
            },
        );
    }

    /// Removes a breakpoint set with [`Ctx::break_at`].
    pub fn unbreak(&mut self, addr: u64, code: u32, arm: Arm) {
        let observer = self.id;
        self.session.remove_entry(
            addr,
            &Role::Extension {
                observer,
                code,
                arm,
            },
        );
    }

    /// Awaits a return at `addr` with the stack pointer back at `sp` (a call's return, told
    /// from a nested one's): [`Observer::on_break`] gets `code` there.
    pub fn await_return(&mut self, addr: u64, sp: u64, code: u32) {
        let observer = self.id;
        self.session
            .watch_return(addr, sp, Awaited::Extension { observer, code });
    }
}

/// A component added to the engine that reacts to stops (see the module doc). Every method
/// but [`Observer::name`] does nothing by default.
pub trait Observer: Any {
    /// Its name, in messages and as its key in the report.
    fn name(&self) -> &'static str;

    /// The observer was added (the target is halted): set its breakpoints.
    fn attach(&mut self, _ctx: &mut Ctx<'_>) -> Result<(), AuditError> {
        Ok(())
    }

    /// One of its breakpoints was hit, an entry or an awaited return (`code` is its own).
    fn on_break(&mut self, _ctx: &mut Ctx<'_>, _code: u32) -> Result<(), AuditError> {
        Ok(())
    }

    /// A phase or a span began or ended.
    fn on_boundary(
        &mut self,
        _ctx: &mut Ctx<'_>,
        _boundary: &Boundary<'_>,
    ) -> Result<(), AuditError> {
        Ok(())
    }

    /// An allocation or release is about to be recorded: add tags to it.
    fn on_heap_event(
        &mut self,
        _ctx: &mut Ctx<'_>,
        _event: &mut HeapEvent,
    ) -> Result<(), AuditError> {
        Ok(())
    }

    /// Whether this stop counts; a stop counts when every observer admits it.
    fn admits(&mut self, _ctx: &mut Ctx<'_>, _what: Admission<'_>) -> Result<bool, AuditError> {
        Ok(true)
    }

    /// The target was reset: what it held about the firmware's state is gone.
    fn on_reset(&mut self) {}

    /// Its records for the report, when it has any.
    fn report(&self) -> Option<serde_json::Value> {
        None
    }
}
