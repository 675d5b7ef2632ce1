//! Renders what an audit recorded ([`AuditReport`]) for people and tools: one self-contained
//! HTML page, a heap map as SVG, the run as a Chrome trace event (Perfetto) JSON file, and the
//! checks as JUnit XML; and two runs compared (`memlife diff --report`). The report itself, its
//! JSON and the figures each chart shows are `memlife-report`'s (`memlife_report::views`);
//! this crate draws them. One heap as text or JSON is `memlife_heap::render`.
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

#![warn(missing_docs)]

mod arena;
mod charts;
pub mod diff;
mod escape;
pub mod heapmap;
mod html;
mod junit;
pub mod palette;
pub mod peakbar;
mod trace;

use std::path::{Path, PathBuf};

use memlife_report::AuditReport;

pub use diff::write_diff_report;
pub use heapmap::heap_map_svg;
pub use html::render_html;
pub use junit::{junit, write_junit};
pub use trace::trace_json;

/// What can go wrong while rendering or writing a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// A chart could not be drawn.
    #[error("drawing the {chart} chart: {message}")]
    Chart {
        /// Which chart.
        chart: &'static str,
        /// What plotters said.
        message: String,
    },
    /// A file could not be written.
    #[error(transparent)]
    Write(#[from] memlife_core::output::WriteError),
    /// JSON could not be serialised.
    #[error("serialising the trace: {0}")]
    Json(#[from] serde_json::Error),
}

/// The crate's result.
pub type Result<T> = std::result::Result<T, ReportError>;

/// Writes `dir/index.html` (atomically) and returns its path.
pub fn write_html_report(report: &AuditReport, dir: &Path) -> Result<PathBuf> {
    let page = render_html(report)?;
    let path = dir.join("index.html");
    write_atomic(&path, page.as_bytes())?;
    Ok(path)
}

/// Writes the Perfetto JSON of the run to `path` (atomically).
pub fn write_trace(report: &AuditReport, path: &Path) -> Result<()> {
    let json = serde_json::to_vec(&trace_json(report))?;
    write_atomic(path, &json)
}

/// Writes `bytes` to `path` atomically (see [`memlife_core::output`]): a reader never sees half
/// a report.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(memlife_core::output::write_atomic(path, bytes)?)
}

/// Bytes as KiB with one decimal (`10.5 KiB`).
pub fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

/// A signed byte delta as `+9.3 KiB` / `-368 B`: small deltas stay in bytes, where a header's
/// worth matters.
pub fn delta(bytes: i64) -> String {
    if bytes.unsigned_abs() < 1024 {
        format!("{bytes:+} B")
    } else {
        format!("{:+.1} KiB", bytes as f64 / 1024.0)
    }
}
