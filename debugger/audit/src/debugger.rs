//! The run loop: breakpoints, phases, spans and allocation tracing over one live target.
//!
//! Everything that stops the target goes through [`Debugger::run`], which resumes, waits, reads
//! the registers once, and dispatches on the pc:
//!
//! - allocator entries (`pvPortMalloc`, `_malloc_r`, `vPortFree`, `_free_r`) when tracing: the
//!   request size and the caller are read at malloc entry, the pointer at its return (a one-shot
//!   breakpoint on the return address, matched by stack pointer), the block size from its header;
//! - span entries (`op_init`, `op_invoke`) and their returns;
//! - the return of the phase being run, matched by stack pointer so recursion and re-entry do not
//!   confuse it;
//! - entries the caller waits for (`run_to`) and script hooks (`on_break`).
//!
//! Breakpoints stay inserted as long as they can: inserting or removing one costs a packet, and
//! QEMU flushes its whole translation cache on each. Return addresses of allocator and span
//! calls (a handful of call sites) stay armed once seen; a stop there with no call in flight is
//! simply continued. Resuming from a breakpoint is a single step with it in place.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;
use std::time::Duration;

use memlife_core::cortex_m::{self, CoreRegisters, thumb};
use memlife_core::{
    BreakpointKind, Memory, Register, StopReason, Target, TargetError, Wait, interrupt,
};
use memlife_dwarf::Symbols;
use memlife_heap::{BlockRef, EntryRole, HeapState, HeapWalker, LowWaterMark};

use crate::config::{AuditConfig, PeakMethod};
use crate::error::AuditError;
use crate::model::{EventKind, HeapMap, PeakSite, PhaseRecord, Site, SpanRecord, TraceEvent};

/// Registers read at every stop.
#[derive(Debug, Clone, Copy)]
struct Regs {
    pc: u64,
    sp: u64,
    lr: u64,
    args: [u64; 4],
}

/// What an entry breakpoint is for (several can share an address).
#[derive(Debug, Clone, PartialEq, Eq)]
enum BreakRole {
    /// An allocator's entry: the size is read here, the pointer at the caller's return address
    /// (used when the allocator's own return instructions cannot be found).
    Malloc {
        size_arg: usize,
    },
    /// One of an allocator's return instructions: `r0` is the new block (one stop per call).
    MallocExit,
    Free {
        ptr_arg: usize,
    },
    Span {
        function: String,
    },
    Goal {
        function: String,
    },
    Hook {
        symbol: String,
    },
}

#[derive(Debug, Clone)]
struct PendingAlloc {
    request: u64,
    backtrace: Vec<u64>,
}

#[derive(Debug, Clone)]
enum ReturnRole {
    Malloc(PendingAlloc),
    Span,
    Phase,
}

#[derive(Debug, Clone)]
struct ReturnWatch {
    addr: u64,
    sp: u64,
    role: ReturnRole,
}

/// A block the trace saw allocated and not yet freed.
#[derive(Debug, Clone)]
pub struct LiveAlloc {
    /// Block size.
    pub size: u64,
    /// Event sequence number.
    pub seq: u64,
    /// Allocation site.
    pub site: Site,
}

#[derive(Debug, Clone)]
struct OpenSpan {
    seq_begin: u64,
    function: String,
    call: u64,
    index: usize,
    args: [u64; 4],
    before_used: u64,
    peak_used: u64,
}

#[derive(Debug, Clone)]
struct OpenPhase {
    function: String,
    alias: Option<String>,
    call: u64,
    before: Rc<HeapState>,
    peak_used: u64,
    peak_at: Option<PeakSite>,
    spans: Vec<SpanRecord>,
    open_spans: Vec<OpenSpan>,
    first_event: Option<u64>,
    allocs: u64,
    frees: u64,
    watermark: Option<WatermarkState>,
    seq_begin: u64,
}

#[derive(Debug, Clone, Copy)]
struct WatermarkState {
    min_addr: u64,
    original_min: u32,
}

/// What a run ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The goal was reached.
    Reached,
    /// A script hook's breakpoint was hit (the goal is still pending: call `run` again).
    Hook(String),
}

/// What a run waits for.
#[derive(Debug, Clone)]
pub enum Goal {
    /// The `remaining`-th next entry of the function at `addr`.
    Entry {
        /// Function name.
        function: String,
        /// Entry address.
        addr: u64,
        /// Entries still to see.
        remaining: u32,
    },
    /// The return of the open phase.
    PhaseReturn,
}

/// Progress, for the progress bar.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// Stops handled.
    pub stops: u64,
    /// Trace events.
    pub events: u64,
    /// Phases completed.
    pub phases: u64,
    /// The phase running.
    pub current: Option<String>,
}

/// Called after every stop with the progress so far.
pub type Observer = Box<dyn FnMut(&Progress)>;

