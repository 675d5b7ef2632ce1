//! What each breakpoint is for: the engine's routing table. An entry breakpoint has one or more
//! [`Role`]s, an awaited return one [`Awaited`]; each names the component that owns it, and the
//! run loop (`crate::debugger::run`) hands the stop to that component. The session only asks a
//! role how the budget arms it ([`EntryRole`], [`ReturnRole`]).
//!
//! An observer added at run time ([`super::Observer`]) owns [`Role::Extension`] and
//! [`Awaited::Extension`] breakpoints with codes of its own: adding one adds no variant here.

use crate::session::{Arm, EntryRole, ReturnRole, Session};

/// The session an audit holds, with the engine's roles.
pub type AuditSession = Session<Role, Awaited>;

/// An observer added to the engine ([`crate::debugger::Debugger::add_observer`]): its index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObserverId(pub usize);

/// The allocation trace's breakpoints (`crate::observers::trace`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceRole {
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
    /// An allocator's entry when its block is read at its return instructions and no one
    /// reads the size asked: armed only on a target too short of breakpoints for the return
    /// instructions (lean), where it awaits the caller's return instead. Otherwise an
    /// allocation is one stop, at its return.
    MallocLean {
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
}

/// What an entry breakpoint is for (several can share an address), and who handles it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The allocation trace's (`observers::trace`).
    Trace(TraceRole),
    /// A span function's entry (`observers::spans`).
    Span {
        /// The function.
        function: String,
    },
    /// A fault handler's entry: the target faulted (`observers::faults`).
    Fault {
        /// HardFault, MemManage, BusFault or UsageFault.
        fault: &'static str,
    },
    /// The entry of a lifecycle role's function, while cycles are observed
    /// (`debugger::cycle_run`).
    Lifecycle {
        /// The function.
        function: String,
    },
    /// An entry a run waits for (`debugger::run`).
    Goal {
        /// The function.
        function: String,
    },
    /// A script hook (`script`).
    Hook {
        /// The symbol the script named.
        symbol: String,
    },
    /// An added observer's own breakpoint.
    Extension {
        /// Whose.
        observer: ObserverId,
        /// What it is for, in the observer's own terms.
        code: u32,
        /// When it is armed on a target with few breakpoints.
        arm: Arm,
    },
}

impl EntryRole for Role {
    fn arm(&self) -> Arm {
        match self {
            Role::Goal { .. } | Role::Hook { .. } => Arm::Always,
            Role::Fault { .. } => Arm::Fault,
            Role::Lifecycle { .. } => Arm::Between,
            Role::Trace(TraceRole::MallocExit) => Arm::NotLean,
            Role::Trace(TraceRole::MallocLean { .. }) => Arm::Lean,
            Role::Trace(_) | Role::Span { .. } => Arm::Inside,
            Role::Extension { arm, .. } => *arm,
        }
    }
}

/// A malloc whose return is awaited: what its entry told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingAlloc {
    /// The requested size.
    pub request: u64,
    /// Return addresses at the entry (frame 0 is the allocator).
    pub backtrace: Vec<u64>,
}

/// What an awaited return closes, and who handles it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Awaited {
    /// A malloc (its entry breakpoint was hit): the trace's.
    Alloc(PendingAlloc),
    /// The innermost open span: the spans'.
    Span,
    /// The phase being run: the lifecycle's.
    Phase,
    /// An added observer's.
    Extension {
        /// Whose.
        observer: ObserverId,
        /// What it is for, in the observer's own terms.
        code: u32,
    },
}

impl ReturnRole for Awaited {
    fn group(&self) -> u32 {
        match self {
            Awaited::Alloc(_) => 0,
            Awaited::Span => 1,
            Awaited::Phase => 2,
            // Each observer's returns nest among themselves.
            Awaited::Extension { observer, .. } => {
                3u32.saturating_add(u32::try_from(observer.0).unwrap_or(u32::MAX))
            }
        }
    }

    /// An allocator's call sites stay armed while tracing: the next call from there is near.
    fn sticky(&self) -> bool {
        matches!(self, Awaited::Alloc(_))
    }
}

#[cfg(test)]
mod tests {
    //! The breakpoint set and its budget with the engine's real roles: what is inserted, which
    //! returns match, and what a target with few breakpoints arms.
    #![allow(clippy::unwrap_used)]
    use std::collections::{BTreeMap, BTreeSet};

    use memlife_core::{BreakpointKind, Breakpoints, Result};

