//! The live target session: the target, its firmware's symbols, the heap walker, the
//! breakpoint set with its budget, host-side resume and the memory read at the current stop.
//! Run control (resume, wait for a stop, read the registers) is `super::run`.
//!
//! The session knows nothing of phases, traces or what a breakpoint is for: it arms what the
//! engine asks, reports where the target stopped, and reads memory for whoever asks.

use std::rc::Rc;
use std::time::Duration;

use memlife_core::{Memory, Target};
use memlife_dwarf::Symbols;
use memlife_heap::{BlockRef, HeapState, HeapWalker, LinkState};

use super::breakpoints::BreakpointSet;
use super::budget::{BreakpointUse, Budget};
use super::clock::FirmwareClock;
use super::resume::HostResume;
use super::roles::{EntryRole, ReturnRole, ReturnWatch};
use crate::error::AuditError;
use crate::unwind::Prefetch;

/// How the session drives the target.
#[derive(Debug, Clone, Copy)]
pub struct SessionOptions {
    /// Resume from a breakpoint by executing its instruction on the host (Thumb only).
    pub emulate: bool,
    /// Ask the target to halt on faults by vector catch (fault handlers then need no
    /// breakpoint).
    pub vector_catch: bool,
    /// How heap walks read the target, with the link's model when known.
    pub link: LinkState,
}

/// One live target, held for an audit.
pub struct Session<E, R> {
    pub(super) target: Box<dyn Target>,
    pub(super) symbols: Rc<Symbols>,
    walker: Box<dyn HeapWalker>,
    /// How walks read the target; a model the first `auto` walk measures is kept here.
    link: LinkState,
    pub(super) timeout: Duration,
    pub(super) bps: BreakpointSet<E, R>,
    pub(super) resume: HostResume,
    /// Memory read at the current stop (stack window, block header), reused until resume.
    pub(super) cache: Vec<(u64, Vec<u8>)>,
    /// Waits watch for a parked firmware (see `super::park`).
    pub(super) park_watch: bool,
    /// Stops handled so far.
    pub(super) stops: u64,
    /// The firmware's running and halted time.
    pub(super) clock: FirmwareClock,
    /// Heap capacity, from the first walk.
    heap_size: u64,
    /// How the session drives the target (asked again of a restarted one).
    pub(super) options: SessionOptions,
    /// How to start the target again when a reset cannot (see `super::restart`).
    pub(super) restart: Option<Box<dyn super::Restart>>,
}

impl<E, R> std::fmt::Debug for Session<E, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("target", &self.target.describe())
            .field("allocator", &self.walker.name())
            .field("stops", &self.stops)
            .field("restart", &self.restart.as_ref().map(|r| r.describe()))
            .finish()
    }
}

impl<E: EntryRole, R: ReturnRole> Session<E, R> {
    /// Holds `target` for an audit. Nothing is sent to it yet.
    pub fn new(
        target: Box<dyn Target>,
        symbols: Rc<Symbols>,
        walker: Box<dyn HeapWalker>,
        timeout: Duration,
        options: SessionOptions,
    ) -> Self {
        let clock = FirmwareClock::new(&symbols);
        Session {
            target,
            symbols,
            walker,
            link: options.link,
            timeout,
            bps: BreakpointSet::default(),
            resume: HostResume::new(options.emulate),
            cache: Vec::new(),
            park_watch: false,
            stops: 0,
            clock,
            heap_size: 0,
            options,
            restart: None,
        }
    }

    /// Refuses a target without run control or breakpoints (an offline snapshot).
    pub fn check_live(&mut self) -> Result<(), AuditError> {
        if self.target.control().is_none() || self.target.breakpoints().is_none() {
            return Err(AuditError::NeedsLiveTarget(self.target.describe()));
        }
        Ok(())
    }

    /// Asks the target for its breakpoint count and, with `vector_catch`, to halt on faults by
    /// itself.
    pub fn init_budget(&mut self, vector_catch: bool) -> Result<(), AuditError> {
        let capacity = self.target.breakpoints().and_then(|b| b.capacity());
        self.bps.budget_mut().capacity = capacity;
        if vector_catch && let Some(c) = self.target.control() {
            self.bps.budget_mut().faults_caught = c.catch_faults(true)?;
        }
        Ok(())
    }

    /// Removes every breakpoint memlife inserted and turns the vector catch off again; called
    /// on every exit path, failures ignored.
    pub fn remove_all_breakpoints(&mut self) {
        if let Some(bps) = self.target.breakpoints() {
            self.bps.remove_all(bps);
        }
        if self.bps.budget().faults_caught
            && let Some(c) = self.target.control()
        {
            let _ = c.catch_faults(false);
            self.bps.budget_mut().faults_caught = false;
        }
    }

    /// Gives the target back, breakpoints removed.
    pub fn into_target(mut self) -> Box<dyn Target> {
        self.remove_all_breakpoints();
        self.target
    }

    /// The target, for memory reads and register writes.
    pub fn target(&mut self) -> &mut dyn Target {
        self.target.as_mut()
    }

    /// The target's memory.
    pub fn memory(&mut self) -> &mut dyn Memory {
        self.target.as_memory()
    }

    /// The firmware's symbols.
    pub fn symbols(&self) -> &Symbols {
        &self.symbols
    }

