//! Breakpoint bookkeeping: which entry addresses have which roles, which returns are awaited,
//! and which breakpoints are in the target now. No target access except through
//! [`BreakpointSet::sync`].
//!
//! The set does not know what its roles mean: they are the engine's ([`crate::events::Role`],
//! [`crate::events::Awaited`]); it only asks them how the budget arms them ([`EntryRole`],
//! [`ReturnRole`]).
//!
//! Breakpoints stay inserted as long as they can: inserting or removing one costs a packet, and
//! QEMU flushes its whole translation cache on each. Return addresses marked sticky (the call
//! sites of an allocator, a handful) stay armed once seen; a stop there with no call in flight
//! is simply continued. A target with few hardware breakpoints arms less (`super::budget`).

use std::collections::{BTreeMap, BTreeSet};

use memlife_core::{BreakpointKind, Breakpoints, Result};

use super::budget::Budget;
use super::roles::{EntryRole, ReturnRole, ReturnWatch};

/// Every breakpoint the audit wants and has.
#[derive(Debug)]
pub struct BreakpointSet<E, R> {
    entries: BTreeMap<u64, Vec<E>>,
    returns: Vec<ReturnWatch<R>>,
    /// Return addresses of sticky returns, kept armed until forgotten.
    sticky: BTreeSet<u64>,
    /// What the target has now.
    inserted: BTreeSet<u64>,
    /// What the target allows: which of the wanted breakpoints are armed.
    budget: Budget,
}

impl<E, R> Default for BreakpointSet<E, R> {
    fn default() -> Self {
        BreakpointSet {
            entries: BTreeMap::new(),
            returns: Vec::new(),
            sticky: BTreeSet::new(),
            inserted: BTreeSet::new(),
            budget: Budget::default(),
        }
    }
}

impl<E: EntryRole, R: ReturnRole> BreakpointSet<E, R> {
    /// Adds a role at an entry address (once).
    pub fn add_entry(&mut self, addr: u64, role: E) {
        let roles = self.entries.entry(addr).or_default();
        if !roles.contains(&role) {
            roles.push(role);
        }
    }

    /// Removes a role; the address is dropped with its last role.
    pub fn remove_entry(&mut self, addr: u64, role: &E) {
        if let Some(roles) = self.entries.get_mut(&addr) {
            roles.retain(|r| r != role);
            if roles.is_empty() {
                self.entries.remove(&addr);
            }
        }
    }

    /// The roles of the entry breakpoint at `pc`, in the order they were added.
    pub fn roles_at(&self, pc: u64) -> Vec<E> {
        self.entries.get(&pc).cloned().unwrap_or_default()
    }

    /// Whether an entry breakpoint has a role at `pc`.
    pub fn has_entry(&self, pc: u64) -> bool {
        self.entries.get(&pc).is_some_and(|r| !r.is_empty())
    }

    /// Awaits a return; a sticky one's address is kept armed for the next calls from there.
    pub fn watch_return(&mut self, watch: ReturnWatch<R>) {
        if watch.role.sticky() {
            self.sticky.insert(watch.addr);
        }
        self.returns.push(watch);
    }

    /// The awaited returns this stop completes (same address, stack pointer back to its value
    /// at the call), removed, in the order they were awaited.
    pub fn returns_hit(&mut self, pc: u64, sp: u64) -> Vec<R> {
        let mut hit = Vec::new();
        self.returns.retain(|w| {
            let this = w.addr == pc && w.sp == sp;
            if this {
                hit.push(w.role.clone());
            }
            !this
        });
        hit
    }

    /// Forgets every awaited return (a reset).
    pub fn clear_returns(&mut self) {
        self.returns.clear();
    }

    /// Forgets the awaited returns `forget` selects; with `unstick`, the sticky addresses too.
    pub fn forget_returns(&mut self, forget: impl Fn(&R) -> bool, unstick: bool) {
        if unstick {
            self.sticky.clear();
        }
        self.returns.retain(|r| !forget(&r.role));
    }

    /// Whether the target has a breakpoint of ours at `addr`.
    pub fn is_inserted(&self, addr: u64) -> bool {
        self.inserted.contains(&addr)
    }

    /// Every entry address with its roles.
    pub fn entries(&self) -> &BTreeMap<u64, Vec<E>> {
        &self.entries
    }

    /// What the target allows and where the audit is.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// The budget, to record the target's limits and the audit's state.
    pub fn budget_mut(&mut self) -> &mut Budget {
        &mut self.budget
    }

    /// The addresses that should have a breakpoint now (all of them, unless the budget
    /// says otherwise).
    fn wanted(&mut self) -> BTreeSet<u64> {
        self.budget
            .select(&self.entries, &self.returns, &self.sticky)
    }

    /// Inserts and removes breakpoints so the target has exactly the ones wanted now.
    pub fn sync(&mut self, bps: &mut dyn Breakpoints) -> Result<()> {
        let want = self.wanted();
        for addr in self.inserted.difference(&want).copied().collect::<Vec<_>>() {
            bps.remove_breakpoint(addr, BreakpointKind::Software)?;
            self.inserted.remove(&addr);
        }
        for addr in want.difference(&self.inserted).copied().collect::<Vec<_>>() {
            bps.add_breakpoint(addr, BreakpointKind::Software)?;
            self.inserted.insert(addr);
        }
        self.budget.max_armed = self.budget.max_armed.max(self.inserted.len());
        Ok(())
    }

    /// The target was replaced by a fresh one (a restart): none of ours is in it now.
    pub fn forget_inserted(&mut self) {
        self.inserted.clear();
    }

    /// Removes every breakpoint inserted, ignoring failures (every exit path calls this).
    pub fn remove_all(&mut self, bps: &mut dyn Breakpoints) {
        for addr in std::mem::take(&mut self.inserted) {
            let _ = bps.remove_breakpoint(addr, BreakpointKind::Software);
        }
    }
}
