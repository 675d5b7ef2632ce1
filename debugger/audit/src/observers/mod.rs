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
//! - [`arena`]: [`arena::ArenaObserver`], added at run time on a TFLM firmware: its arenas
//!   watched while each interpreter is built.

pub mod arena;
pub mod cycles;
pub mod faults;
pub mod inject;
pub mod labels;
pub mod lifecycle;
pub mod phases;
pub mod spans;
pub mod trace;
pub mod watermark;

pub use cycles::Cycles;
pub use faults::Faults;
pub use inject::{AllocSite, FailChoice, Injected, Injection};
pub use labels::SpanLabels;
pub use lifecycle::Lifecycle;
pub use phases::PhaseTracker;
pub use spans::Spans;
pub use trace::{AllocationTrace, LiveAlloc};
pub use watermark::Watermark;