/// The debugger an audit drives.
pub struct Debugger {
    target: Box<dyn Target>,
    symbols: Rc<Symbols>,
    walker: Box<dyn HeapWalker>,
    config: AuditConfig,
    method: PeakMethod,
    timeout: Duration,
    entries: BTreeMap<u64, Vec<BreakRole>>,
    returns: Vec<ReturnWatch>,
    /// Return addresses of allocator calls, kept armed while tracing.
    sticky_malloc: BTreeSet<u64>,
    /// Return addresses of span calls, kept armed while their phase runs.
    sticky_span: BTreeSet<u64>,
    inserted: BTreeSet<u64>,
    calls: HashMap<String, u64>,
    used: u64,
    seq: u64,
    events: Vec<TraceEvent>,
    live: BTreeMap<u64, LiveAlloc>,
    /// User pointer → block address of the traced live blocks.
    live_ptrs: HashMap<u64, u64>,
    phase: Option<OpenPhase>,
    records: Vec<PhaseRecord>,
    progress: Progress,
    observer: Option<Observer>,
    skip: Vec<String>,
    heap_size: u64,
    tracing: bool,
    /// Memory read at the current stop (stack window, block header), reused until resume.
    stop_cache: Vec<(u64, Vec<u8>)>,
    /// Resumes done by executing the breakpoint's instruction here.
    emulated: u64,
    /// Resumes that needed a single step.
    stepped: u64,
    /// Whether breakpoint instructions are executed on the host (Thumb targets).
    emulate: bool,
    /// The initial stack pointer from the linker script (`_estack`...), bounding stack reads.
    stack_top: Option<u64>,
    /// The heap at the first phase's entry, and after the first and the last release: what the
    /// report's heap map compares to tell leaked blocks from blocks kept for good.
    baseline: Option<Rc<HeapState>>,
    first_release: Option<Rc<HeapState>>,
    last_release: Option<(String, Rc<HeapState>)>,
    /// Names for span arguments, by span function (`op_init` → operator names), from scripts.
    labels: BTreeMap<String, Vec<String>>,
}

impl std::fmt::Debug for Debugger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Debugger")
            .field("target", &self.target.describe())
            .field("method", &self.method)
            .field("events", &self.events.len())
            .field("phases", &self.records.len())
            .finish()
    }
}

impl Debugger {
    /// Takes over a halted live target. Tracing breakpoints are set now when the method is trace.
    /// On failure the target is handed back with the error, so the caller can still leave it as
    /// the user asked.
    pub fn new(
        target: Box<dyn Target>,
        symbols: Rc<Symbols>,
        walker: Box<dyn HeapWalker>,
        config: AuditConfig,
        method: PeakMethod,
        timeout: Duration,
    ) -> Result<Debugger, (AuditError, Box<dyn Target>)> {
        let mut dbg = Self::assemble(target, symbols, walker, config, method, timeout);
        match dbg.prepare() {
            Ok(()) => Ok(dbg),
            Err(e) => Err((e, dbg.into_target())),
        }
    }

    fn assemble(
        target: Box<dyn Target>,
        symbols: Rc<Symbols>,
        walker: Box<dyn HeapWalker>,
        config: AuditConfig,
        method: PeakMethod,
        timeout: Duration,
    ) -> Debugger {
        let mut skip: Vec<String> = config.trace.skip.clone();
        skip.extend(walker.entry_points().iter().map(|e| e.function.to_string()));
        Debugger {
            target,
            symbols,
            walker,
            config,
            method,
            timeout,
            entries: BTreeMap::new(),
            returns: Vec::new(),
            sticky_malloc: BTreeSet::new(),
            sticky_span: BTreeSet::new(),
            inserted: BTreeSet::new(),
            calls: HashMap::new(),
            used: 0,
            seq: 0,
            events: Vec::new(),
            live: BTreeMap::new(),
            live_ptrs: HashMap::new(),
            phase: None,
            records: Vec::new(),
            progress: Progress::default(),
            observer: None,
            skip,
            heap_size: 0,
            tracing: false,
            stop_cache: Vec::new(),
            emulated: 0,
            stepped: 0,
            emulate: std::env::var_os("MEMLIFE_NO_EMULATION").is_none(),
            stack_top: None,
            baseline: None,
            first_release: None,
            last_release: None,
            labels: BTreeMap::new(),
        }
    }

    fn prepare(&mut self) -> Result<(), AuditError> {
        let dbg = self;
        dbg.emulate &= dbg.symbols.machine() == "Arm";
        dbg.stack_top = [
            "_estack",
            "__StackTop",
            "__stack",
            "_stack_top",
            "__initial_sp",
        ]
        .iter()
        .find_map(|n| dbg.symbols.elf_symbol(n).map(|s| s.address));
        let method = dbg.method;
        if dbg.target.control().is_none() || dbg.target.breakpoints().is_none() {
            return Err(AuditError::NeedsLiveTarget(dbg.target.describe()));
        }
        if method == PeakMethod::Watermark && dbg.watermark_addrs().is_none() {
            let why = match dbg.walker.low_water_mark() {
                LowWaterMark::PerHeap { counter } => {
                    format!("keeps one per heap ({counter}), and their minima need not coincide")
                }
                _ => "keeps none".to_string(),
            };
            return Err(AuditError::Config(format!(
                "the watermark method needs the allocator's low-water mark; {} {why} (use trace or sample)",
                dbg.walker.name()
            )));
        }
        if method == PeakMethod::Watermark && dbg.target.memory_write().is_none() {
            return Err(AuditError::Config(
                "the watermark method writes target RAM; this target is read-only".into(),
            ));
        }
        let state = dbg.walk()?;
        dbg.used = state.used;
        dbg.heap_size = state.heap_size;
        if method == PeakMethod::Trace {
            dbg.set_tracing(true)?;
        }
        Ok(())
    }

