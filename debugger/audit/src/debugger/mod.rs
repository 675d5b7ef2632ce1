//! The debugger an audit drives: breakpoints, phases, spans and allocation tracing over one live
//! target.
//!
//! Everything that stops the target goes through [`Debugger::run`] (`run`), which resumes,
//! waits, reads the registers once, and dispatches on the pc:
//!
//! - the allocator's traced entries (the walker's [`memlife_heap::EntryPoint`]s) when tracing:
//!   the block is read at the allocator's return (or at the caller's return address, matched by
//!   stack pointer), its size from its header, the caller from a backtrace;
//! - span entries (`op_init`, `op_invoke`) and their returns;
//! - the return of the phase being run, matched by stack pointer so recursion and re-entry do
//!   not confuse it;
//! - entries the caller waits for (`run_to`) and script hooks (`on_break`);
//! - the fault handlers' entries (`HardFault_Handler`, ...), by breakpoint or by vector catch:
//!   a fault ends the run at once.
//!
//! # Layout
//! - `breakpoints`: what each breakpoint is for, the returns awaited, what is inserted.
//! - `budget`: which breakpoints are armed on a target with few (an FPB's six: allocations read
//!   at their caller's return, only the innermost awaited returns), fault handlers caught by
//!   vector catch instead, and the plan's count checked before a run.
//! - `resume`: leaving a breakpoint by executing its instruction on the host.
//! - `run`: the run loop, its goals and the dispatch of a stop.
//! - `fault`: a stop at a fault handler, reported with the fault status registers and the
//!   call chain from the exception frame.
//! - `alloc_trace`: allocation tracing (events, live blocks, sites).
//! - `fail_alloc`: allocation-failure injection (a chosen malloc returns NULL), the phase's
//!   return value read through DWARF, a phase's allocation sites.
//! - `after_failure`: the firmware run on through its handling of that failure, to the next
//!   cycle, the release, an exit, a hang or a fault.
//! - `park`: a firmware parked in a loop, told from one still working, while waiting.
//! - `phases`: phase tracking (calls, the open phase, spans, peaks, records), pure.
//! - `phase_run`: the script-facing "run one phase" API and the watermark method.
//! - `cycles`: the lifecycle observed: every role's calls in the firmware's order, by cycle.
//!
//! The engine's unit tests (`tests`) drive it over a fake target that replays a script of
//! calls and returns.

mod after_failure;
mod alloc_trace;
mod breakpoints;
mod budget;
mod cycles;
mod fail_alloc;
mod fault;
mod park;
mod phase_run;
mod phases;
mod resume;
mod run;

#[cfg(test)]
pub(crate) mod tests;

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use memlife_core::Target;
use memlife_dwarf::Symbols;
use memlife_heap::{HeapState, HeapWalker, LinkState, LowWaterMark};

use crate::config::{AuditConfig, EngineSettings, PeakMethod};
use crate::error::AuditError;
use crate::model::{HeapMap, PhaseRecord, TraceEvent};
use alloc_trace::AllocationTrace;
use breakpoints::{BreakRole, BreakpointSet};
use phases::PhaseTracker;
use resume::HostResume;

pub use after_failure::{FailureEnd, FailureRun, FailureWait};
pub use alloc_trace::LiveAlloc;
pub use budget::BreakpointUse;
pub use cycles::{Cycle, CycleRun, PhaseCall};
pub use fail_alloc::{AllocSite, FailChoice, Injected};
pub use phase_run::PhaseRun;
pub use run::{Goal, Observer, Outcome, Progress};

/// The debugger an audit drives.
pub struct Debugger {
    target: Box<dyn Target>,
    symbols: Rc<Symbols>,
    walker: Box<dyn HeapWalker>,
    config: AuditConfig,
    method: PeakMethod,
    timeout: Duration,
    /// How walks read the target, and the link's model once measured.
    link: LinkState,
    bps: BreakpointSet,
    resume: HostResume,
    trace: AllocationTrace,
    phases: PhaseTracker,
    progress: Progress,
    observer: Option<Observer>,
    heap_size: u64,
    /// Memory read at the current stop (stack window, block header), reused until resume.
    stop_cache: Vec<(u64, Vec<u8>)>,
    /// Names for span arguments, by span function (`op_init` → operator names), from scripts.
    labels: BTreeMap<String, Vec<String>>,
    /// Cycles observed so far.
    cycles_done: u64,
    /// Where the last cycle left the target, while it is still there.
    cycle_start: Option<cycles::CycleStart>,
    /// Allocation failures asked for and made (`fail_alloc`).
    fail: fail_alloc::FailState,
    /// The program's exit status once it exited while cycles were observed.
    exited: Option<i32>,
    /// Failures whose handling `after_failure` has seen to its end.
    fail_waited: usize,
    /// Runs watch for a parked firmware (a loop it never leaves) instead of waiting for the
    /// whole timeout: set while the handling of a failed allocation is awaited.
    park_watch: bool,
    /// The park watch turns on as soon as an allocation is made to fail (`after_failure`).
    park_on_failure: bool,
    /// Which cycles are kept in full, and what the folded ones said.
    history: crate::history::History,
}

