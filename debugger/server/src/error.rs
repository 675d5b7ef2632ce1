//! [`ServeError`]: why a monitor command, a client session or the server failed, with the
//! cause kept as the source (a chain printed with `{:#}` names each cause once).

use memlife_core::TargetError;

/// Why something in `memlife serve` failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The backend failed while doing `context`.
    #[error("{context}")]
    Target {
        /// What memlife was doing.
        context: String,
        /// The backend's error.
        #[source]
        source: TargetError,
    },
    /// A socket or file operation failed.
    #[error("{context}")]
    Io {
        /// What memlife was doing.
        context: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The heap could not be walked, or no allocator was found.
    #[error("{context}")]
    Heap {
        /// What memlife was doing.
        context: String,
        /// Why.
        #[source]
        source: memlife_heap::HeapError,
    },
    /// `monitor audit` could not start the audit engine.
    #[error("{context}")]
    Audit {
        /// What memlife was doing.
        context: String,
        /// Why.
        #[source]
        source: memlife_audit::AuditError,
    },
    /// A report could not be rendered or written.
    #[error(transparent)]
    Render(#[from] memlife_render::ReportError),
    /// A dump could not be written.
    #[error(transparent)]
    Write(#[from] memlife_core::output::WriteError),
    /// A monitor command that cannot be done as asked (unknown, or the target lacks what it
    /// needs).
    #[error("{0}")]
    Command(String),
}

/// The crate's result.
pub type Result<T, E = ServeError> = std::result::Result<T, E>;

/// `context` for the errors the server meets, as anyhow's `Context` would give it, but typed.
pub(crate) trait Context<T> {
    /// Wraps the error with what was being done.
    fn context(self, context: impl Into<String>) -> Result<T>;
}

impl<T> Context<T> for std::result::Result<T, TargetError> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.map_err(|source| ServeError::Target {
            context: context.into(),
            source,
        })
    }
}

impl<T> Context<T> for std::result::Result<T, std::io::Error> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.map_err(|source| ServeError::Io {
            context: context.into(),
            source,
        })
    }
}

impl<T> Context<T> for std::result::Result<T, memlife_heap::HeapError> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.map_err(|source| ServeError::Heap {
            context: context.into(),
            source,
        })
    }
}

impl<T> Context<T> for std::result::Result<T, memlife_audit::AuditError> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.map_err(|source| ServeError::Audit {
            context: context.into(),
            source,
        })
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.ok_or_else(|| ServeError::Command(context.into()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::error::Error as _;

    use super::*;

    #[test]
    fn the_cause_is_the_source_and_printed_once() {
        let r: Result<()> = Err(TargetError::NotHalted).context("halting the target");
        let e = r.unwrap_err();
        assert_eq!(e.to_string(), "halting the target");
        let source = e.source().map(ToString::to_string);
        assert_eq!(
            source.as_deref(),
            Some("the core is running; halt it first")
        );
    }
}
