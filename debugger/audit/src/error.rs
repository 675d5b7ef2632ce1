//! Errors that end an audit (exit code 2). A failed check is not one of them.

use memlife_core::TargetError;
use memlife_heap::HeapError;

/// Why an audit could not go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The target cannot be driven (an offline snapshot).
    #[error("an audit needs a live target with run control and breakpoints ({0} has none)")]
    NeedsLiveTarget(String),
    /// A function the script or configuration names is not in the ELF.
    #[error("function `{0}` is not in the ELF's symbol table")]
    NoSuchFunction(String),
    /// A breakpoint the audit waited for never came.
    #[error("{what} not reached within {seconds:.1} s; the target was halted")]
    NotReached {
        /// What was waited for.
        what: String,
        /// The timeout.
        seconds: f64,
    },
    /// The target stopped for another reason (a fault, a watchpoint of someone else).
    #[error("the target stopped unexpectedly ({0}) while waiting for {1}")]
    UnexpectedStop(String, String),
    /// A setting is wrong.
    #[error("{0}")]
    Config(String),
    /// The target failed.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The heap could not be read.
    #[error(transparent)]
    Heap(#[from] HeapError),
}
