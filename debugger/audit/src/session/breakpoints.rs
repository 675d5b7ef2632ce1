//! Breakpoint bookkeeping: what each address is for, which returns are awaited, and which
//! breakpoints are in the target now. No target access except through [`BreakpointSet::sync`].
//!
//! Breakpoints stay inserted as long as they can: inserting or removing one costs a packet, and
//! QEMU flushes its whole translation cache on each. Return addresses of allocator calls (a
//! handful of call sites) stay armed once seen ("sticky"); a stop there with no call in flight
//! is simply continued. A target with few hardware breakpoints arms less (`super::budget`).

use std::collections::{BTreeMap, BTreeSet};

use memlife_core::{BreakpointKind, Breakpoints, Result};

/// What an entry breakpoint is for (several can share an address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum BreakRole {
    /// An allocator's entry: the size is read here, the pointer at the caller's return address
    /// (used when the allocator's own return instructions cannot be found).
    Malloc {
        /// Argument holding the requested size.
        size_arg: usize,
    },
    /// An allocator's entry when its block is read at its return instructions: only the
    /// requested size is read here.
    MallocRequest {
        /// Argument holding the requested size.
        size_arg: usize,
    },
    /// One of an allocator's return instructions: `r0` is the new block (one stop per call).
    MallocExit,
    /// The allocator's free entry.
    Free {
        /// Argument holding the user pointer.
        ptr_arg: usize,
    },
    /// A span function's entry.
    Span {
        /// The function.
        function: String,
    },
    /// A fault handler's entry: the target faulted.
    Fault {
        /// HardFault, MemManage, BusFault or UsageFault.
        fault: &'static str,
    },
    /// The entry of a lifecycle role's function, while cycles are observed.
    Role {
        /// The function.
        function: String,
    },
    /// An entry a run waits for.
    Goal {
        /// The function.
        function: String,
    },
    /// A script hook.
    Hook {
        /// The symbol the script named.
        symbol: String,
    },
}

/// A malloc whose return is awaited: what its entry told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PendingAlloc {
    /// The requested size.
    pub request: u64,
    /// Return addresses at the entry (frame 0 is the allocator).
    pub backtrace: Vec<u64>,
}

/// What an awaited return closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ReturnRole {
    /// A malloc (its entry breakpoint was hit).
    Malloc(PendingAlloc),
    /// The innermost open span.
    Span,
    /// The phase being run.
    Phase,
}

/// A return awaited at `addr` with the stack pointer back at `sp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ReturnWatch {
    /// The return address.
    pub addr: u64,
    /// The stack pointer at the call: after the return it has this value again, which tells
    /// this return from a nested or recursive call's return to the same address.
    pub sp: u64,
    /// What it closes.
    pub role: ReturnRole,
}

/// Every breakpoint the audit wants and has.
#[derive(Debug, Default)]
pub(super) struct BreakpointSet {
    entries: BTreeMap<u64, Vec<BreakRole>>,
    returns: Vec<ReturnWatch>,
    /// Return addresses of allocator calls, kept armed while tracing.
    sticky_malloc: BTreeSet<u64>,
    /// What the target has now.
    inserted: BTreeSet<u64>,
    /// Sizes requested at allocator entries whose return instruction is still to come, with
    /// the stack pointer at the entry, innermost last.
    requests: Vec<(u64, u64)>,
    /// What the target allows: which of the wanted breakpoints are armed.
    pub budget: super::budget::Budget,
}

impl BreakpointSet {
    /// Adds a role at an entry address (once).
    pub fn add_entry(&mut self, addr: u64, role: BreakRole) {
        let roles = self.entries.entry(addr).or_default();
        if !roles.contains(&role) {
            roles.push(role);
        }
    }

    /// Removes a role; the address is dropped with its last role.
    pub fn remove_entry(&mut self, addr: u64, role: &BreakRole) {
        if let Some(roles) = self.entries.get_mut(&addr) {
            roles.retain(|r| r != role);
            if roles.is_empty() {
                self.entries.remove(&addr);
            }
        }
    }

    /// The roles of the entry breakpoint at `pc`.
    pub fn roles_at(&self, pc: u64) -> Vec<BreakRole> {
        self.entries.get(&pc).cloned().unwrap_or_default()
    }

    /// Awaits a return; a malloc's return address is kept armed for the next calls from there.
    pub fn watch_return(&mut self, watch: ReturnWatch) {
        if matches!(watch.role, ReturnRole::Malloc(_)) {
            self.sticky_malloc.insert(watch.addr);
        }
        self.returns.push(watch);
    }

    /// The awaited returns this stop completes (same address, stack pointer back to its value
    /// at the call), removed, in the order they were awaited.
    pub fn returns_hit(&mut self, pc: u64, sp: u64) -> Vec<ReturnRole> {
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
        self.requests.clear();
    }

    /// The size requested at an allocator's entry with the stack pointer at `sp`.
    pub fn push_request(&mut self, sp: u64, size: u64) {
        self.requests.push((sp, size));
    }

    /// The size requested by the call whose return instruction is at a stop with the stack
    /// pointer at `sp`: the innermost entry at or above it (the allocator's frame is below its
    /// entry's). Entries deeper than `sp` never reached a return instruction (a longjmp, an
    /// abort) and are dropped.
    pub fn pop_request(&mut self, sp: u64) -> Option<u64> {
        while let Some(&(entry_sp, size)) = self.requests.last() {
            self.requests.pop();
            if entry_sp >= sp {
                return Some(size);
            }
        }
        None
    }

    /// Forgets the mallocs in flight and their return addresses (tracing turned off).
    pub fn clear_malloc_returns(&mut self) {
        self.sticky_malloc.clear();
        self.requests.clear();
        self.returns
            .retain(|r| !matches!(r.role, ReturnRole::Malloc(_)));
    }

