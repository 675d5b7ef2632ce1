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
    #[error("function `{0}` is not in the ELF's symbol table{1}")]
    NoSuchFunction(String, String),
    /// A breakpoint the audit waited for never came.
    #[error("{what} not reached within {seconds:.1} s; the target was halted{at}")]
    NotReached {
        /// What was waited for.
        what: String,
        /// The timeout.
        seconds: f64,
        /// Where it was halted (` at pc 0x… in fw_fail (main.c:12), call chain: …`), empty when
        /// the pc could not be read.
        at: String,
    },
    /// While waiting, the firmware was found parked in a loop it never leaves (a halt loop, a
    /// `while (1)`): the same few instructions at the same stack pointer, poll after poll.
    #[error(
        "{what} not reached: the firmware is parked at {at} ({polls} polls {interval_ms} ms apart); the target was halted"
    )]
    Parked {
        /// What was waited for.
        what: String,
        /// Where: the pc, its function and source line, and the call chain.
        at: String,
        /// Polls that saw it there.
        polls: u32,
        /// Time between polls.
        interval_ms: u64,
    },
    /// The target stopped for another reason (a fault, a watchpoint of someone else).
    #[error("the target stopped unexpectedly ({0}) while waiting for {1}")]
    UnexpectedStop(String, String),
    /// The target faulted (stopped at a fault handler's entry): what, where, when and why.
    #[error("target faulted: {0}")]
    Faulted(String),
    /// The program exited (semihosting `SYS_EXIT`) before the cycle asked for began or
    /// completed.
    #[error("the firmware exited after {} (status {status}){}", cycles_text(*cycles), during.as_ref().map_or_else(String::new, |f| format!(", during {f}")))]
    ExitedAfterCycles {
        /// Complete cycles observed.
        cycles: u64,
        /// Its exit status.
        status: i32,
        /// The phase it exited in, when one was open.
        during: Option<String>,
    },
    /// The firmware called its assert handler (`vAssertCalled`, what `configASSERT` calls, or
    /// a function of `[target] halt_on`): where, and in which task.
    #[error("the firmware asserted at {0}")]
    Asserted(String),
    /// Role calls kept coming, but no cycle completed (or began) within the timeout: the role
    /// that begins cycles is called once, or not on every cycle.
    #[error(
        "{} within {seconds:.1} s (--timeout): {}, and the firmware called {seen}; map [lifecycle] cycle_starts (or [phases]) in memlife.toml to a role the firmware's loop calls once per cycle",
        if *began { "no cycle completed" } else { "no cycle began" },
        if *began { format!("a cycle runs from one call of {start} to the next") } else { format!("a cycle begins at a call of {start}, which never came") }
    )]
    CycleIncomplete {
        /// The timeout.
        seconds: f64,
        /// The role whose calls begin cycles, with its function: `load (model_load)`.
        start: String,
        /// Whether the cycle began (its start role was called).
        began: bool,
        /// The role calls seen since the cycle began (or the wait for it), with their counts.
        seen: String,
    },
    /// The target was gone and starting it again failed.
    #[error("the target is gone ({gone}), and starting {what} failed: {why}")]
    Restart {
        /// Why the target was gone.
        gone: String,
        /// What was started (`a fresh qemu-system-arm -M netduinoplus2`).
        what: String,
        /// Why that failed.
        why: String,
    },
    /// A setting is wrong.
    #[error("{0}")]
    Config(String),
    /// The target failed.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The heap could not be read.
    #[error(transparent)]
    Heap(#[from] HeapError),
    /// The RTOS kernel's tasks could not be read.
    #[error(transparent)]
    Tasks(#[from] memlife_rtos::RtosError),
    /// The script engine kept the target: memlife's bug, never the script's doing.
    #[error("internal error: the script engine did not give the target back")]
    TargetNotReturned,
}

fn cycles_text(n: u64) -> String {
    if n == 1 {
        "1 cycle".into()
    } else {
        format!("{n} cycles")
    }
}

/// An error and its causes as one line, `outer: inner: innermost` (what `{err:#}` prints for
/// an `anyhow::Error`), for messages that leave as text: script errors.
pub(crate) struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(c) = cause {
            write!(f, ": {c}")?;
            cause = c.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heap_read_failure_names_its_cause_once() {
        let e = AuditError::from(HeapError::from(TargetError::Unmapped {
            addr: 0x2000_0000,
            len: 4,
        }));
        assert_eq!(
            Chain(&e).to_string(),
            "reading the heap failed: memory at 0x20000000 (4 bytes) is not accessible"
        );
    }
}
