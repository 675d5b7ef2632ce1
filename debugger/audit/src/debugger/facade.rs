//! [`Debugger`]: the facade an audit drives. It holds the target session and the observers,
//! one field each, and nothing else: every piece of state belongs to one of them. Its methods
//! are the API the scripts, the CLI, the server and the report use; the procedures that span
//! several components (a run, a phase, a cycle, the wait after a failure) are in the modules
//! beside this one.

use std::collections::BTreeMap;
use std::rc::Rc;

use memlife_core::Target;
use memlife_dwarf::{FunctionRange, Symbols};
use memlife_heap::{HeapState, HeapWalker, LinkState};

use super::extensions::Extensions;
use super::progress::{ProgressFn, Reporter};
use crate::config::{AuditConfig, EngineSettings, PeakMethod};
use crate::error::AuditError;
use crate::events::{AuditSession, Observer, ObserverId, Open, Role};
use crate::observers::arena::ArenaObserver;
use crate::observers::trace::Sites;
use crate::observers::{
    AllocationTrace, Asserts, Faults, Injection, Lifecycle, Models, Spans, TaskObserver, Watermark,
};
use crate::session::{Restart, Session, SessionOptions};

/// What the audit was asked to do: the settings and the peak method.
#[derive(Debug)]
pub struct Settings {
    /// `memlife.toml` and what the command line added.
    pub config: AuditConfig,
    /// How peaks are found.
    pub method: PeakMethod,
}

/// The debugger an audit drives.
pub struct Debugger {
    /// The target, its breakpoints and run control.
    pub(super) session: AuditSession,
    /// What the audit was asked to do.
    pub(super) settings: Settings,
    /// Progress, told after every stop.
    pub(super) reporter: Reporter,
    /// Phases and cycles.
    pub(super) lifecycle: Lifecycle,
    /// The open phase's spans and their names.
    pub(super) spans: Spans,
    /// Allocations and releases.
    pub(super) trace: AllocationTrace,
    /// The watermark method's reset and read-back.
    pub(super) watermark: Watermark,
    /// Fault handlers' stops and the park watch.
    pub(super) faults: Faults,
    /// The allocation made to fail.
    pub(super) injection: Injection,
    /// Which model each cycle ran.
    pub(super) models: Models,
    /// Observers added at run time.
    pub(super) extensions: Extensions,
}

impl std::fmt::Debug for Debugger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Debugger")
            .field("session", &self.session)
            .field("method", &self.settings.method)
            .field("events", &self.trace.events().len())
            .field("phases", &self.lifecycle.phases.records().len())
            .field("observers", &self.extensions)
            .finish()
    }
}

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

/// Linker symbols that hold the initial stack pointer, in order of preference.
const STACK_TOP_SYMBOLS: [&str; 5] = [
    "_estack",
    "__StackTop",
    "__stack",
    "_stack_top",
    "__initial_sp",
];

