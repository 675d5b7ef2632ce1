//! [`ReportError`]: what can go wrong while rendering or writing a report.

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
