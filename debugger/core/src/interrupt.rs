//! The user's request to stop (Ctrl-C, SIGTERM), seen by every long wait.
//!
//! The binary installs the signal handler and calls [`request`]; libraries only poll. A wait on
//! a running target ([`wait_for_stop_or_interrupt`]) returns [`Wait::Interrupted`] soon after a
//! request, so the caller unwinds through its normal cleanup: breakpoints removed, reports
//! written, the target resumed or released as asked. The flag stays set until [`clear`]:
//! everything that polls it after the request gives up too, which is what a user who pressed
//! Ctrl-C expects of a script that would otherwise run on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::limits::Deadline;
use crate::{Control, Result, StopReason};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// How often a wait looks at the flag. Stops are still reported the moment they arrive.
const POLL: Duration = Duration::from_millis(100);

/// Asks every wait to give up (called from the signal handler's thread).
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Whether the user asked to stop.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Forgets a request (a server that handled it and goes on, and tests).
pub fn clear() {
    REQUESTED.store(false, Ordering::SeqCst);
}

/// How a wait for a stop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// The core stopped.
    Stopped(StopReason),
    /// The timeout passed with the core still running.
    TimedOut,
    /// The user asked to stop; the core may still be running.
    Interrupted,
}

/// Waits like [`Control::wait_for_stop`], in slices, so that an interrupt request ends the wait
/// within about 100 ms.
pub fn wait_for_stop_or_interrupt(control: &mut dyn Control, timeout: Duration) -> Result<Wait> {
    let deadline = Deadline::after(timeout);
    loop {
        if requested() {
            return Ok(Wait::Interrupted);
        }
        let left = deadline.left_or_max();
        if let Some(stop) = control.wait_for_stop(left.min(POLL))? {
            return Ok(Wait::Stopped(stop));
        }
        if left <= POLL {
            return Ok(Wait::TimedOut);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A core that stops at its third poll.
    struct StopsLater(u32);

    impl Control for StopsLater {
        fn halt(&mut self) -> Result<StopReason> {
            Ok(StopReason::Halted)
        }
        fn resume(&mut self) -> Result<()> {
            Ok(())
        }
        fn step(&mut self) -> Result<StopReason> {
            Ok(StopReason::Step)
        }
        fn wait_for_stop(&mut self, timeout: Duration) -> Result<Option<StopReason>> {
            assert!(timeout <= POLL, "{timeout:?}");
            self.0 += 1;
            Ok((self.0 >= 3).then_some(StopReason::Halted))
        }
        fn reset(&mut self, _halt: bool) -> Result<()> {
            Ok(())
        }
        fn is_halted(&self) -> bool {
            self.0 >= 3
        }
    }

    /// "As long as it takes" from a library caller: no overflow of the clock, the stop comes.
    #[test]
    fn the_longest_timeout_waits_for_the_stop() {
        let mut core = StopsLater(0);
        let wait = wait_for_stop_or_interrupt(&mut core, Duration::MAX).unwrap();
        assert_eq!(wait, Wait::Stopped(StopReason::Halted));
        assert_eq!(core.0, 3);
    }
}
