//! Errors that stop a walk (corruption is not one of them: see [`crate::Anomaly`]).

use memlife_core::TargetError;

/// Why a walker could not be built or could not read memory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HeapError {
    /// No supported allocator was found in the ELF.
    #[error("no supported heap allocator found in the ELF (looked for: {looked_for})")]
    NotFound {
        /// The symbol sets that were looked for.
        looked_for: String,
    },
    /// The chosen allocator needs a symbol the ELF lacks.
    #[error("allocator {allocator}: symbol `{symbol}` not found in the ELF{hint}")]
    MissingSymbol {
        /// Allocator name.
        allocator: &'static str,
        /// The missing symbol.
        symbol: String,
        /// What the user can do.
        hint: String,
    },
    /// A setting is inconsistent (e.g. a heap region outside RAM).
    #[error("{0}")]
    Config(String),
    /// Reading target memory failed.
    #[error("reading the heap failed: {0}")]
    Target(#[from] TargetError),
}
