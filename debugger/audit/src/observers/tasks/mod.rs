//! The task observer: on an RTOS firmware, every traced allocation and release tagged with the
//! task that made it (`ISR n` in an exception handler, `main` before the scheduler starts) and
//! the kernel's tick count; each task's totals and the owner of every live block; the
//! firmware's clock and the running task's stack margin at phase and span boundaries; and the
//! roles limited to a task or a caller (`[phases] run = { function = "inference_run", task =
//! "Infer" }`): their entries count only when that task (or a call from that function) makes
//! them, and while such a phase is open only the allocations and releases of the task that
//! made the call count.
//!
//! It is an [`Observer`] added when the ELF has a FreeRTOS kernel (or when a role is limited to
//! a caller, which needs no kernel), and touches no other observer: the engine asks it whether
//! a stop counts and hands it each event to tag; the report and the scripts read it back
//! through [`crate::debugger::Debugger::observer`].
//!
//! Reads per stop: an allocation or release costs the xPSR and [`Kernel::now`] (two round
//! trips), read once even when the stop is both admitted and tagged; a boundary the same and,
//! with the stack fill, the running task's `pxStack` and its unused stack (a read that shrinks
//! with the margin).
//!
//! # Layout
//! - `kernel`: [`Kernel`], what is asked of the RTOS, answered by [`memlife_rtos::FreeRtos`].
//! - `book`: [`TaskBook`], each task's totals and the live blocks' owners; [`by_task`].
//! - `scopes`: [`Scopes`], the scoped roles' admission.
//! - `clock`: [`Clock`], tick counts at boundaries.
//! - `stacks`: [`StackWatch`], stack margins and where they were reached.

mod book;
mod clock;
mod kernel;
mod scopes;
mod stacks;

pub use book::{ByTask, Held, Owner, TaskBook, UNTRACED, by_task};
pub use clock::Clock;
pub use kernel::Kernel;
pub use scopes::Scopes;
pub use stacks::{Place, StackWatch};

use memlife_core::Register;
use memlife_core::cortex_m::GDB_XPSR;
use memlife_dwarf::Symbols;
use memlife_rtos::{FreeRtos, Now, RtosError};

use crate::config::AuditConfig;
use crate::error::AuditError;
use crate::events::{Admission, Boundary, Ctx, HeapEvent, Observer};
use crate::model::{StackMargin, TaskRecord, Ticks};

/// See the module doc.
pub struct TaskObserver {
    /// The kernel; `None` on a firmware without one (only caller scopes then).
    kernel: Option<Box<dyn Kernel>>,
    scopes: Scopes,
    book: TaskBook,
    clock: Clock,
    stacks: StackWatch,
    /// Who ran at this stop, read when the stop was admitted, for the event it makes.
    this_stop: Option<Now>,
}

impl std::fmt::Debug for TaskObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskObserver")
            .field("kernel", &self.kernel.is_some())
            .field("scopes", &self.scopes)
            .finish()
    }
}

impl TaskObserver {
    /// An observer over `kernel` (none: caller scopes only) for the roles `config` scopes.
    pub fn new(kernel: Option<Box<dyn Kernel>>, config: &AuditConfig) -> Self {
        TaskObserver {
            kernel,
            scopes: Scopes::of(config),
            book: TaskBook::default(),
            clock: Clock::default(),
            stacks: StackWatch::default(),
            this_stop: None,
        }
    }

    /// The observer this firmware needs: with its FreeRTOS kernel when it has one, without when
    /// only a caller scope asks for one, none otherwise. A role limited to a task on a firmware
    /// whose kernel memlife cannot read is an error.
    pub fn for_firmware(
        symbols: &Symbols,
        config: &AuditConfig,
    ) -> Result<Option<TaskObserver>, AuditError> {
        let scopes = Scopes::of(config);
        let kernel = match FreeRtos::from_symbols(symbols) {
            Ok(k) => Some(k),
            Err(RtosError::NotFound) => None,
            Err(e) if scopes.needs_tasks() => return Err(e.into()),
            Err(e) => {
                tracing::warn!("allocations are not tagged with their task: {e}");
                None
            }
        };
        if kernel.is_none() && scopes.needs_tasks() {
            let role = config
                .scopes
                .iter()
                .find(|(_, s)| s.task.is_some())
                .map_or("?", |(r, _)| r.as_str());
            return Err(AuditError::Config(format!(
                "[phases] {role}: a role limited to a task needs a FreeRTOS kernel in the firmware, and this ELF has none (no pxCurrentTCB)"
            )));
        }
        if kernel.is_none() && scopes.is_empty() {
            return Ok(None);
        }
        let kernel = kernel.map(|k| Box::new(k) as Box<dyn Kernel>);
        Ok(Some(TaskObserver::new(kernel, config)))
    }

    /// Whether a kernel tells who runs.
    pub fn has_kernel(&self) -> bool {
        self.kernel.is_some()
    }

    /// The kernel.
    pub fn kernel(&self) -> Option<&dyn Kernel> {
        self.kernel.as_deref()
    }

    /// Each task's totals and live blocks.
    pub fn book(&self) -> &TaskBook {
        &self.book
    }

    /// The scoped roles.
    pub fn scopes(&self) -> &Scopes {
        &self.scopes
    }

    /// Each task's record for the report: its totals, live blocks and least stack margin.
    pub fn records(&self) -> Vec<TaskRecord> {
        let word = self.kernel.as_ref().map_or(4, |k| k.stack_word());
        let mut margins = self.stacks.margins(word);
        let mut out = self.book.records();
        for r in &mut out {
            r.stack_margin = margins.remove(&r.task);
        }
        out.extend(margins.into_iter().map(|(task, m)| TaskRecord {
            task,
            stack_margin: Some(m),
            ..TaskRecord::default()
        }));
        out.sort_by(|a, b| a.task.cmp(&b.task));
        out
    }

