//! The observers added at run time ([`crate::events::Observer`]), in the order they were added,
//! and the calls the engine makes to them. With none added (the usual audit) every call returns
//! at once.

use crate::error::AuditError;
use crate::events::{
    Admission, AuditSession, Boundary, Ctx, HeapEvent, Observer, ObserverId, Open,
};
use crate::session::Regs;

/// The added observers.
#[derive(Default)]
pub struct Extensions {
    list: Vec<Box<dyn Observer>>,
}

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.list.iter().map(|o| o.name()))
            .finish()
    }
}

impl Extensions {
    /// Whether none was added.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Their names, in the order they were added.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.list.iter().map(|o| o.name())
    }

    /// Adds one and lets it set its breakpoints.
    pub fn add(
        &mut self,
        session: &mut AuditSession,
        mut observer: Box<dyn Observer>,
        open: &Open,
    ) -> Result<ObserverId, AuditError> {
        let id = ObserverId(self.list.len());
        observer.attach(&mut Ctx::new(session, id, None, open))?;
        self.list.push(observer);
        Ok(id)
    }

    /// One of observer `id`'s breakpoints was hit.
    pub fn on_break(
        &mut self,
        session: &mut AuditSession,
        id: ObserverId,
        code: u32,
        regs: Regs,
        open: &Open,
    ) -> Result<(), AuditError> {
        match self.list.get_mut(id.0) {
            Some(o) => o.on_break(&mut Ctx::new(session, id, Some(regs), open), code),
            None => Ok(()),
        }
    }

    /// A phase or span boundary, to every observer.
    pub fn on_boundary(
        &mut self,
        session: &mut AuditSession,
        boundary: &Boundary<'_>,
        open: &Open,
    ) -> Result<(), AuditError> {
        for (i, o) in self.list.iter_mut().enumerate() {
            o.on_boundary(&mut Ctx::new(session, ObserverId(i), None, open), boundary)?;
        }
        Ok(())
    }

    /// An event about to be recorded, to every observer (to tag it).
    pub fn on_heap_event(
        &mut self,
        session: &mut AuditSession,
        event: &mut HeapEvent,
        open: &Open,
    ) -> Result<(), AuditError> {
        for (i, o) in self.list.iter_mut().enumerate() {
            o.on_heap_event(&mut Ctx::new(session, ObserverId(i), None, open), event)?;
        }
        Ok(())
    }

    /// Whether every observer admits this stop.
    pub fn admits(
        &mut self,
        session: &mut AuditSession,
        regs: Regs,
        what: Admission<'_>,
        open: &Open,
    ) -> Result<bool, AuditError> {
        for (i, o) in self.list.iter_mut().enumerate() {
            if !o.admits(
                &mut Ctx::new(session, ObserverId(i), Some(regs), open),
                what,
            )? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The target was reset, to every observer.
    pub fn on_reset(&mut self) {
        for o in &mut self.list {
            o.on_reset();
        }
    }

    /// The first observer of type `T`, when one was added.
    pub fn find<T: Observer>(&self) -> Option<&T> {
        self.list.iter().find_map(|o| {
            let any: &dyn std::any::Any = o.as_ref();
            any.downcast_ref::<T>()
        })
    }

    /// Their records for the report, by name.
    pub fn reports(&self) -> Vec<(&'static str, serde_json::Value)> {
        self.list
            .iter()
            .filter_map(|o| o.report().map(|r| (o.name(), r)))
            .collect()
    }
}