    use super::*;
    use crate::session::{BreakpointSet, Budget, ReturnWatch};

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

    fn span(f: &str) -> Role {
        Role::Span { function: f.into() }
    }

    #[test]
    fn sync_sends_only_the_difference() {
        let mut set: BreakpointSet<Role, Awaited> = BreakpointSet::default();
        let mut t = Recorder::default();
        set.add_entry(0x100, span("op_init"));
        set.add_entry(0x100, span("op_init"));
        set.add_entry(0x100, Role::Hook { symbol: "x".into() });
        set.add_entry(0x200, Role::Trace(TraceRole::Free { ptr_arg: 0 }));
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
        set.remove_entry(0x100, &Role::Hook { symbol: "x".into() });
        set.sync(&mut t).unwrap();
        assert_eq!(t.now, BTreeSet::from([0x200]));
        set.remove_all(&mut t);
        assert!(t.now.is_empty() && !set.is_inserted(0x200));
    }

    #[test]
    fn returns_match_by_stack_pointer_and_malloc_returns_stay_armed() {
        let mut set: BreakpointSet<Role, Awaited> = BreakpointSet::default();
        let mut t = Recorder::default();
        // A recursive call: the same return address awaited at two depths.
        for sp in [0x2000_1000, 0x2000_0f00] {
            set.watch_return(ReturnWatch {
                addr: 0x300,
                sp,
                role: Awaited::Phase,
            });
        }
        set.watch_return(ReturnWatch {
            addr: 0x400,
            sp: 0x2000_0e00,
            role: Awaited::Alloc(PendingAlloc {
                request: 16,
                backtrace: vec![],
            }),
        });
        set.sync(&mut t).unwrap();
        assert_eq!(t.now, BTreeSet::from([0x300, 0x400]));
        // The inner return first; the outer one is still awaited.
        assert!(set.returns_hit(0x300, 0x2000_0800).is_empty());
        assert_eq!(set.returns_hit(0x300, 0x2000_0f00), vec![Awaited::Phase]);
        assert_eq!(set.returns_hit(0x300, 0x2000_0f00), vec![]);
        assert_eq!(set.returns_hit(0x300, 0x2000_1000), vec![Awaited::Phase]);
        set.sync(&mut t).unwrap();
        assert_eq!(t.now, BTreeSet::from([0x400]));
        // The malloc returned: its return address stays armed until tracing ends.
        assert_eq!(set.returns_hit(0x400, 0x2000_0e00).len(), 1);
        set.sync(&mut t).unwrap();
        assert_eq!(t.now, BTreeSet::from([0x400]));
        set.forget_returns(|r| matches!(r, Awaited::Alloc(_)), true);
        set.sync(&mut t).unwrap();
        assert!(t.now.is_empty());
    }

    #[test]
    fn span_returns_end_with_their_phase() {
        let mut set: BreakpointSet<Role, Awaited> = BreakpointSet::default();
        let mut t = Recorder::default();
        set.watch_return(ReturnWatch {
            addr: 0x500,
            sp: 1,
            role: Awaited::Span,
        });
        set.watch_return(ReturnWatch {
            addr: 0x600,
            sp: 2,
            role: Awaited::Phase,
        });
        set.sync(&mut t).unwrap();
        assert_eq!(t.now, BTreeSet::from([0x500, 0x600]));
        set.forget_returns(|r| matches!(r, Awaited::Span), false);
        set.sync(&mut t).unwrap();
        assert_eq!(t.now, BTreeSet::from([0x600]));
    }

    fn plan() -> BTreeMap<u64, Vec<Role>> {
        let role = |f: &str| Role::Lifecycle { function: f.into() };
        BTreeMap::from([
            (0x10, vec![role("load")]),
            (0x20, vec![role("run")]),
            (0x30, vec![role("release")]),
            (
                0x38,
                vec![Role::Trace(TraceRole::MallocRequest { size_arg: 0 })],
            ),
            (0x40, vec![Role::Trace(TraceRole::MallocExit)]),
            (0x48, vec![Role::Trace(TraceRole::MallocExit)]),
            (0x50, vec![Role::Trace(TraceRole::Free { ptr_arg: 0 })]),
            (0x60, vec![Role::Fault { fault: "HardFault" }]),
        ])
    }

    fn ret(addr: u64, sp: u64, role: Awaited) -> ReturnWatch<Awaited> {
        ReturnWatch { addr, sp, role }
    }

