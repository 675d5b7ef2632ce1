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
    /// Reading target memory failed; the target's error is the source, printed once by
    /// whoever formats the chain.
    #[error("reading the heap failed")]
    Target(#[from] TargetError),
}

#[cfg(test)]
mod tests {
    use std::error::Error;

    use super::*;

    /// Every message of the chain, outermost first: what `{err:#}` joins with ": ".
    fn chain(e: &(dyn Error + 'static)) -> Vec<String> {
        let mut out = vec![e.to_string()];
        let mut cause = e.source();
        while let Some(c) = cause {
            out.push(c.to_string());
            cause = c.source();
        }
        out
    }

    #[test]
    fn a_read_failure_keeps_the_target_error_as_its_source_and_prints_it_once() {
        let e = HeapError::from(TargetError::Unmapped {
            addr: 0x2000_0000,
            len: 4,
        });
        assert_eq!(
            chain(&e),
            [
                "reading the heap failed",
                "memory at 0x20000000 (4 bytes) is not accessible"
            ]
        );
        // The target error's own cause (an I/O error) stays reachable too.
        let e = HeapError::from(TargetError::transport(
            "reading memory",
            std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer"),
        ));
        assert_eq!(chain(&e).len(), 3);
        assert_eq!(chain(&e)[2], "reset by peer");
    }
}