impl Debugger {
    /// Takes over a halted live target. Tracing breakpoints are set now when the method is trace.
    /// On failure the target is handed back with the error ([`Refused`]).
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
        let options = SessionOptions {
            // Host-side resume decodes Thumb.
            emulate: tuning.host_resume && symbols.machine() == memlife_dwarf::Machine::Arm,
            vector_catch: tuning.vector_catch,
            link,
        };
        let sites = Sites::new(skip, stack_top, config.trace.backtrace);
        let model_key = config.lifecycle.model.clone();
        let mut lifecycle = Lifecycle::default();
        lifecycle.cycles.set_keep(keep_cycles);
        let mut dbg = Debugger {
            session: Session::new(target, symbols, walker, timeout, options),
            settings: Settings { config, method },
            reporter: Reporter::default(),
            lifecycle,
            spans: Spans::default(),
            trace: AllocationTrace::new(sites),
            watermark: Watermark::default(),
            faults: Faults::default(),
            injection: Injection::default(),
            models: Models::new(model_key),
            extensions: Extensions::default(),
        };
        match dbg.prepare(options) {
            Ok(()) => Ok(dbg),
            Err(error) => Err(Refused {
                error,
                target: dbg.into_target(),
            }),
        }
    }

    fn prepare(&mut self, options: SessionOptions) -> Result<(), AuditError> {
        self.session.check_live()?;
        let watermark = self.settings.method == PeakMethod::Watermark;
        self.watermark = Watermark::new(watermark, &mut self.session)?;
        self.session.init_budget(options.vector_catch)?;
        let state = self.session.walk_first()?;
        self.trace.set_used(state.used);
        if self.settings.method == PeakMethod::Trace {
            self.set_tracing(true)?;
        }
        self.add_firmware_observers()
    }

    /// The observers this firmware calls for: the task observer on an RTOS firmware (or for a
    /// role limited to a caller), the assert handlers' breakpoints when it has any, and
    /// TensorFlow Lite Micro's builds when the ELF has a TFLM the arena observer follows.
    fn add_firmware_observers(&mut self) -> Result<(), AuditError> {
        let symbols = self.session.symbols_rc();
        let config = &self.settings.config;
        let tasks = TaskObserver::for_firmware(&symbols, config)?;
        let asserts = Asserts::for_firmware(&symbols, &config.halt_on);
        if let Some(tasks) = tasks {
            self.add_observer(Box::new(tasks))?;
        }
        if let Some(asserts) = asserts {
            self.add_observer(Box::new(asserts))?;
        }
        if let Some(arena) = ArenaObserver::for_elf(symbols) {
            self.add_observer(Box::new(arena))?;
        }
        Ok(())
    }

    /// Turns allocation tracing on or off (trace method only). Off, the target runs between
    /// phase and span boundaries without stopping in the allocator: much faster, but peaks come
    /// from boundary samples and new allocations get no site. On, the allocator's breakpoints
    /// are armed wherever `[trace] scope` allows (everywhere by default).
    pub fn set_tracing(&mut self, on: bool) -> Result<(), AuditError> {
        let in_scope = self.trace_in_scope();
        self.trace
            .set_on(&mut self.session, on, self.settings.method, in_scope)
    }

    /// Whether `[trace] scope` lets the trace be armed now, with the phase open now (if any).
    pub(super) fn trace_in_scope(&self) -> bool {
        let config = &self.settings.config;
        let open = self.lifecycle.phases.open_function();
        config.trace.scope.admits(open, |name, f| {
            name == f || config.phase_function(name) == f
        })
    }

    /// Adds an observer (see [`crate::events::Observer`]); it sets its breakpoints now.
    pub fn add_observer(&mut self, observer: Box<dyn Observer>) -> Result<ObserverId, AuditError> {
        let open = self.open_view();
        self.extensions.add(&mut self.session, observer, &open)
    }

    /// The added observer of type `T`, when there is one (the task observer on a FreeRTOS
    /// firmware, say).
    pub fn observer<T: Observer>(&self) -> Option<&T> {
        self.extensions.find::<T>()
    }

    /// The added observers' records for the report, by observer name.
    pub fn observer_reports(&self) -> Vec<(&'static str, serde_json::Value)> {
        self.extensions.reports()
    }

    /// What is running, for the added observers (empty when there are none).
    pub(super) fn open_view(&self) -> Open {
        if self.extensions.is_empty() {
            return Open::default();
        }
        let phases = &self.lifecycle.phases;
        Open {
            phase: phases.open_function().map(str::to_string),
            call: phases.open_call().map(|(call, _, _)| call),
            span: self.spans.innermost().map(|s| s.name()),
        }
    }

    /// Resumes from a breakpoint done by executing its instruction on the host.
    pub fn emulated(&self) -> u64 {
        self.session.emulated()
    }

    /// Resumes from a breakpoint that needed a single step on the target.
    pub fn stepped(&self) -> u64 {
        self.session.stepped()
    }

    /// Reads the firmware's tick counter for the end of its time (`run.firmware_time`): the
    /// target is halted at its last stop. A target that is gone leaves it unread.
    pub fn end_firmware_time(&mut self) {
        self.session.end_firmware_time();
    }

    /// Gives the target back (breakpoints removed).
    pub fn into_target(mut self) -> Box<dyn Target> {
        self.remove_all_breakpoints();
        self.session.into_target()
    }

    /// Removes every breakpoint memlife inserted; called on every exit path.
    pub fn remove_all_breakpoints(&mut self) {
        self.session.remove_all_breakpoints();
        // A phase interrupted by an error: put the low-water mark back.
        self.watermark.restore_on_exit(&mut self.session);
    }

    /// Called after every stop with the progress so far.
    pub fn set_observer(&mut self, f: ProgressFn) {
        self.reporter.set_callback(f);
    }

    /// The symbols.
    pub fn symbols(&self) -> &Symbols {
        self.session.symbols()
    }

    /// The symbols, shared (to read memory through the target while holding them).
    pub fn symbols_rc(&self) -> Rc<Symbols> {
        self.session.symbols_rc()
    }

    /// The configuration.
    pub fn config(&self) -> &AuditConfig {
        &self.settings.config
    }

    /// The peak method.
    pub fn method(&self) -> PeakMethod {
        self.settings.method
    }

    /// The allocator's name.
    pub fn allocator(&self) -> &'static str {
        self.session.walker().name()
    }

    /// The target, for memory reads.
    pub fn target(&mut self) -> &mut dyn Target {
        self.session.target()
    }

    /// Walks the heap now (the target must be halted).
    pub fn walk(&mut self) -> Result<HeapState, AuditError> {
        self.session.walk()
    }

    /// How walks read the target, with the link's model once measured (for the caller's next
    /// walks).
    pub fn link(&self) -> LinkState {
        self.session.link()
    }

    /// Heap size as first walked.
    pub fn heap_size(&self) -> u64 {
        self.session.heap_size()
    }

    /// Hands the engine a way to start the target again where a reset cannot (a QEMU that
    /// exited with its firmware): see [`crate::session::Restart`].
    pub fn set_restart(&mut self, restart: Box<dyn Restart>) {
        self.session.set_restart(restart);
    }

    /// Resets the target and halts it at the reset vector; a target that is gone (its
    /// firmware exited) is started again when [`Debugger::set_restart`] gave a way. Trace
    /// state starts over. A phase
    /// still open (its call failed: the firmware hung, faulted or exited inside it, and the
    /// script caught the error) is abandoned: after the reset it can never return.
    pub fn reset(&mut self) -> Result<(), AuditError> {
        if let Some(function) = self.lifecycle.phases.abandon() {
            tracing::warn!("reset: the unfinished call of {function} is abandoned");
        }
        self.spans.clear();
        self.watermark.abandon();
        self.session.breakpoints_mut().clear_returns();
        self.trace.on_reset();
        let exited = self.lifecycle.cycles.exited().is_some();
        self.session.reset(exited)?;
        self.lifecycle.cycles.on_reset();
        self.extensions.on_reset();
        self.models.break_sequence();
        let state = self.session.walk()?;
        self.trace.set_used(state.used);
        Ok(())
    }

    /// Sets a script hook on a function's entry.
    pub fn add_hook(&mut self, symbol: &str) -> Result<u64, AuditError> {
        let addr = self.function(symbol)?.entry;
        self.session.add_entry(
            addr,
            Role::Hook {
                symbol: symbol.to_string(),
            },
        );
        Ok(addr)
    }

    /// Where a function lies (its entry and size), or a clear error.
    pub fn function(&self, name: &str) -> Result<FunctionRange, AuditError> {
        self.session.symbols().function(name).ok_or_else(|| {
            // A misspelt role or function: the nearest of both.
            let roles = crate::config::ROLES
                .into_iter()
                .chain(self.settings.config.phases.keys().map(String::as_str));
            let hint = crate::config::nearest(name, self.function_names().chain(roles));
            AuditError::NoSuchFunction(name.to_string(), hint)
        })
    }

    /// The names of the ELF's functions.
    pub fn function_names(&self) -> impl Iterator<Item = &str> + Clone {
        let symbols = self.session.symbols();
        symbols
            .elf_symbols()
            .iter()
            .filter(|s| s.kind == memlife_dwarf::SymbolKind::Function)
            .map(|s| s.name.as_str())
            .chain(symbols.demangled_functions())
    }

    /// Names the spans of `function` by their second argument (`names[arg]`), for reports.
    pub fn set_labels(&mut self, function: &str, names: Vec<String>) {
        self.spans.labels_mut().set(function, names);
    }

    /// The span names scripts gave, and those `[labels]` gave as spans ran.
    pub fn labels(&self) -> &BTreeMap<String, Vec<String>> {
        self.spans.labels().all()
    }
}
