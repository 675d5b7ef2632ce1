//! The engine an audit drives: [`Debugger`], a facade over the target session
//! ([`crate::session`]) and the observers ([`crate::observers`]), and the procedures that span
//! them.
//!
//! Everything that stops the target goes through [`Debugger::run`], which has the session run
//! the target to its next stop and read the registers once, then dispatches the stop: the
//! awaited returns it completes first, then the roles of the entry breakpoint at the pc, each
//! routed to the component that owns it ([`crate::events::Role`]):
//!
//! - the allocator's traced entries and return instructions to the allocation trace (and to
//!   the failure injection first, at a malloc's entry); each allocation or release then passes
//!   through the spans, the open phase and the added observers before the trace keeps it;
//! - span entries (`op_init`, `op_invoke`) and their returns to the spans;
//! - the return of the phase being run, matched by stack pointer so recursion and re-entry do
//!   not confuse it, to the lifecycle (and the injected failure's return value);
//! - entries the caller waits for (`run_to`), lifecycle roles and script hooks (`on_break`) to
//!   the run's goal;
//! - the fault handlers' entries (`HardFault_Handler`, ...), by breakpoint or by vector catch,
//!   to the faults observer: a fault ends the run at once;
//! - an added observer's own breakpoints to that observer.
//!
//! # Layout
//! - `facade`: [`Debugger`] (one field per component) and its [`Settings`]; `views`: what it
//!   recorded, as the report and scripts read it.
//! - `run`: the run loop and the dispatch of a stop; `goal`: [`Goal`], [`Outcome`].
//! - `heap_stops`: allocator stops, the failure made, the path of an allocation event.
//! - `span_stops`: span entries and returns.
//! - `phase_run`: running one phase ([`PhaseRun`]); `cycle_run`: observing cycles
//!   ([`CycleRun`], [`Cycle`]); `cycle_watch`: the bound on a cycle that never completes;
//!   `cycle_models`: keying cycles by model;
//!   `failure_run`: the firmware run through an injected failure
//!   ([`FailureWait`], [`FailureRun`]); `fail_alloc`: the failure asked for.
//! - `plan`: the breakpoints a cycle needs, checked against the target's before the run.
//! - `trace_plan`: what the audit traces (allocations, requested sizes), decided from what the
//!   script and the outputs read.
//! - `extensions`: the observers added at run time; `tasks`: what the task observer knows, as
//!   scripts read it.
//! - `arena_run`: a TFLM firmware run until each model was built and run once ([`ArenaEnd`]).
//! - `progress`: [`Progress`] for the progress bar.
//!
//! The engine's unit tests (`tests`) drive it over a fake target that replays a script of
//! calls and returns.

mod arena_run;
mod cycle_models;
mod cycle_run;
mod cycle_watch;
mod extensions;
mod facade;
mod fail_alloc;
mod failure_run;
mod goal;
mod heap_stops;
mod phase_run;
mod plan;
mod progress;
mod run;
mod span_stops;
mod tasks;
mod trace_plan;
mod views;

#[cfg(test)]
pub(crate) mod tests;

pub use crate::observers::{AllocSite, FailChoice, Injected, LiveAlloc, Stopped};
pub use crate::session::BreakpointUse;
pub use arena_run::ArenaEnd;
pub use cycle_run::{Cycle, CycleRun, PhaseCall};
pub use facade::{Debugger, Refused, Settings};
pub use failure_run::{FailureEnd, FailureRun, FailureWait};
pub use goal::{Goal, Outcome};
pub use phase_run::PhaseRun;
pub use progress::{Progress, ProgressFn};
