//! memlife's audit engine: it drives a live target through the firmware's lifecycle and lets a
//! Rhai script decide.
//!
//! A phase is a function: memlife breaks on its entry, snapshots the heap, breaks on the return
//! address (matched by stack pointer), snapshots again, and records the delta and the peak
//! inside, found by one of three methods ([`config::PeakMethod`]). Spans are the nested calls of
//! a phase (`op_init` in `graph_build`, `op_invoke` in `inference_run`). Allocation tracing puts
//! breakpoints on the allocator's entry points and records every event with its size and call
//! site, which gives the exact curve and the allocation site of leaked blocks.
//!
//! The engine is a target session, observers that react to its stops, and a facade over both:
//! the session runs the target to a stop and reads its registers; the run loop routes the stop
//! to the observer whose breakpoint it is; the observers talk through events (an allocation, a
//! phase or span boundary), never through each other's fields.
//!
//! ```no_run
//! use std::path::Path;
//! use std::rc::Rc;
//! use std::time::{Duration, Instant};
//! use memlife_audit::runner::{self, Audit, Subject};
//! use memlife_audit::{AuditConfig, EngineSettings, EngineTuning, PeakMethod};
//! use memlife_core::Target;
//! use memlife_heap::{LinkState, WalkerOptions};
//!
//! # fn audit(mut target: Box<dyn Target>) -> Result<(), Box<dyn std::error::Error>> {
//! // `target` is a live backend: memlife-rsp's GDB remote client, memlife-probe's probe.
//! let symbols = Rc::new(memlife_dwarf::Symbols::load(Path::new("fw.elf"))?);
//! let walker = memlife_heap::detect(&symbols, None, &WalkerOptions::default(), None)?;
//! let settings = EngineSettings {
//!     config: AuditConfig::default(),
//!     method: PeakMethod::default(),
//!     timeout: Duration::from_secs(30),
//!     keep_cycles: None,
//!     link: LinkState::default(),
//!     tuning: EngineTuning::default(),
//! };
//! let subject = Subject {
//!     elf: "fw.elf".into(),
//!     target: "qemu".into(),
//!     board: None,
//!     script: "leak.rhai".into(),
//! };
//! let context = runner::context(subject, Instant::now(), &settings);
//! let audited = runner::run(&mut target, Audit {
//!     symbols,
//!     walker,
//!     settings,
//!     source: &std::fs::read_to_string("leak.rhai")?,
//!     out_dir: Path::new("memlife-out"),
//!     context,
//!     printer: Rc::new(|line: &str| println!("{line}")),
//!     progress: None,
//!     restart: None,
//!     fail_on_skip: false,
//! })?;
//! audited.report.write_json(Path::new("memlife-out/audit.json"))?;
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//! - [`config`]: the engine's settings ([`EngineSettings`]), resolved before it runs (memlife-plan
//!   reads `memlife.toml` and the flags into them).
//! - [`runner`]: one audit start to end, as `memlife audit` and `monitor audit` both run it.
//! - [`session`]: the target session: the target, symbols, heap walker, breakpoints and their
//!   budget, host-side resume, run control, fault decoding. Knows nothing of phases or traces.
//! - [`events`]: the engine's vocabulary: what each breakpoint is for ([`events::Role`]), the
//!   events observers talk through, and [`events::Observer`], the extension point.
//! - [`observers`]: the components that react to stops: lifecycle (phases and cycles), spans
//!   and their labels, allocation trace, watermark, faults and parks, failure injection.
//! - [`debugger`]: [`Debugger`], the facade composing them: the run loop and dispatch of a
//!   stop, running a phase, observing cycles, the wait after an injected failure.
//! - [`composition`]: what each phase's peak is made of, by component or allocation site (the
//!   report's view, `memlife_report::views::composition`, run at each traced peak).
//! - [`deferred`]: late frees, blocks one cycle allocates and a later one frees (not leaks).
//! - [`history`]: what a long run keeps: the first and last cycles in full, the middle folded
//!   into exact totals.
//! - [`model`]: the records (phases, spans, events, checks): `memlife_report::model`, named
//!   here.
//! - [`script`]: the Rhai API, registered by area, and its sandbox.
//! - [`buffers`]: buffer lifetimes for the overlap check (a tensor table, traced allocations).
//! - [`report`]: what the engine and the script hand the audit report (`memlife-report`'s
//!   [`AuditReport`], written as JSON; `memlife-render` makes its other forms).
//! - `unwind`: cheap backtraces at allocation sites.
//! - `figures`: saturating arithmetic on figures read from the target.
//! - [`error`]: [`AuditError`], what ends an audit.

#![deny(missing_docs)]

pub mod buffers;
pub mod composition;
pub mod config;
pub mod debugger;
pub mod deferred;
pub mod error;
pub mod events;
mod figures;
pub mod history;
pub mod model;
pub mod observers;
pub mod report;
pub mod runner;
pub mod script;
pub mod session;
mod unwind;

pub use config::{AuditConfig, EngineSettings, EngineTuning, PeakMethod};
pub use debugger::Debugger;
pub use error::AuditError;
pub use report::AuditReport;
pub use script::{ScriptError, ScriptOutcome, run_script};