impl std::fmt::Debug for Debugger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Debugger")
            .field("target", &self.target.describe())
            .field("method", &self.method)
            .field("events", &self.trace.events.len())
            .field("phases", &self.phases.records().len())
            .finish()
    }
}

/// Linker symbols that hold the initial stack pointer, in order of preference.
const STACK_TOP_SYMBOLS: [&str; 5] = [
    "_estack",
    "__StackTop",
    "__stack",
    "_stack_top",
    "__initial_sp",
];

/// The engine declined a target ([`Debugger::new`]): why, and the target, handed back so the
/// caller can still leave it as the user asked.
pub struct Refused {
    /// Why.
    pub error: AuditError,
    /// The target, breakpoints removed.
    pub target: Box<dyn Target>,
}

impl std::fmt::Debug for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Refused")
            .field("error", &self.error)
            .field("target", &self.target.describe())
            .finish()
    }
}

impl Debugger {
    /// Takes over a halted live target. Tracing breakpoints are set now when the method is trace.
    pub fn new(
        target: Box<dyn Target>,
        symbols: Rc<Symbols>,
        walker: Box<dyn HeapWalker>,
        settings: EngineSettings,
    ) -> Result<Debugger, Refused> {
        let EngineSettings {
            config,
            method,
            timeout,
            keep_cycles,
            link,
            tuning,
        } = settings;
        let mut skip: Vec<String> = config.trace.skip.clone();
        skip.extend(walker.entry_points().iter().map(|e| e.function.to_string()));
        let stack_top = STACK_TOP_SYMBOLS
            .iter()
            .find_map(|n| symbols.elf_symbol(n).map(|s| s.address));
        // Host-side resume decodes Thumb.
        let emulate = tuning.host_resume && symbols.machine() == memlife_dwarf::Machine::Arm;
        let mut dbg = Debugger {
            target,
            symbols,
            walker,
            config,
            method,
            timeout,
            link,
            bps: BreakpointSet::default(),
            resume: HostResume::new(emulate),
            trace: AllocationTrace::new(skip, stack_top),
            phases: PhaseTracker::default(),
            progress: Progress::default(),
            observer: None,
            heap_size: 0,
            stop_cache: Vec::new(),
            labels: BTreeMap::new(),
            fail: fail_alloc::FailState::default(),
            cycles_done: 0,
            cycle_start: None,
            exited: None,
            fail_waited: 0,
            park_watch: false,
            park_on_failure: false,
            history: crate::history::History::new(keep_cycles),
        };
        match dbg.prepare(tuning.vector_catch) {
            Ok(()) => Ok(dbg),
            Err(error) => Err(Refused {
                error,
                target: dbg.into_target(),
            }),
        }
    }

    fn prepare(&mut self, vector_catch: bool) -> Result<(), AuditError> {
        if self.target.control().is_none() || self.target.breakpoints().is_none() {
            return Err(AuditError::NeedsLiveTarget(self.target.describe()));
        }
        if self.method == PeakMethod::Watermark {
            if self.watermark_addrs().is_none() {
                let why = match self.walker.low_water_mark() {
                    LowWaterMark::PerHeap { counter } => format!(
                        "keeps one per heap ({counter}), and their minima need not coincide"
                    ),
                    _ => "keeps none".to_string(),
                };
                return Err(AuditError::Config(format!(
                    "the watermark method needs the allocator's low-water mark; {} {why} (use trace or sample)",
                    self.walker.name()
                )));
            }
            if self.target.memory_write().is_none() {
                return Err(AuditError::Config(
                    "the watermark method writes target RAM; this target is read-only".into(),
                ));
            }
        }
        self.init_budget(vector_catch)?;
        let state = self.walk()?;
        self.trace.used = state.used;
        self.heap_size = state.heap_size;
        if self.method == PeakMethod::Trace {
            self.set_tracing(true)?;
        }
        Ok(())
    }

    /// Resumes from a breakpoint done by executing its instruction on the host.
    pub fn emulated(&self) -> u64 {
        self.resume.emulated
    }

    /// Resumes from a breakpoint that needed a single step on the target.
    pub fn stepped(&self) -> u64 {
        self.resume.stepped
    }

    /// Gives the target back (breakpoints removed).
    pub fn into_target(mut self) -> Box<dyn Target> {
        self.remove_all_breakpoints();
        self.target
    }