    /// Each task's least stack margin, by task.
    pub fn stack_margins(&self) -> std::collections::BTreeMap<String, StackMargin> {
        let word = self.kernel.as_ref().map_or(4, |k| k.stack_word());
        self.stacks.margins(word)
    }

    /// The tick counts at a phase call's entry and return.
    pub fn phase_ticks(&self, function: &str, call: u64) -> Option<Ticks> {
        self.clock.phase(function, call)
    }

    /// The tick counts at a span call's entry and return.
    pub fn span_ticks(&self, function: &str, call: u64) -> Option<Ticks> {
        self.clock.span(function, call)
    }

    /// Who runs now and the tick count; `None` without a kernel.
    fn read_now(&self, ctx: &mut Ctx<'_>) -> Result<Option<Now>, AuditError> {
        let Some(kernel) = &self.kernel else {
            return Ok(None);
        };
        let xpsr = ctx.register(Register::Numbered(GDB_XPSR))?;
        let xpsr = u32::try_from(xpsr & 0xffff_ffff).unwrap_or(0);
        Ok(Some(kernel.now(ctx.memory(), xpsr)?))
    }

    /// The running task's stack margin, read and filed at `place`.
    fn watch_stack(
        &mut self,
        ctx: &mut Ctx<'_>,
        now: &Now,
        place: &Place,
    ) -> Result<(), AuditError> {
        let (Some(kernel), memlife_rtos::Running::Task { tcb, name }) =
            (&self.kernel, &now.running)
        else {
            return Ok(());
        };
        if !kernel.fills_stacks() {
            return Ok(());
        }
        let Some(low) = kernel.stack_low(ctx.memory(), *tcb)? else {
            return Ok(());
        };
        let sp = ctx.register(Register::StackPointer)?;
        let limit = self.stacks.read_limit(name, low, sp);
        if let Some(unused) = kernel.unused_stack(ctx.memory(), low, limit)? {
            self.stacks.observe(name, low, unused, place);
        }
        Ok(())
    }
}

/// The label of who runs, `""` without a kernel (caller scopes compare it with itself).
fn label(now: Option<&Now>) -> String {
    now.map(|n| n.running.label()).unwrap_or_default()
}

impl Observer for TaskObserver {
    fn name(&self) -> &'static str {
        "tasks"
    }

    fn admits(&mut self, ctx: &mut Ctx<'_>, what: Admission<'_>) -> Result<bool, AuditError> {
        match what {
            Admission::Entry { function } => {
                if self.scopes.of_function(function).is_none() {
                    return Ok(true);
                }
                let now = self.read_now(ctx)?;
                let callers = ctx
                    .regs()
                    .map(|r| scopes::callers(ctx.symbols(), r.lr))
                    .unwrap_or_default();
                Ok(self
                    .scopes
                    .admit_entry(function, &label(now.as_ref()), &callers))
            }
            Admission::HeapEvent => {
                // Read once per stop: the event this stop makes is tagged with it.
                self.this_stop = None;
                let open = ctx.open().phase.clone();
                if !self.scopes.scoped(open.as_deref()) {
                    return Ok(true);
                }
                let now = self.read_now(ctx)?;
                let admitted = self
                    .scopes
                    .admit_event(open.as_deref(), &label(now.as_ref()));
                self.this_stop = now;
                Ok(admitted)
            }
        }
    }

    fn on_heap_event(
        &mut self,
        ctx: &mut Ctx<'_>,
        event: &mut HeapEvent,
    ) -> Result<(), AuditError> {
        let now = match self.this_stop.take() {
            Some(now) => Some(now),
            None => self.read_now(ctx)?,
        };
        let Some(now) = now else {
            return Ok(());
        };
        let task = now.running.label();
        self.book.record(&task, event);
        event.tags.push(("task", task));
        if let Some(tick) = now.tick {
            event.tags.push(("tick", tick.to_string()));
        }
        Ok(())
    }

    fn on_boundary(
        &mut self,
        ctx: &mut Ctx<'_>,
        boundary: &Boundary<'_>,
    ) -> Result<(), AuditError> {
        self.this_stop = None;
        let Some(now) = self.read_now(ctx)? else {
            return Ok(());
        };
        let open = ctx.open().clone();
        let phase = match (&open.phase, open.call) {
            (Some(f), Some(c)) => Some(format!("{f}#{c}")),
            _ => None,
        };
        match boundary {
            Boundary::PhaseEntered { function, call, .. } => {
                self.clock.phase_entered(now.tick);
                let place = Place {
                    phase: Some(format!("{function}#{call}")),
                    ..Place::default()
                };
                self.watch_stack(ctx, &now, &place)?;
            }
            Boundary::PhaseReturned(rec) => {
                self.clock.phase_returned(&rec.function, rec.call, now.tick);
                let place = Place {
                    phase: Some(rec.name()),
                    ..Place::default()
                };
                self.watch_stack(ctx, &now, &place)?;
            }
            Boundary::SpanOpened { .. } => self.clock.span_opened(now.tick),
            Boundary::SpanClosed(rec) => {
                self.clock.span_closed(&rec.function, rec.call, now.tick);
                let place = Place {
                    phase,
                    span: Some(format!("{}#{}", rec.function, rec.call)),
                    arg: Some(rec.arg),
                    label: rec.label.clone(),
                };
                self.watch_stack(ctx, &now, &place)?;
            }
        }
        Ok(())
    }

    fn on_reset(&mut self) {
        self.book.forget_live();
        self.clock.on_reset();
        self.stacks.on_reset();
        self.this_stop = None;
    }
}
