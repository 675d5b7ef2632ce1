//! [`ServeError`]: why a monitor command, a client session or the server failed, with the
//! cause kept as the source (a chain printed with [`chain`] names each cause once).

use memlife_core::TargetError;

/// What a target lacks for a command (an offline snapshot has neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    /// Halting, resuming, stepping and resetting the core.
    RunControl,
    /// Setting breakpoints.
    Breakpoints,
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Capability::RunControl => "run control",
            Capability::Breakpoints => "breakpoints",
        })
    }
}

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
    /// The FreeRTOS tasks could not be read.
    #[error("{context}")]
    Rtos {
        /// What memlife was doing.
        context: String,
        /// Why.
        #[source]
        source: memlife_rtos::RtosError,
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
    /// A `monitor` line that is not a command as `monitor help` lists them.
    #[error(transparent)]
    Monitor(#[from] crate::monitor::ParseError),
    /// A client's path the server does not write to or read from.
    #[error(transparent)]
    Place(#[from] crate::places::PlaceError),
    /// The target cannot do what the command needs.
    #[error("this target has no {0} (an offline snapshot?)")]
    Lacks(Capability),
    /// A function a client named is not in the ELF.
    #[error("function `{0}` is not in the ELF's symbol table")]
    UnknownFunction(String),
    /// `monitor dump-off` for a symbol without a `dump-on`.
    #[error("no dump-on is set for `{0}`")]
    NoDumpOn(String),
    /// The gdb session could not be set up.
    #[error("starting the gdb session")]
    Session(#[source] gdbstub::stub::GdbStubBuilderError),
    /// The target failed in the middle of a session and gdbstub kept no error to say why.
    #[error("the target failed without saying why")]
    Unexplained,
    /// A monitor command that cannot be done as asked, said in words (the audit's own errors).
    #[error("{0}")]
    Command(String),
}

/// The crate's result.
pub type Result<T, E = ServeError> = std::result::Result<T, E>;

/// `e` and each of its causes, `: ` between them (as anyhow's `{:#}` prints a chain).
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

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
        assert_eq!(
            chain(&e),
            "halting the target: the core is running; halt it first"
        );
    }
}
