//! [`DiffError`]: why two reports could not be compared.

/// Why two reports could not be compared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiffError {
    /// A file is not an audit JSON report.
    #[error("{which}: {reason}")]
    NotAReport {
        /// Which file.
        which: String,
        /// Why.
        reason: String,
    },
    /// A report recorded no phase (the audit stopped before the lifecycle ran).
    #[error("{which}: the audit recorded no phase, nothing to compare ({reason})")]
    NoPhases {
        /// Which file.
        which: String,
        /// The audit's error, or what is missing.
        reason: String,
    },
    /// The two reports cannot be aligned.
    #[error("cannot compare: {0}")]
    Unrelated(String),
}
