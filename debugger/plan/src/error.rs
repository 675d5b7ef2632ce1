//! [`PlanError`]: why an audit plan cannot be made. Every one is the user's to fix (exit code 2),
//! and its message says what and where.

/// Why memlife.toml and the flags do not make a plan.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A settings file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A settings file says something memlife cannot use.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong (with line and column when the file's syntax is).
        message: String,
    },
    /// The flags and the file together leave something out, or contradict each other.
    #[error("{0}")]
    Usage(String),
    /// A name the settings give is not in the firmware (the message names the nearest one).
    #[error(transparent)]
    NotInFirmware(#[from] crate::names::NameCheckError),
}