    /// The symbols, shared (to read memory through the target while holding them).
    pub fn symbols_rc(&self) -> Rc<Symbols> {
        Rc::clone(&self.symbols)
    }

    /// The heap walker.
    pub fn walker(&self) -> &dyn HeapWalker {
        self.walker.as_ref()
    }

    /// How long a run waits for what it waits for.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Stops handled so far.
    pub fn stops(&self) -> u64 {
        self.stops
    }

    /// The firmware's running and halted time so far; `None` when it was never resumed.
    pub fn firmware_time(&self) -> Option<crate::model::FirmwareTime> {
        self.clock.figures()
    }

    /// Reads the firmware's tick counter for the end of its time (the target halted).
    pub fn end_firmware_time(&mut self) {
        self.clock.at_end(self.target.as_memory());
    }

    /// Heap capacity, from the first walk.
    pub fn heap_size(&self) -> u64 {
        self.heap_size
    }

    /// Resumes from a breakpoint done by executing its instruction on the host.
    pub fn emulated(&self) -> u64 {
        self.resume.emulated
    }

    /// Resumes from a breakpoint that needed a single step on the target.
    pub fn stepped(&self) -> u64 {
        self.resume.stepped
    }

    /// Turns the park watch on or off for the next waits (see `super::park`).
    pub fn set_park_watch(&mut self, on: bool) {
        self.park_watch = on;
    }

    /// Walks the heap now (the target must be halted).
    pub fn walk(&mut self) -> Result<HeapState, AuditError> {
        let walked = memlife_heap::walk_halted(
            self.walker.as_ref(),
            &self.symbols,
            self.target.as_mut(),
            &mut self.link,
        )?;
        Ok(walked.state)
    }

    /// How walks read the target, with the link's model once measured (for the caller's next
    /// walks).
    pub fn link(&self) -> LinkState {
        self.link
    }

    /// The first walk of the audit, which gives the heap's size.
    pub fn walk_first(&mut self) -> Result<HeapState, AuditError> {
        let state = self.walk()?;
        self.heap_size = state.heap_size;
        Ok(state)
    }

    /// The block of a user pointer, reading through what this stop already read.
    pub fn block_of(&mut self, ptr: u64) -> Result<Option<BlockRef>, AuditError> {
        let cache = std::mem::take(&mut self.cache);
        let mut mem = Prefetch::from_parts(self.target.as_memory(), cache);
        let block = self.walker.block_of(&mut mem, ptr);
        self.cache = mem.into_ranges();
        Ok(block?)
    }

    /// Runs `read` over `ranges` fetched in one request; what was read stays in the stop's
    /// cache for later reads at this stop.
    pub fn read_at_stop<T>(
        &mut self,
        ranges: &[(u64, usize)],
        read: impl FnOnce(&mut dyn Memory, &Symbols) -> T,
    ) -> T {
        let mut mem = Prefetch::load(self.target.as_memory(), ranges);
        let out = read(&mut mem, &self.symbols);
        self.cache = mem.into_ranges();
        out
    }

    /// The fault handlers this ELF has: entry address and fault.
    pub fn fault_handlers(&self) -> Vec<(u64, &'static str)> {
        super::fault::handlers(&self.symbols)
    }

    /// The error for a stop at a fault handler's entry (`during`: when it happened).
    pub fn fault(&mut self, fault: &str, during: &str) -> AuditError {
        super::fault::describe(self.target.as_mut(), &self.symbols, fault, during)
    }

    /// Where the halted core is parked: pc, function and line, and the call chain.
    pub fn parked_at(&mut self, pc: u64) -> String {
        super::park::parked_at(self.target.as_mut(), &self.symbols, pc)
    }

    /// Adds a role at an entry address (once).
    pub fn add_entry(&mut self, addr: u64, role: E) {
        self.bps.add_entry(addr, role);
    }

    /// Removes a role from an entry address.
    pub fn remove_entry(&mut self, addr: u64, role: &E) {
        self.bps.remove_entry(addr, role);
    }

    /// The roles of the entry breakpoint at `pc`.
    pub fn roles_at(&self, pc: u64) -> Vec<E> {
        self.bps.roles_at(pc)
    }

    /// Awaits a return (`addr` with the stack pointer back at `sp`).
    pub fn watch_return(&mut self, addr: u64, sp: u64, role: R) {
        self.bps.watch_return(ReturnWatch { addr, sp, role });
    }

    /// The awaited returns a stop at `pc` with `sp` completes, removed.
    pub fn returns_hit(&mut self, pc: u64, sp: u64) -> Vec<R> {
        self.bps.returns_hit(pc, sp)
    }

    /// The breakpoint set (what is wanted and what is armed).
    pub fn breakpoints(&self) -> &BreakpointSet<E, R> {
        &self.bps
    }

    /// The breakpoint set, to change what is wanted.
    pub fn breakpoints_mut(&mut self) -> &mut BreakpointSet<E, R> {
        &mut self.bps
    }

    /// What the target allows and where the audit is.
    pub fn budget(&self) -> &Budget {
        self.bps.budget()
    }

    /// The budget, to record the plan's count and the audit's state.
    pub fn budget_mut(&mut self) -> &mut Budget {
        self.bps.budget_mut()
    }

    /// The breakpoints this audit used so far.
    pub fn breakpoint_use(&self) -> BreakpointUse {
        self.bps.budget().usage()
    }
}