    /// Turns allocation tracing on or off (trace method only). Off, the target runs between
    /// phase and span boundaries without stopping in the allocator: much faster, but peaks come
    /// from boundary samples and new allocations get no site.
    pub fn set_tracing(&mut self, on: bool) -> Result<(), AuditError> {
        if self.method != PeakMethod::Trace {
            return Err(AuditError::Config(format!(
                "tracing is only available with the trace method (this audit uses {:?})",
                self.method
            )));
        }
        let entries = self.walker.entry_points();
        let mut found = false;
        for (name, arg) in entries.iter().filter_map(|e| match e.role {
            EntryRole::Malloc { size_arg } => Some((e.function, usize::from(size_arg))),
            _ => None,
        }) {
            if let Some((addr, size)) = self.symbols.function(name) {
                let exits = self
                    .symbols
                    .code(addr, size as usize)
                    .map(|code| thumb::return_instructions(code, addr))
                    .unwrap_or_default();
                let roles: Vec<(u64, BreakRole)> = if exits.is_empty() {
                    vec![(addr, BreakRole::Malloc { size_arg: arg })]
                } else {
                    exits
                        .into_iter()
                        .map(|a| (a, BreakRole::MallocExit))
                        .collect()
                };
                for (a, role) in roles {
                    if on {
                        self.add_entry(a, role);
                    } else {
                        self.remove_entry(a, &role);
                    }
                }
                found = true;
            }
        }
        for (name, arg) in entries.iter().filter_map(|e| match e.role {
            EntryRole::Free { ptr_arg } => Some((e.function, usize::from(ptr_arg))),
            _ => None,
        }) {
            if let Some((addr, _)) = self.symbols.function(name) {
                let role = BreakRole::Free { ptr_arg: arg };
                if on {
                    self.add_entry(addr, role);
                } else {
                    self.remove_entry(addr, &role);
                }
            }
        }
        if !found {
            return Err(AuditError::Config(format!(
                "tracing needs the allocator's malloc entry ({}) in the ELF; use --method sample",
                entries
                    .iter()
                    .filter(|e| matches!(e.role, EntryRole::Malloc { .. }))
                    .map(|e| e.function)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if !on {
            self.sticky_malloc.clear();
            self.returns
                .retain(|r| !matches!(r.role, ReturnRole::Malloc(_)));
        }
        if on && !self.tracing {
            // Re-synchronise the running total: allocations made while off were not seen.
            let state = self.walk()?;
            self.used = state.used;
        }
        self.tracing = on;
        Ok(())
    }

    /// Resumes from a breakpoint done by executing its instruction on the host.
    pub fn emulated(&self) -> u64 {
        self.emulated
    }

    /// Resumes from a breakpoint that needed a single step on the target.
    pub fn stepped(&self) -> u64 {
        self.stepped
    }

    /// Whether allocations are being traced right now.
    pub fn tracing(&self) -> bool {
        self.tracing
    }

    /// Gives the target back (breakpoints removed).
    pub fn into_target(mut self) -> Box<dyn Target> {
        self.remove_all_breakpoints();
        self.target
    }

    /// Removes every breakpoint memlife inserted; called on every exit path.
    pub fn remove_all_breakpoints(&mut self) {
        if let Some(bps) = self.target.breakpoints() {
            for addr in std::mem::take(&mut self.inserted) {
                let _ = bps.remove_breakpoint(addr, BreakpointKind::Software);
            }
        }
        if let Some(wm) = self.phase.as_ref().and_then(|p| p.watermark) {
            // A phase interrupted by an error: put the low-water mark back.
            let _ = self.restore_watermark(wm, None);
        }
    }

    /// Called after every stop with the progress so far.
    pub fn set_observer(&mut self, f: Observer) {
        self.observer = Some(f);
    }

    /// The symbols.
    pub fn symbols(&self) -> &Symbols {
        &self.symbols
    }

    /// The symbols, shared (to read memory through the target while holding them).
    pub fn symbols_rc(&self) -> Rc<Symbols> {
        self.symbols.clone()
    }

    /// The configuration.
    pub fn config(&self) -> &AuditConfig {
        &self.config
    }

    /// The peak method.
    pub fn method(&self) -> PeakMethod {
        self.method
    }

    /// The allocator's name.
    pub fn allocator(&self) -> &'static str {
        self.walker.name()
    }

    /// The target, for memory reads.
    pub fn target(&mut self) -> &mut dyn Target {
        self.target.as_mut()
    }

    /// Completed phases.
    pub fn records(&self) -> &[PhaseRecord] {
        &self.records
    }

    /// Trace events so far.
    pub fn events(&self) -> &[TraceEvent] {
        &self.events
    }

    /// Blocks the trace saw allocated and not freed, by block address.
    pub fn live(&self) -> &BTreeMap<u64, LiveAlloc> {
        &self.live
    }

    /// Entries of `function` seen so far.
    pub fn calls(&self, function: &str) -> u64 {
        self.calls.get(function).copied().unwrap_or(0)
    }

    /// Stops handled so far.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// Walks the heap now (the target must be halted).
    pub fn walk(&mut self) -> Result<HeapState, AuditError> {
        let walked =
            memlife_heap::walk_halted(self.walker.as_ref(), &self.symbols, self.target.as_mut())?;
        Ok(walked.state)
    }

    /// Resets the target and halts it at the reset vector. Trace state starts over.
    pub fn reset(&mut self) -> Result<(), AuditError> {
        if self.phase.is_some() {
            return Err(AuditError::Config("reset inside a phase".into()));
        }
        self.returns.clear();
        self.live.clear();
        self.live_ptrs.clear();
        if let Some(c) = self.target.control() {
            c.reset(true)?;
        }
        let state = self.walk()?;
        self.used = state.used;
        Ok(())
    }

    /// Sets a script hook on a function's entry.
    pub fn add_hook(&mut self, symbol: &str) -> Result<u64, AuditError> {
        let (addr, _) = self.function(symbol)?;
        self.add_entry(
            addr,
            BreakRole::Hook {
                symbol: symbol.to_string(),
            },
        );
        Ok(addr)
    }

    /// The entry address of a function, or a clear error.
    pub fn function(&self, name: &str) -> Result<(u64, u64), AuditError> {
        self.symbols
            .function(name)
            .ok_or_else(|| AuditError::NoSuchFunction(name.to_string()))
    }

    fn add_entry(&mut self, addr: u64, role: BreakRole) {
        let roles = self.entries.entry(addr).or_default();
        if !roles.contains(&role) {
            roles.push(role);
        }
    }

    fn remove_entry(&mut self, addr: u64, role: &BreakRole) {
        if let Some(roles) = self.entries.get_mut(&addr) {
            roles.retain(|r| r != role);
            if roles.is_empty() {
                self.entries.remove(&addr);
            }
        }
    }

    /// Inserts and removes breakpoints so the target has exactly the ones wanted now.
    fn sync_breakpoints(&mut self) -> Result<(), AuditError> {
        let mut want: BTreeSet<u64> = self.entries.keys().copied().collect();
        want.extend(self.returns.iter().map(|r| r.addr));
        want.extend(&self.sticky_malloc);
        want.extend(&self.sticky_span);
        let bps = self
            .target
            .breakpoints()
            .ok_or_else(|| AuditError::NeedsLiveTarget("breakpoints".into()))?;
        for addr in self.inserted.difference(&want).copied().collect::<Vec<_>>() {
            bps.remove_breakpoint(addr, BreakpointKind::Software)?;
            self.inserted.remove(&addr);
        }
        for addr in want.difference(&self.inserted).copied().collect::<Vec<_>>() {
            bps.add_breakpoint(addr, BreakpointKind::Software)?;
            self.inserted.insert(addr);
        }
        Ok(())
    }

    /// When halted on one of our breakpoints, executes its instruction here (see [`cortex_m::thumb`])
    /// so that resuming needs no single step; the register and memory writes go out with the
    /// continue. Falls back to the backend's step for anything it does not know.
    fn execute_breakpoint_instruction(&mut self) -> Result<(), AuditError> {
        if !self.emulate {
            return Ok(());
        }
        let t = self.target.as_mut();
        let Ok(pc) = t.read_register(Register::ProgramCounter) else {
            return Ok(());
        };
        if !self.inserted.contains(&pc) {
            return Ok(());
        }
        let Some(code) = self
            .symbols
            .code(pc, 4)
            .or_else(|| self.symbols.code(pc, 2))
        else {
            self.stepped += 1;
            return Ok(());
        };
        let mut before = CoreRegisters::read_r0_to_r15(t)?;
        // A server whose description has no xPSR cannot have its flags emulated: step.
        let Ok(xpsr) = t.read_register(Register::Numbered(cortex_m::GDB_XPSR)) else {
            self.stepped += 1;
            return Ok(());
        };
        before.xpsr = xpsr as u32;
        let mut core = before;
        let cache = std::mem::take(&mut self.stop_cache);
        let mut mem = crate::unwind::Prefetch::from_parts(t.as_memory(), cache);
        let mut stack = |a: u32| -> Option<u32> {
            let mut b = [0u8; 4];
            mem.read(u64::from(a), &mut b).ok()?;
            Some(u32::from_le_bytes(b))
        };
        let effect = thumb::execute(&mut core, code, &mut stack);
        let Some(effect) = effect else {
            self.stepped += 1;
            return Ok(());
        };
        let t = self.target.as_mut();
        if !effect.writes.is_empty() {
            let w = t
                .memory_write()
                .ok_or_else(|| AuditError::NeedsLiveTarget("memory writes".into()))?;
            for (addr, bytes) in &effect.writes {
                w.write(u64::from(*addr), bytes)?;
            }
        }
        core.write_changed(t, &before)?;
        self.emulated += 1;
        Ok(())
    }

    fn read_regs(&mut self) -> Result<Regs, AuditError> {
        let t = &mut self.target;
        let pc = t.read_register(Register::ProgramCounter)?;
        let sp = t.read_register(Register::StackPointer)?;
        let lr = t.read_register(Register::ReturnAddress)?;
        let mut args = [0u64; 4];
        for (i, a) in args.iter_mut().enumerate() {
            *a = t.read_register(Register::Argument(i as u8))?;
        }
        Ok(Regs { pc, sp, lr, args })
    }

    /// Runs until the goal is reached or a hook fires.
    pub fn run(&mut self, goal: &mut Goal) -> Result<Outcome, AuditError> {
        if let Goal::Entry { remaining: 0, .. } = goal {
            // Met at the stop a hook interrupted.
            return Ok(Outcome::Reached);
        }
        if let Goal::Entry { addr, function, .. } = goal {
            let (addr, function) = (*addr, function.clone());
            self.add_entry(addr, BreakRole::Goal { function });
        }
        let result = self.run_loop(goal);
        if let Goal::Entry {
            addr,
            function,
            remaining,
        } = goal
        {
            if *remaining == 0 || result.is_err() {
                let role = BreakRole::Goal {
                    function: function.clone(),
                };
                self.remove_entry(*addr, &role);
            }
        }
        result
    }

    fn run_loop(&mut self, goal: &mut Goal) -> Result<Outcome, AuditError> {
        // One deadline for the whole goal: allocator stops on the way must not keep a goal that
        // is never reached alive forever.
        let deadline = std::time::Instant::now() + self.timeout;
        loop {
            self.sync_breakpoints()?;
            self.execute_breakpoint_instruction()?;
            let timeout = deadline.saturating_duration_since(std::time::Instant::now());
            let control = self
                .target
                .control()
                .ok_or_else(|| AuditError::NeedsLiveTarget("run control".into()))?;
            control.resume()?;
            self.stop_cache.clear();
            let stop = match interrupt::wait_for_stop_or_interrupt(control, timeout)? {
                Wait::Stopped(stop) => stop,
                Wait::TimedOut => {
                    let _ = control.halt();
                    return Err(AuditError::NotReached {
                        what: goal_name(goal, self.phase.as_ref()),
                        seconds: self.timeout.as_secs_f64(),
                    });
                }
                Wait::Interrupted => {
                    // Halted, so the cleanup that follows (breakpoints out, then resume or
                    // leave as asked) works on a quiet core.
                    let _ = control.halt();
                    return Err(AuditError::Target(TargetError::Interrupted));
                }
            };
            match stop {
                StopReason::Breakpoint(_) | StopReason::Signal(5) => {}
                StopReason::Exited(code) => {
                    return Err(AuditError::Target(TargetError::Exited(code)));
                }
                StopReason::Terminated(sig) => {
                    return Err(AuditError::Target(TargetError::Gone(format!(
                        "terminated by signal {sig}"
                    ))));
                }
                other => {
                    return Err(AuditError::UnexpectedStop(
                        format!("{other:?}"),
                        goal_name(goal, self.phase.as_ref()),
                    ));
                }
            }
            let regs = self.read_regs()?;
            self.progress.stops += 1;
            let (reached, hook) = self.dispatch(&regs, goal)?;
            if let Some(obs) = self.observer.as_mut() {
                obs(&self.progress);
            }
            if let Some(h) = hook {
                if reached {
                    // Report the hook first; the goal is met, so the next run returns at once.
                    if let Goal::Entry { remaining, .. } = goal {
                        *remaining = 0;
                    }
                }
                return Ok(Outcome::Hook(h));
            }
            if reached {
                return Ok(Outcome::Reached);
            }
        }
    }

    fn dispatch(
        &mut self,
        regs: &Regs,
        goal: &mut Goal,
    ) -> Result<(bool, Option<String>), AuditError> {
        let mut reached = false;
        let mut hook = None;
        // Returns first: a return address can also be some function's entry.
        let mut i = 0;
        while i < self.returns.len() {
            let w = &self.returns[i];
            // After a return the stack pointer is back to its value at the call.
            if w.addr == regs.pc && w.sp == regs.sp {
                let w = self.returns.remove(i);
                match w.role {
                    ReturnRole::Malloc(pending) => self.malloc_returned(regs.args[0], pending)?,
                    ReturnRole::Span => self.close_span(regs)?,
                    ReturnRole::Phase => {
                        if matches!(goal, Goal::PhaseReturn) {
                            reached = true;
                        }
                    }
                }
            } else {
                i += 1;
            }
        }
        let roles = self.entries.get(&regs.pc).cloned().unwrap_or_default();
        for role in roles {
            match role {
                BreakRole::Malloc { size_arg } => {
                    let backtrace = self.backtrace(regs);
                    self.sticky_malloc.insert(regs.lr & !1);
                    self.returns.push(ReturnWatch {
                        addr: regs.lr & !1,
                        sp: regs.sp,
                        role: ReturnRole::Malloc(PendingAlloc {
                            request: regs.args[size_arg],
                            backtrace,
                        }),
                    });
                }
                BreakRole::MallocExit => {
                    let ptr = regs.args[0];
                    if ptr != 0 {
                        self.malloc_exited(ptr, regs)?;
                    }
                }
                BreakRole::Free { ptr_arg } => {
                    let ptr = regs.args[ptr_arg];
                    if ptr != 0 {
                        self.freed(ptr, regs)?;
                    }
                }
                BreakRole::Span { function } => self.open_span(&function, regs)?,
                BreakRole::Goal { function } => {
                    *self.calls.entry(function.clone()).or_default() += 1;
                    if let Goal::Entry {
                        addr, remaining, ..
                    } = goal
                    {
                        if *addr == regs.pc && *remaining > 0 {
                            *remaining -= 1;
                            if *remaining == 0 {
                                reached = true;
                            }
                        }
                    }
                }
                BreakRole::Hook { symbol } => hook = Some(symbol),
            }
        }
        Ok((reached, hook))
    }

    /// Return addresses of the call chain at a stop inside the allocator (frame 0 is the
    /// allocator), from the stack window read with `extra` ranges in one request. Returns the
    /// frames and the prefetched words of `extra`.
    fn backtrace_with(
        &mut self,
        regs: &Regs,
        extra: &[(u64, usize)],
    ) -> (Vec<u64>, Vec<Option<u32>>) {
        let depth = self.config.trace.backtrace.max(1);
        let fallback = vec![regs.pc, regs.lr & !1];
        let Some(r32) = crate::unwind::registers(self.target.as_mut()) else {
            return (fallback, vec![None; extra.len()]);
        };
        // Never past the top of the stack: a read beyond RAM fails and costs retries.
        let window = self
            .stack_top
            .filter(|top| *top > regs.sp)
            .map_or(crate::unwind::STACK_WINDOW, |top| {
                crate::unwind::STACK_WINDOW.min((top - regs.sp) as usize)
            });
        let mut ranges = vec![(regs.sp, window)];
        ranges.extend_from_slice(extra);
        let mut mem = crate::unwind::Prefetch::load(self.target.as_memory(), &ranges);
        let words = extra.iter().map(|&(a, _)| mem.cached_u32(a)).collect();
        let mut frames = crate::unwind::backtrace(&self.symbols, &r32, &mut mem, depth + 1);
        if frames.len() < 2 {
            frames = fallback;
        }
        frames.truncate(depth + 1);
        self.stop_cache = mem.into_ranges();
        (frames, words)
    }

    fn backtrace(&mut self, regs: &Regs) -> Vec<u64> {
        self.backtrace_with(regs, &[]).0
    }

    /// The allocation site: the first frame (inlined ones included) outside the allocator and
    /// the configured wrappers, and the chain of callers from there.
    pub fn site_of(&self, backtrace: &[u64]) -> Site {
        let mut site = Site::default();
        // Frame 0 is the allocator's own pc; the others are return addresses, looked up at the
        // call instruction before them.
        for &ret in backtrace.iter().skip(1) {
            for loc in self.symbols.locate(ret.saturating_sub(2)) {
                let name = loc.function.clone().unwrap_or_else(|| "??".into());
                if self.skip.contains(&name) {
                    continue;
                }
                let file = loc
                    .file
                    .as_ref()
                    .map(|f| f.rsplit('/').next().unwrap_or(f).to_string());
                site.chain.push(match (&file, loc.line) {
                    (Some(f), Some(l)) => format!("{name} ({f}:{l})"),
                    _ => name.clone(),
                });
                if site.function.is_none() {
                    site.function = Some(name);
                    site.file = file;
                    site.line = loc.line;
                }
            }
        }
        site
    }

    /// At an allocator's return instruction: the block is in r0, the caller in the backtrace.
    fn malloc_exited(&mut self, ptr: u64, regs: &Regs) -> Result<(), AuditError> {
        let header: Vec<(u64, usize)> = self.walker.header_range(ptr).into_iter().collect();
        let (backtrace, _) = self.backtrace_with(regs, &header);
        let Some(BlockRef { addr, size }) = self.block_at(ptr)? else {
            tracing::warn!("malloc returned {ptr:#010x}, which has no valid block header");
            return Ok(());
        };
        self.used += size;
        let site = self.site_of(&backtrace);
        let seq = self.record_event(EventKind::Alloc, addr, size, None, site.clone());
        self.live.insert(addr, LiveAlloc { size, seq, site });
        self.live_ptrs.insert(ptr, addr);
        if let Some(p) = self.phase.as_mut() {
            p.allocs += 1;
        }
        Ok(())
    }

    /// The block of a user pointer, reading through what this stop already read.
    fn block_at(&mut self, ptr: u64) -> Result<Option<BlockRef>, AuditError> {
        let cache = std::mem::take(&mut self.stop_cache);
        let mut mem = crate::unwind::Prefetch::from_parts(self.target.as_memory(), cache);
        let block = self.walker.block_of(&mut mem, ptr);
        self.stop_cache = mem.into_ranges();
        Ok(block?)
    }

    fn malloc_returned(&mut self, ptr: u64, pending: PendingAlloc) -> Result<(), AuditError> {
        if ptr == 0 {
            return Ok(());
        }
        let Some(BlockRef { addr, size }) = self.walker.block_of(self.target.as_memory(), ptr)?
        else {
            tracing::warn!("malloc returned {ptr:#010x}, which has no valid block header");
            return Ok(());
        };
        self.used += size;
        let site = self.site_of(&pending.backtrace);
        let seq = self.record_event(
            EventKind::Alloc,
            addr,
            size,
            Some(pending.request),
            site.clone(),
        );
        self.live.insert(addr, LiveAlloc { size, seq, site });
        if let Some(p) = self.phase.as_mut() {
            p.allocs += 1;
        }
        Ok(())
    }

    fn freed(&mut self, ptr: u64, regs: &Regs) -> Result<(), AuditError> {
        // A block the trace saw allocated needs no header read: its size is known.
        let known = self.live_ptrs.get(&ptr).and_then(|addr| {
            self.live.get(addr).map(|l| BlockRef {
                addr: *addr,
                size: l.size,
            })
        });
        let block = match known {
            Some(b) => Some(b),
            None => self.block_at(ptr)?,
        };
        let Some(BlockRef { addr, size }) = block else {
            tracing::warn!("free({ptr:#010x}) of something that is not an allocated block");
            return Ok(());
        };
        self.used = self.used.saturating_sub(size);
        self.live.remove(&addr);
        self.live_ptrs.remove(&ptr);
        let site = self.site_of(&[regs.pc, regs.lr & !1]);
        self.record_event(EventKind::Free, addr, size, None, site);
        if let Some(p) = self.phase.as_mut() {
            p.frees += 1;
        }
        Ok(())
    }

    fn record_event(
        &mut self,
        kind: EventKind,
        addr: u64,
        size: u64,
        request: Option<u64>,
        site: Site,
    ) -> u64 {
        let seq = self.seq;
        self.seq += 1;
        self.progress.events += 1;
        let used = self.used;
        let span = self
            .phase
            .as_ref()
            .and_then(|p| p.open_spans.last())
            .map(|s| format!("{}#{}", s.function, s.call));
        if let Some(p) = self.phase.as_mut() {
            p.first_event.get_or_insert(seq);
            for s in &mut p.open_spans {
                s.peak_used = s.peak_used.max(used);
            }
            if used > p.peak_used {
                p.peak_used = used;
                let open = p.open_spans.last();
                p.peak_at = Some(PeakSite {
                    seq: Some(seq),
                    span: span.clone(),
                    span_index: open.map(|s| s.index),
                    span_arg1: open.map(|s| s.args[1]),
                    site: (kind == EventKind::Alloc).then(|| site.clone()),
                });
            }
        }
        self.events.push(TraceEvent {
            seq,
            kind,
            addr,
            size,
            request,
            used_after: used,
            phase: self.phase.as_ref().map(|p| p.function.clone()),
            span,
            site,
        });
        seq
    }

    fn current_used(&mut self) -> Result<u64, AuditError> {
        Ok(if self.method == PeakMethod::Trace && self.tracing {
            self.used
        } else {
            self.walk()?.used
        })
    }

    fn open_span(&mut self, function: &str, regs: &Regs) -> Result<(), AuditError> {
        let call = {
            let c = self.calls.entry(function.to_string()).or_default();
            *c += 1;
            *c
        };
        let used = self.current_used()?;
        let Some(p) = self.phase.as_mut() else {
            return Ok(());
        };
        let index = p.spans.len() + p.open_spans.len();
        p.open_spans.push(OpenSpan {
            seq_begin: self.seq,
            function: function.to_string(),
            call,
            index,
            args: regs.args,
            before_used: used,
            peak_used: used,
        });
        self.returns.push(ReturnWatch {
            addr: regs.lr & !1,
            sp: regs.sp,
            role: ReturnRole::Span,
        });
        Ok(())
    }

    fn close_span(&mut self, _regs: &Regs) -> Result<(), AuditError> {
        let used = self.current_used()?;
        let tracing = self.method == PeakMethod::Trace && self.tracing;
        let Some(p) = self.phase.as_mut() else {
            return Ok(());
        };
        let Some(s) = p.open_spans.pop() else {
            return Ok(());
        };
        let peak = s.peak_used.max(used);
        if !tracing && used > p.peak_used {
            p.peak_used = used;
            p.peak_at = Some(PeakSite {
                seq: None,
                span: Some(format!("{}#{}", s.function, s.call)),
                span_index: Some(s.index),
                span_arg1: Some(s.args[1]),
                site: None,
            });
        }
        p.spans.push(SpanRecord {
            function: s.function,
            call: s.call,
            index: s.index,
            args: s.args,
            before_used: s.before_used,
            after_used: used,
            delta: used as i64 - s.before_used as i64,
            peak_used: peak,
            seq_begin: s.seq_begin,
            seq_end: self.seq,
        });
        p.spans.sort_by_key(|s| s.index);
        Ok(())
    }

    /// The allocator's free-bytes and minimum-ever counters, when it keeps one pair for the heap.
    fn watermark_addrs(&self) -> Option<(u64, u64)> {
        match self.walker.low_water_mark() {
            LowWaterMark::Counters { free, minimum } => Some((free, minimum)),
            _ => None,
        }
    }

    fn restore_watermark(
        &mut self,
        wm: WatermarkState,
        observed: Option<u32>,
    ) -> Result<(), AuditError> {
        // The value the allocator would hold had memlife not reset it.
        let value = observed.map_or(wm.original_min, |o| o.min(wm.original_min));
        if let Some(w) = self.target.memory_write() {
            w.write(wm.min_addr, &value.to_le_bytes())?;
        }
        Ok(())
    }

    /// Starts a phase: runs to the function's entry (the next call), snapshots, sets the return
    /// breakpoint and the span breakpoints. Returns a hook name if one fired first.
    pub fn phase_begin(&mut self, name: &str) -> Result<PhaseRun, AuditError> {
        if self.phase.is_some() {
            return Err(AuditError::Config("a phase is already running".into()));
        }
        let function = self.config.phase_function(name).to_string();
        let alias = (function != name).then(|| name.to_string());
        let (addr, _) = self.function(&function)?;
        Ok(PhaseRun {
            goal: Goal::Entry {
                function: function.clone(),
                addr,
                remaining: 1,
            },
            function,
            alias,
            entered: false,
        })
    }

    /// Advances a phase; `Ok(None)` while a hook interrupts, the record when it returned.
    pub fn phase_step(&mut self, run: &mut PhaseRun) -> Result<Option<Outcome>, AuditError> {
        match self.run(&mut run.goal)? {
            Outcome::Hook(h) => return Ok(Some(Outcome::Hook(h))),
            Outcome::Reached => {}
        }
        if !run.entered {
            run.entered = true;
            self.phase_entered(run)?;
            run.goal = Goal::PhaseReturn;
            return self.phase_step(run);
        }
        Ok(None)
    }

    fn phase_entered(&mut self, run: &PhaseRun) -> Result<(), AuditError> {
        let regs = self.read_regs()?;
        let before = Rc::new(self.walk()?);
        // Resynchronise the running total with the walk at every phase entry.
        self.used = before.used;
        let watermark = if self.method == PeakMethod::Watermark {
            let (free_addr, min_addr) = self
                .watermark_addrs()
                .ok_or_else(|| AuditError::Config("no watermark".into()))?;
            let mem = self.target.as_memory();
            let free = mem.read_u32(free_addr)?;
            let original_min = mem.read_u32(min_addr)?;
            if let Some(w) = self.target.memory_write() {
                w.write(min_addr, &free.to_le_bytes())?;
            }
            Some(WatermarkState {
                min_addr,
                original_min,
            })
        } else {
            None
        };
        if let Some(span_fn) = self.config.spans.get(&run.function).cloned() {
            let (addr, _) = self.function(&span_fn)?;
            self.add_entry(addr, BreakRole::Span { function: span_fn });
        }
        self.returns.push(ReturnWatch {
            addr: regs.lr & !1,
            sp: regs.sp,
            role: ReturnRole::Phase,
        });
        let call = self.calls(&run.function);
        self.progress.current = Some(format!("{}#{call}", run.function));
        if self.baseline.is_none() {
            self.baseline = Some(Rc::clone(&before));
        }
        self.phase = Some(OpenPhase {
            function: run.function.clone(),
            alias: run.alias.clone(),
            call,
            peak_used: before.used,
            before,
            peak_at: None,
            spans: Vec::new(),
            open_spans: Vec::new(),
            first_event: None,
            allocs: 0,
            frees: 0,
            watermark,
            seq_begin: self.seq,
        });
        Ok(())
    }

    /// Closes the phase after its return was reached.
    pub fn phase_finish(
        &mut self,
    ) -> Result<(PhaseRecord, Rc<HeapState>, Rc<HeapState>), AuditError> {
        let after = Rc::new(self.walk()?);
        let Some(p) = self.phase.take() else {
            return Err(AuditError::Config("no phase is running".into()));
        };
        if let Some(span_fn) = self.config.spans.get(&p.function).cloned() {
            if let Ok((addr, _)) = self.function(&span_fn) {
                self.remove_entry(addr, &BreakRole::Span { function: span_fn });
            }
        }
        self.returns.retain(|r| !matches!(r.role, ReturnRole::Span));
        self.sticky_span.clear();
        let mut peak_used = p.peak_used.max(after.used);
        let mut peak_at = p.peak_at.clone();
        if let Some(wm) = p.watermark {
            let observed = self.target.as_memory().read_u32(wm.min_addr)?;
            let wm_peak = after.heap_size.saturating_sub(u64::from(observed));
            if wm_peak > peak_used {
                peak_used = wm_peak;
                peak_at = None;
            }
            self.restore_watermark(wm, Some(observed))?;
        }
        let drift = if self.tracing {
            self.used as i64 - after.used as i64
        } else {
            0
        };
        self.used = after.used;
        let record = PhaseRecord {
            function: p.function.clone(),
            alias: p.alias.clone(),
            call: p.call,
            method: self.method,
            before: (&*p.before).into(),
            after: (&*after).into(),
            delta_used: after.used as i64 - p.before.used as i64,
            peak_used,
            peak_above_before: peak_used.saturating_sub(p.before.used),
            peak_at,
            spans: p.spans,
            allocs: p.allocs,
            frees: p.frees,
            events: p.first_event.map(|f| (f, self.seq.saturating_sub(1))),
            accounting_drift: drift,
            seq_begin: p.seq_begin,
            seq_end: self.seq,
        };
        if p.function == self.config.phase_function("release") {
            if self.first_release.is_none() {
                self.first_release = Some(Rc::clone(&after));
            }
            self.last_release = Some((format!("{}#{}", p.function, p.call), Rc::clone(&after)));
        }
        self.records.push(record.clone());
        self.progress.phases += 1;
        self.progress.current = None;
        Ok((record, p.before, after))
    }

    /// Heap size as last walked.
    pub fn heap_size(&self) -> u64 {
        self.heap_size
    }

    /// Names the spans of `function` by their second argument (`names[arg]`), for reports.
    pub fn set_labels(&mut self, function: &str, names: Vec<String>) {
        self.labels.insert(function.to_string(), names);
    }

    /// The span names scripts gave.
    pub fn labels(&self) -> &BTreeMap<String, Vec<String>> {
        &self.labels
    }

    /// The heap after the last release phase, block by block, leaked blocks marked with their
    /// allocation sites; `None` when no release phase ran. The baseline is the first release
    /// when there were several (blocks an application keeps after its first lifecycle are not
    /// a leak, a block more after every lifecycle is), else the first phase's entry.
    pub fn heap_map(&self) -> Option<HeapMap> {
        let (at, last) = self.last_release.as_ref()?;
        let baseline = match &self.first_release {
            Some(first) if !Rc::ptr_eq(first, last) => Some(first),
            _ => self.baseline.as_ref(),
        };
        Some(HeapMap::new(
            at.clone(),
            last,
            baseline.map(|b| &**b),
            |addr| self.live.get(&addr).map(|l| l.site.clone()),
        ))
    }
}

/// A phase being run (kept by the caller across hooks).
#[derive(Debug, Clone)]
pub struct PhaseRun {
    goal: Goal,
    function: String,
    alias: Option<String>,
    entered: bool,
}

fn goal_name(goal: &Goal, phase: Option<&OpenPhase>) -> String {
    match goal {
        Goal::Entry { function, .. } => format!("breakpoint at {function}"),
        Goal::PhaseReturn => format!(
            "return of {}",
            phase.map_or("the phase".to_string(), |p| p.function.clone())
        ),
    }
}
