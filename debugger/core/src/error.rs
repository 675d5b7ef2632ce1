//! Errors a target can report.

use std::time::Duration;

/// Result type of target operations.
pub type Result<T, E = TargetError> = std::result::Result<T, E>;

/// Coarse classification so callers can react without matching every variant
/// (as `embedded-hal`'s `ErrorKind` does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The address is not backed by memory the target will read.
    Unmapped,
    /// The target did not answer in time.
    Timeout,
    /// The operation needs a halted core.
    NotHalted,
    /// The backend cannot do this at all.
    Unsupported,
    /// The link to the target failed (socket, USB, probe).
    Transport,
    /// The target is gone (exited, killed, detached).
    Gone,
    /// The user asked memlife to stop (Ctrl-C).
    Interrupted,
    /// The target answered the request with an error code (a GDB server's `Exx`): it is alive
    /// and said no.
    Refused,
}

/// An error from a target backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// Memory at this range could not be read or written.
    #[error("memory at {addr:#010x} ({len} bytes) is not accessible")]
    Unmapped {
        /// First address of the failed access.
        addr: u64,
        /// Length of the failed access.
        len: usize,
    },
    /// The target did not answer in time.
    #[error("target did not answer within {after:?} ({waiting_for})")]
    Timeout {
        /// How long memlife waited.
        after: Duration,
        /// What it waited for (`reply`, `single step`, `QEMU opening its gdb port`).
        waiting_for: &'static str,
    },
    /// The core must be halted first.
    #[error("the core is running; halt it first")]
    NotHalted,
    /// The backend lacks this capability.
    #[error("{0} is not supported by this target")]
    Unsupported(&'static str),
    /// The connection failed.
    #[error("connection to the target failed: {context}")]
    Transport {
        /// What was being done.
        context: String,
        /// The backend's own error (a socket's I/O error, a probe driver's error), kept whole
        /// so that `{:#}` and `source()` show it.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The peer broke the protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The program on the target exited.
    #[error("the target exited with status {0}")]
    Exited(i32),
    /// The target was killed or the connection closed.
    #[error("the target is gone: {0}")]
    Gone(String),
    /// The server answered a request with an error code.
    #[error("the target refused {request}: error {code:#04x}")]
    Refused {
        /// Short name of the request.
        request: &'static str,
        /// Errno-style code from the server.
        code: u8,
    },
    /// The user asked memlife to stop (Ctrl-C, SIGTERM) while it waited on the target.
    #[error("interrupted by the user")]
    Interrupted,
    /// Every hardware unit of a kind is in use (breakpoint or watchpoint comparators).
    #[error("all {count} {what} are in use; remove one first")]
    Exhausted {
        /// What ran out, plural (`hardware breakpoints (FPB comparators)`).
        what: &'static str,
        /// How many the target has.
        count: u32,
    },
    /// The target cannot do what was asked as asked (a watch range the hardware cannot match).
    #[error("{0}")]
    Rejected(String),
}

impl TargetError {
    /// The coarse kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            TargetError::Unmapped { .. } => ErrorKind::Unmapped,
            TargetError::Timeout { .. } => ErrorKind::Timeout,
            TargetError::NotHalted => ErrorKind::NotHalted,
            TargetError::Unsupported(_) => ErrorKind::Unsupported,
            TargetError::Transport { .. } | TargetError::Protocol(_) => ErrorKind::Transport,
            TargetError::Exited(_) | TargetError::Gone(_) => ErrorKind::Gone,
            TargetError::Refused { .. } => ErrorKind::Refused,
            TargetError::Interrupted => ErrorKind::Interrupted,
            TargetError::Exhausted { .. } | TargetError::Rejected(_) => ErrorKind::Unsupported,
        }
    }

    /// The target did not answer `waiting_for` within `after`.
    pub fn timeout(after: Duration, waiting_for: &'static str) -> Self {
        TargetError::Timeout { after, waiting_for }
    }

    /// Wraps the link's error (I/O, a probe driver's) with what was being done.
    pub fn transport(
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        TargetError::Transport {
            context: context.into(),
            source: source.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_its_own_kind_not_unmapped_memory() {
        let e = TargetError::Refused {
            request: "software breakpoints",
            code: 0x0e,
        };
        assert_eq!(e.kind(), ErrorKind::Refused);
        let unmapped = TargetError::Unmapped { addr: 0, len: 4 };
        assert_eq!(unmapped.kind(), ErrorKind::Unmapped);
    }

    #[test]
    fn the_link_error_is_the_source_not_part_of_the_message() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let e = TargetError::transport("reading a reply", io);
        assert_eq!(
            e.to_string(),
            "connection to the target failed: reading a reply"
        );
        let source = std::error::Error::source(&e).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("reset by peer"));
    }
}