    fn malloc() -> Awaited {
        Awaited::Alloc(PendingAlloc {
            request: 8,
            backtrace: vec![],
        })
    }

    #[test]
    fn everything_is_armed_while_it_fits() {
        let entries = plan();
        let phase = vec![ret(0x70, 0, Awaited::Phase)];
        let sticky = BTreeSet::from([0x80]);
        let mut b = Budget::default();
        assert_eq!(b.select(&entries, &phase, &sticky).len(), 10, "no limit");
        b.capacity = Some(10);
        assert_eq!(b.select(&entries, &phase, &sticky).len(), 10, "it fits");
        assert!(!b.lean);
    }

    #[test]
    fn lean_arms_by_state_without_the_allocators_return_instructions() {
        let entries = plan();
        let mut b = Budget {
            capacity: Some(6),
            faults_caught: true,
            ..Budget::default()
        };
        let none = BTreeSet::new();
        assert_eq!(
            b.select(&entries, &[] as &[ReturnWatch<Awaited>], &none),
            BTreeSet::from([0x10, 0x20, 0x30]),
            "between phases: the roles, faults caught by vector catch"
        );
        assert!(b.lean, "everything (9) does not fit 6");
        b.in_phase = true;
        let phase = ret(0x70, 0x1000, Awaited::Phase);
        assert_eq!(
            b.select(
                &entries,
                std::slice::from_ref(&phase),
                &BTreeSet::from([0x80])
            ),
            BTreeSet::from([0x38, 0x50, 0x70]),
            "inside: the allocator's entries and the phase's return; no return instruction, \
             no kept return site"
        );
        // A malloc in flight: its caller's return only while it is awaited.
        let in_flight = [phase.clone(), ret(0x80, 0xf00, malloc())];
        assert_eq!(
            b.select(&entries, &in_flight, &BTreeSet::from([0x80])),
            BTreeSet::from([0x38, 0x50, 0x70, 0x80])
        );
        // It fits again (tracing off): still lean, the choice is made once.
        let few = BTreeMap::from([(
            0x10,
            vec![Role::Lifecycle {
                function: "x".into(),
            }],
        )]);
        b.in_phase = false;
        assert!(
            b.select(&few, &[] as &[ReturnWatch<Awaited>], &none)
                .contains(&0x10)
                && b.lean
        );
    }

    #[test]
    fn without_requested_sizes_the_allocators_entry_is_armed_only_when_lean() {
        // One stop per allocation: the return instructions, and the entry for lean only.
        let mut entries = plan();
        entries.insert(
            0x38,
            vec![Role::Trace(TraceRole::MallocLean { size_arg: 0 })],
        );
        let none = BTreeSet::new();
        let no_returns: &[ReturnWatch<Awaited>] = &[];
        let mut b = Budget::default();
        let all = b.select(&entries, no_returns, &none);
        assert!(!all.contains(&0x38) && all.contains(&0x40) && all.contains(&0x48));
        assert_eq!(all.len(), 7);
        // Too few breakpoints: lean, and inside a phase the entry reads the block at the
        // caller's return instead of the return instructions.
        let mut b = Budget {
            capacity: Some(5),
            faults_caught: true,
            in_phase: true,
            ..Budget::default()
        };
        assert_eq!(
            b.select(&entries, no_returns, &none),
            BTreeSet::from([0x38, 0x50])
        );
    }

    #[test]
    fn lean_arms_only_the_innermost_return_of_each_kind() {
        let mut b = Budget {
            capacity: Some(1),
            in_phase: true,
            ..Budget::default()
        };
        // A phase, two nested spans (the inner one awaited last), and an allocation in flight
        // with a stale outer one below it.
        let returns = [
            ret(0x100, 0x1000, Awaited::Phase),
            ret(0x200, 0xf00, Awaited::Span),
            ret(0x300, 0xe00, malloc()),
            ret(0x210, 0xd00, Awaited::Span),
            ret(0x310, 0xc00, malloc()),
        ];
        assert_eq!(
            b.select(
                &BTreeMap::<u64, Vec<Role>>::new(),
                &returns,
                &BTreeSet::new()
            ),
            BTreeSet::from([0x100, 0x210, 0x310])
        );
        // The inner span returned: the outer one is armed in its place.
        let returns = &returns[..3];
        assert_eq!(
            b.select(
                &BTreeMap::<u64, Vec<Role>>::new(),
                returns,
                &BTreeSet::new()
            ),
            BTreeSet::from([0x100, 0x200, 0x300])
        );
    }
}
