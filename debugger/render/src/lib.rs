//! Renders what an audit recorded ([`AuditReport`](memlife_report::AuditReport)) for people
//! and tools: one self-contained HTML page, a heap map as SVG, the run as a Chrome trace event
//! (Perfetto) JSON file, and the checks as JUnit XML; and two runs compared (`memlife diff
//! --report`). The report itself, its JSON and the figures each chart shows are
//! `memlife-report`'s (`memlife_report::views`); this crate draws them. One heap as text or JSON
//! is `memlife_heap::render`.
//!
//! Nothing here touches a target, so the CLI (`memlife audit --report DIR --trace FILE --junit
//! FILE`, `memlife heap --svg FILE`) and the GDB server (`monitor report DIR`) render the same
//! pages.
//!
//! ```no_run
//! # fn demo(report: &memlife_report::AuditReport) -> Result<(), memlife_render::ReportError> {
//! memlife_render::write_html_report(report, std::path::Path::new("out/report"))?;
//! memlife_render::write_trace(report, std::path::Path::new("out/run.trace.json"))?;
//! # Ok(()) }
//! ```
//!
//! The charts are drawn with plotters' SVG backend (text stays `<text>`, no fonts are read or
//! fetched); the heap map is a strip of rectangles drawn here, because each block needs a
//! `<title>` (its address, size and allocation site on hover), which plotters cannot attach.
//!
//! # Layout
//! - `charts`: every chart of both pages, built on one frame: the water-level curve (and the
//!   diff's overlay), the build stair chart, per-layer deltas (and the diff's paired bars), the
//!   leak trend.
//! - [`heapmap`]: the heap strip, drawn to scale, blocks coloured by component.
//! - [`peakbar`]: each phase peak as a stacked bar of its components.
//! - [`palette`]: a component's colour, by a keyword rule on its name.
//! - `html`: the page.
//! - `arena`: the page's TensorFlow Lite Micro sections (arena map, tail per operator, tensor
//!   lifetimes, activation curve), one per model.
//! - `trace`: the Perfetto / `chrome://tracing` JSON.
//! - [`diff`]: the page of `memlife diff --report`: two runs drawn together, with the same
//!   views and chart builders as the audit page.
//! - `junit`: the checks as JUnit XML.
//! - `escape`: escaping for HTML, SVG and XML text and attributes.
//! - `units`: byte figures as the pages print them ([`kib`], [`delta`]).
//! - `output`: the files written, each atomically ([`write_html_report`], [`write_trace`],
//!   [`write_atomic`]).
//! - `error`: [`ReportError`].

#![deny(missing_docs)]

mod arena;
mod charts;
pub mod diff;
mod error;
mod escape;
pub mod heapmap;
mod html;
mod junit;
mod output;
pub mod palette;
pub mod peakbar;
mod trace;
mod units;

pub use diff::write_diff_report;
pub use error::{ReportError, Result};
pub use heapmap::heap_map_svg;
pub use html::render_html;
pub use junit::{junit, write_junit};
pub use output::{write_atomic, write_html_report, write_trace};
pub use trace::trace_json;
pub use units::{delta, kib};
