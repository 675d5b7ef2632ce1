//! [`DiffError`]: why two reports could not be compared; [`BudgetError`]: why a `[diff]`
//! table was refused.

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

/// Why a `[diff]` table was refused; each names the key as the user wrote it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// The text is not TOML.
    #[error("{0}")]
    Toml(String),
    /// A limit is not a number.
    #[error("{key} must be a number, not {found}")]
    NotANumber {
        /// The key (`[diff] bytes`, `[diff.load_peak] percent`).
        key: String,
        /// The TOML type given instead.
        found: &'static str,
    },
    /// A limit is negative or not finite.
    #[error("{key} must be 0 or more, not {value}")]
    Negative {
        /// The key.
        key: String,
        /// The value given.
        value: f64,
    },
    /// A key of `[diff]` or of a figure's table that memlife does not know.
    #[error("unknown key `{key}` in {table}{hint}")]
    UnknownKey {
        /// The key.
        key: String,
        /// The table it is in (`[diff]`, `[diff.load_peak]`).
        table: String,
        /// `; did you mean `bytes`?`, or nothing.
        hint: String,
    },
    /// A figure's budget given as a value instead of a table.
    #[error("[diff] {figure} must be a table: [diff.{figure}] with `{unit}` and `percent`")]
    NotATable {
        /// The figure.
        figure: String,
        /// The key of its unit (`bytes`, `count`, `ratio`).
        unit: &'static str,
    },
    /// A figure's table gives a limit in another figure's unit.
    #[error("[diff.{figure}] {key}: {figure} is counted in {unit}: use `{unit}`")]
    WrongUnit {
        /// The figure.
        figure: String,
        /// The key given.
        key: String,
        /// The figure's unit.
        unit: &'static str,
    },
}