    /// Removes every breakpoint memlife inserted; called on every exit path.
    pub fn remove_all_breakpoints(&mut self) {
        if let Some(bps) = self.target.breakpoints() {
            self.bps.remove_all(bps);
        }
        self.release_budget();
        if let Some(wm) = self.phases.open_watermark() {
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
        self.phases.records()
    }

    /// Trace events kept: all of them, but for those of folded cycles (see [`Self::folded`]).
    pub fn events(&self) -> &[TraceEvent] {
        &self.trace.events
    }

    /// The cycles folded out of the middle of the run, once any were.
    pub fn folded(&self) -> Option<&crate::history::Folded> {
        self.history.folded()
    }

    /// The folded cycles as the report gives them (with the blocks live at the fold's end).
    pub fn folded_report(&self) -> Option<crate::history::Folded> {
        self.history.folded_report()
    }

    /// Totals over the whole run: the kept phases and events, and the folded ones.
    pub fn totals(&self) -> crate::history::Totals {
        let kept = crate::history::Totals::of(&self.trace.events, self.phases.records());
        match self.history.folded() {
            Some(f) => kept.plus(&f.totals),
            None => kept,
        }
    }

    /// The late frees of the run (blocks one cycle allocated and a later one freed): the first
    /// [`crate::deferred::MAX_LISTED`], and how many more there were.
    pub fn deferred(&self) -> (Vec<crate::deferred::DeferredBlock>, u64) {
        self.history
            .deferred(&self.trace.events, self.phases.records())
    }

    /// Cycles observed to their end.
    pub fn cycles_done(&self) -> u64 {
        self.cycles_done
    }

    /// Blocks the trace saw allocated and not freed, by block address.
    pub fn live(&self) -> &BTreeMap<u64, LiveAlloc> {
        &self.trace.live
    }

    /// Entries of `function` seen so far.
    pub fn calls(&self, function: &str) -> u64 {
        self.phases.calls(function)
    }

    /// Stops handled so far.
    pub fn progress(&self) -> &Progress {
        &self.progress
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

    /// Resets the target and halts it at the reset vector. Trace state starts over. A phase
    /// still open (its call failed: the firmware hung, faulted or exited inside it, and the
    /// script caught the error) is abandoned: after the reset it can never return.
    pub fn reset(&mut self) -> Result<(), AuditError> {
        if let Some(function) = self.phases.abandon() {
            tracing::warn!("reset: the unfinished call of {function} is abandoned");
        }
        self.bps.clear_returns();
        self.trace.forget_live();
        self.cycle_start = None;
        if let Some(c) = self.target.control() {
            c.reset(true)?;
        }
        let state = self.walk()?;
        self.trace.used = state.used;
        Ok(())
    }

    /// Sets a script hook on a function's entry.
    pub fn add_hook(&mut self, symbol: &str) -> Result<u64, AuditError> {
        let (addr, _) = self.function(symbol)?;
        self.bps.add_entry(
            addr,
            BreakRole::Hook {
                symbol: symbol.to_string(),
            },
        );
        Ok(addr)
    }

    /// The entry address of a function, or a clear error.
    pub fn function(&self, name: &str) -> Result<(u64, u64), AuditError> {
        self.symbols.function(name).ok_or_else(|| {
            // A misspelt role or function: the nearest of both.
            let roles = crate::config::ROLES
                .into_iter()
                .chain(self.config.phases.keys().map(String::as_str));
            let hint = crate::config::nearest(name, self.function_names().chain(roles));
            AuditError::NoSuchFunction(name.to_string(), hint)
        })
    }

    /// The names of the ELF's functions.
    pub fn function_names(&self) -> impl Iterator<Item = &str> + Clone {
        self.symbols
            .elf_symbols()
            .iter()
            .filter(|s| s.kind == memlife_dwarf::SymbolKind::Function)
            .map(|s| s.name.as_str())
            .chain(self.symbols.demangled_functions())
    }

    /// Heap size as last walked.
    pub fn heap_size(&self) -> u64 {
        self.heap_size
    }

    /// Names the spans of `function` by their second argument (`names[arg]`), for reports.
    pub fn set_labels(&mut self, function: &str, names: Vec<String>) {
        self.labels.insert(function.to_string(), names);
    }

    /// The span names scripts gave, and those `[labels]` gave as spans ran.
    pub fn labels(&self) -> &BTreeMap<String, Vec<String>> {
        &self.labels
    }

    pub(crate) fn labels_mut(&mut self) -> &mut BTreeMap<String, Vec<String>> {
        &mut self.labels
    }

    /// The heap after the last release, block by block, leaked blocks marked with their
    /// allocation sites; `None` when no release phase ran (see `phases`).
    pub fn heap_map(&self) -> Option<HeapMap> {
        self.phases
            .heap_map(|addr| self.trace.live.get(&addr).map(|l| l.site.clone()))
    }
}