    /// Forgets the span returns (the phase ended).
    pub fn clear_span_returns(&mut self) {
        self.returns.retain(|r| !matches!(r.role, ReturnRole::Span));
    }

    /// Whether the target has a breakpoint of ours at `addr`.
    pub fn is_inserted(&self, addr: u64) -> bool {
        self.inserted.contains(&addr)
    }

    /// Every entry address with its roles.
    pub fn entries(&self) -> &BTreeMap<u64, Vec<BreakRole>> {
        &self.entries
    }

    /// The addresses that should have a breakpoint now (all of them, unless the budget
    /// says otherwise).
    fn wanted(&mut self) -> BTreeSet<u64> {
        self.budget
            .select(&self.entries, &self.returns, &self.sticky_malloc)
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

    /// Removes every breakpoint inserted, ignoring failures (every exit path calls this).
    pub fn remove_all(&mut self, bps: &mut dyn Breakpoints) {
        for addr in std::mem::take(&mut self.inserted) {
            let _ = bps.remove_breakpoint(addr, BreakpointKind::Software);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Records what is inserted and every packet.
    #[derive(Default)]
    struct Recorder {
        now: BTreeSet<u64>,
        ops: usize,
    }

    impl Breakpoints for Recorder {
        fn add_breakpoint(&mut self, addr: u64, _: BreakpointKind) -> Result<()> {
            self.ops += 1;
            assert!(self.now.insert(addr), "{addr:#x} inserted twice");
            Ok(())
        }
        fn remove_breakpoint(&mut self, addr: u64, _: BreakpointKind) -> Result<()> {
            self.ops += 1;
            assert!(self.now.remove(&addr), "{addr:#x} removed but not inserted");
            Ok(())
        }
        fn inserted(&self) -> Vec<(u64, BreakpointKind)> {
            Vec::new()
        }
    }

    fn span(f: &str) -> BreakRole {
        BreakRole::Span { function: f.into() }
    }

    #[test]
    fn sync_sends_only_the_difference() {
        let mut set = BreakpointSet::default();
        let mut t = Recorder::default();
        set.add_entry(0x100, span("op_init"));
        set.add_entry(0x100, span("op_init"));
        set.add_entry(0x100, BreakRole::Hook { symbol: "x".into() });
        set.add_entry(0x200, BreakRole::Free { ptr_arg: 0 });
        set.sync(&mut t).unwrap();
        assert_eq!(t.now, BTreeSet::from([0x100, 0x200]));
        assert_eq!(set.roles_at(0x100).len(), 2, "a role is added once");
        // Nothing changed: no packet.
        set.sync(&mut t).unwrap();
        assert_eq!(t.ops, 2);
        // One role of two gone: the breakpoint stays; the last one gone: it is removed.
        set.remove_entry(0x100, &span("op_init"));
        set.sync(&mut t).unwrap();
        assert_eq!(t.ops, 2);
        set.remove_entry(0x100, &BreakRole::Hook { symbol: "x".into() });
        set.sync(&mut t).unwrap();
        assert_eq!(t.now, BTreeSet::from([0x200]));
        set.remove_all(&mut t);
        assert!(t.now.is_empty() && !set.is_inserted(0x200));
    }

    #[test]
    fn returns_match_by_stack_pointer_and_malloc_returns_stay_armed() {
        let mut set = BreakpointSet::default();
        let mut t = Recorder::default();
        // A recursive call: the same return address awaited at two depths.
        for sp in [0x2000_1000, 0x2000_0f00] {
            set.watch_return(ReturnWatch {
                addr: 0x300,
                sp,
                role: ReturnRole::Phase,
            });
        }
        set.watch_return(ReturnWatch {
            addr: 0x400,
            sp: 0x2000_0e00,
            role: ReturnRole::Malloc(PendingAlloc {
                request: 16,
                backtrace: vec![],
            }),
        });
        set.sync(&mut t).unwrap();
        assert_eq!(t.now, BTreeSet::from([0x300, 0x400]));
        // The inner return first; the outer one is still awaited.
        assert!(set.returns_hit(0x300, 0x2000_0800).is_empty());
        assert_eq!(set.returns_hit(0x300, 0x2000_0f00), vec![ReturnRole::Phase]);
        assert_eq!(set.returns_hit(0x300, 0x2000_0f00), vec![]);
        assert_eq!(set.returns_hit(0x300, 0x2000_1000), vec![ReturnRole::Phase]);
        set.sync(&mut t).unwrap();
        assert_eq!(t.now, BTreeSet::from([0x400]));
        // The malloc returned: its return address stays armed until tracing ends.
        assert_eq!(set.returns_hit(0x400, 0x2000_0e00).len(), 1);
        set.sync(&mut t).unwrap();
        assert_eq!(t.now, BTreeSet::from([0x400]));
        set.clear_malloc_returns();
        set.sync(&mut t).unwrap();
        assert!(t.now.is_empty());
    }

    #[test]
    fn span_returns_end_with_their_phase() {
        let mut set = BreakpointSet::default();
        let mut t = Recorder::default();
        set.watch_return(ReturnWatch {
            addr: 0x500,
            sp: 1,
            role: ReturnRole::Span,
        });
        set.watch_return(ReturnWatch {
            addr: 0x600,
            sp: 2,
            role: ReturnRole::Phase,
        });
        set.sync(&mut t).unwrap();
        assert_eq!(t.now, BTreeSet::from([0x500, 0x600]));
        set.clear_span_returns();
        set.sync(&mut t).unwrap();
        assert_eq!(t.now, BTreeSet::from([0x600]));
    }
}
