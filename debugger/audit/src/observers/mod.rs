//! The observers: the components that react to the target's stops, each owning its state. They
//! do not call each other: the engine (`crate::debugger`) routes each stop to the component
//! whose breakpoint it is ([`crate::events::Role`]) and passes what one produces (an allocation
//! event, a closed span, a phase boundary) to the others.
//!
//! # Layout
//! - `lifecycle`: [`Lifecycle`]: `phases` ([`PhaseTracker`]: calls, the open phase, its peak,
//!   the records) and `cycles` ([`Cycles`]: how many, where the last ended, what a long run
//!   keeps).
//! - `spans`: [`Spans`]: the nested calls of the open phase and their peaks; `labels`: their
//!   names ([`SpanLabels`]).
//! - `trace`: [`AllocationTrace`]: allocations and releases with their sites, the live blocks.
//! - `watermark`: [`Watermark`]: the allocator's low-water mark reset and read per phase.
//! - `faults`: [`Faults`]: fault handlers' stops, and the park watch after a failure.
//! - `inject`: [`Injection`]: the allocation made to fail, and what failed.
//! - `models`: [`Models`]: which model each cycle ran, and what each model's cycles lost.
//!
//! Added at run time through [`crate::events::Observer`], when the firmware has what they
//! watch:
//! - `tasks`: [`TaskObserver`]: on an RTOS firmware, each event's task and tick count, each
//!   task's heap and stack margin, roles limited to a task or a caller.
//! - `asserts`: [`Asserts`]: the firmware's assert handlers, which end an audit at once.
//! - [`arena`]: [`arena::ArenaObserver`] on a TFLM firmware: its arenas watched while each
//!   interpreter is built.

pub mod arena;
pub mod asserts;
pub mod cycles;
pub mod faults;
pub mod inject;
pub mod labels;
pub mod lifecycle;
pub mod models;
pub mod phases;
pub mod spans;
pub mod tasks;
pub mod trace;
pub mod watermark;

pub use asserts::Asserts;
pub use cycles::{Cycles, Stopped};
pub use faults::Faults;
pub use inject::{AllocSite, FailChoice, Injected, Injection};
pub use labels::SpanLabels;
pub use lifecycle::Lifecycle;
pub use models::{ModelKey, ModelMemory, Models};
pub use phases::PhaseTracker;
pub use spans::Spans;
pub use tasks::TaskObserver;
pub use trace::{AllocationTrace, LiveAlloc};
pub use watermark::Watermark;
