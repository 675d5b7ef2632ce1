//! The records an audit produces, each serialisable both ways: the engine writes them, the
//! JSON report is these structures, and `memlife diff`, the renderers and `--baseline` read
//! them back.
//!
//! Read back, a report from an older or newer memlife still reads: fields it does not know are
//! ignored, fields it lacks take their defaults (0, empty, absent). The few fields a record
//! cannot be without are required: an event's `kind` and a check's `verdict`.
//!
//! - [`trace`]: allocation sites and trace events.
//! - [`heap`]: heap figures at phase boundaries, the heap map after release.
//! - [`phase`]: phase and span records, where each peak was and what it held.
//! - [`checks`]: check results, their summaries by name, the script's error.
//! - [`folded`]: what a long run keeps of its folded cycles.
//! - [`deferred`]: late frees.
//! - [`models`]: cycles by model, where the firmware alternates between models.
//! - [`run`]: facts about the run, breakpoint use, what was traced, injected allocation failures.
//! - [`firmware_time`]: what the audit's halts cost the firmware's own time.
//! - [`tasks`]: an RTOS firmware's tasks: their allocations and stack margins.
//! - [`arena`]: TensorFlow Lite Micro's arenas observed while they were built.

pub mod arena;
pub mod checks;
pub mod deferred;
pub mod firmware_time;
pub mod folded;
pub mod heap;
pub mod models;
pub mod phase;
pub mod run;
pub mod tasks;
pub mod trace;

pub use arena::{
    ArenaBuild, ArenaFigures, ArenaRecord, ArenaStep, BuildStatus, CategoryTotal, ModelArena,
    OperatorTotal, TempPeak,
};
pub use checks::{CheckResult, CheckSummary, ScriptError, Verdict, summarize};
pub use deferred::{DeferredBlock, MAX_LISTED};
pub use firmware_time::{FirmwareTime, TickCount};
pub use folded::{CycleBucket, DEFAULT_KEEP_CYCLES, Folded, FunctionTotals, MAX_SERIES, Totals};
pub use heap::{HeapMap, HeapSummary, MapBlock};
pub use models::ModelCycles;
pub use phase::{Damage, Part, PeakMethod, PeakSite, PhaseRecord, SpanRecord, Ticks};
pub use run::{BreakpointUse, InjectedFailure, RunFacts, TraceFacts};
pub use tasks::{StackMargin, TaskRecord};
pub use trace::{EventKind, Site, TraceEvent};
