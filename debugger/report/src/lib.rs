//! memlife's audit report: one model of what an audit recorded, written by the engine
//! (`memlife-audit`) and read by everything after it: `memlife diff`, the renderers
//! (`memlife-render`) and `memlife audit --baseline`. The JSON report is these structures
//! serialised; reading one back gives the same structures (no second copy of the types).
//!
//! ```no_run
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use memlife_report::{AuditReport, views::{SpanNames, Views}};
//! let report = AuditReport::from_slice(&std::fs::read("audit.json")?)?;
//! let views = Views::of(&report, SpanNames::Readable);
//! if let Some(stairs) = &views.stairs {
//!     println!("largest build step: {}", stairs.steps[stairs.largest].name);
//! }
//! # Ok(()) }
//! ```
//!
//! # Layout
//! - [`model`]: the records (phases, spans, events, sites, checks, heap summaries and map,
//!   folded cycles, late frees, run facts), serialisable both ways.
//! - [`report`]: [`AuditReport`], put together once at the end of a run, written as JSON.
//! - [`read`]: a report read back from JSON, defensively.
//! - [`views`]: what the pages draw, derived from a report once: composition, the timeline and
//!   water level, the peak, the build stairs, the per-layer bars, the leak trend.

#![deny(missing_docs)]

pub mod model;
pub mod read;
pub mod report;
pub mod views;

pub use model::{BreakpointUse, PeakMethod, ScriptError};
pub use read::ReadError;
pub use report::{AuditReport, EngineRecord, RunContext, ScriptRecord, now_rfc3339};
