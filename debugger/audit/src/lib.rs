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
//! # Layout
//! - [`config`]: the engine's settings ([`EngineSettings`]), resolved before it runs (memlife-plan
//!   reads `memlife.toml` and the flags into them).
//! - [`runner`]: one audit start to end, as `memlife audit` and `monitor audit` both run it.
//! - [`debugger`]: [`Debugger`], the run loop, phases, spans and tracing.
//! - [`composition`]: what each phase's peak is made of, by component or allocation site (the
//!   report's view, `memlife_report::views::composition`, run at each traced peak).
//! - [`deferred`]: late frees, blocks one cycle allocates and a later one frees (not leaks).
//! - [`history`]: what a long run keeps: the first and last cycles in full, the middle folded
//!   into exact totals.
//! - [`model`]: the records (phases, spans, events, checks): `memlife_report::model`, named
//!   here.
//! - [`script`]: the Rhai API and its sandbox.
//! - `values`: heaps, phase records, typed variables, leak lists and diffs as script values.
//! - [`buffers`]: buffer lifetimes for the overlap check (a tensor table, traced allocations).
//! - [`labels`]: span labels from the firmware's strings.
//! - [`report`]: what the engine and the script hand the audit report (`memlife-report`'s
//!   [`AuditReport`], written as JSON; `memlife-render` makes its other forms).
//! - `unwind`: cheap backtraces at allocation sites.
//! - [`error`]: [`AuditError`], what ends an audit.

pub mod buffers;
pub mod composition;
pub mod config;
pub mod debugger;
pub mod deferred;
pub mod error;
pub mod history;
pub mod labels;
pub mod model;
pub mod report;
pub mod runner;
pub mod script;
mod unwind;
mod values;

pub use config::{AuditConfig, EngineSettings, EngineTuning, PeakMethod};
pub use debugger::Debugger;
pub use error::AuditError;
pub use report::AuditReport;
pub use script::{ScriptError, ScriptOutcome, run_script};
