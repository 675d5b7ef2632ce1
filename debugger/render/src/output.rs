//! The files this crate writes, each atomically (see [`memlife_core::output`]): a reader never
//! sees half a report.

use std::path::{Path, PathBuf};

use memlife_report::AuditReport;

use crate::{Result, render_html, trace_json};

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
