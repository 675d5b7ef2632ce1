//! Bounds on what the user asks for in seconds: a timeout is a positive, finite number of
//! seconds no longer than [`MAX_TIMEOUT_SECS`], so adding it to the clock never overflows and
//! a typo (`-1`, `nan`, `1e30`) is an error naming the value, not a panic.
//!
//! The cap guards the command line only; a library caller may still pass any [`Duration`]
//! (`Duration::MAX` for "wait as long as it takes"), so every wait turns its timeout into a
//! [`Deadline`], which never overflows the clock: a timeout the clock cannot hold is no deadline.

use std::time::{Duration, Instant};

/// The longest timeout accepted: one week. Longer ones are typos, and a deadline this far off
/// still fits every clock memlife adds it to.
pub const MAX_TIMEOUT_SECS: f64 = 7.0 * 24.0 * 3600.0;

/// Seconds as a [`Duration`], or why they are not a timeout.
pub fn timeout_secs(secs: f64) -> Result<Duration, String> {
    if !secs.is_finite() || secs <= 0.0 || secs > MAX_TIMEOUT_SECS {
        return Err(format!(
            "timeout {secs} is not a number of seconds between 0 and {MAX_TIMEOUT_SECS} (one week)"
        ));
    }
    // In range, so this cannot fail; the error path keeps it panic-free anyway.
    Duration::try_from_secs_f64(secs).map_err(|e| format!("timeout {secs}: {e}"))
}

/// Parses a command-line timeout (`--timeout 2.5`) and checks it with [`timeout_secs`].
pub fn parse_timeout(text: &str) -> Result<f64, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("timeout {text:?} is not a number of seconds"))?;
    timeout_secs(secs).map(|_| secs)
}

/// When a wait ends: a point on the monotonic clock, or never, for a timeout too far off for
/// the clock to hold (where `Instant + Duration` would panic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline(Option<Instant>);

impl Deadline {
    /// `timeout` from now; no deadline when the clock cannot hold it.
    pub fn after(timeout: Duration) -> Deadline {
        Deadline(Instant::now().checked_add(timeout))
    }

    /// At `instant`.
    pub fn at(instant: Instant) -> Deadline {
        Deadline(Some(instant))
    }

    /// No deadline at all.
    pub const NEVER: Deadline = Deadline(None);

    /// The instant, or `None` for no deadline.
    pub fn instant(self) -> Option<Instant> {
        self.0
    }

    /// Whether it has passed (never, without a deadline).
    pub fn passed(self) -> bool {
        self.0.is_some_and(|d| Instant::now() >= d)
    }

    /// The time left: zero once passed, `None` without a deadline.
    pub fn left(self) -> Option<Duration> {
        self.0.map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// The time left as a timeout to hand on: `Duration::MAX` without a deadline (the callee
    /// makes its own [`Deadline`] of it, so that stays no deadline).
    pub fn left_or_max(self) -> Duration {
        self.left().unwrap_or(Duration::MAX)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn valid_timeouts_pass() {
        assert_eq!(timeout_secs(2.5).unwrap(), Duration::from_millis(2500));
        assert_eq!(parse_timeout("30").unwrap(), 30.0);
        assert!(timeout_secs(MAX_TIMEOUT_SECS).is_ok());
    }

    #[test]
    fn invalid_timeouts_are_errors_not_panics() {
        for bad in [
            "-1",
            "0",
            "nan",
            "NaN",
            "inf",
            "-inf",
            "1e30",
            "18446744073709551616",
            "604801",
            "",
            "soon",
        ] {
            let err = parse_timeout(bad).unwrap_err();
            assert!(err.contains("timeout"), "{bad}: {err}");
        }
        // The largest accepted one still fits the clock.
        let d = timeout_secs(MAX_TIMEOUT_SECS).unwrap();
        assert!(std::time::Instant::now().checked_add(d).is_some());
    }

    #[test]
    fn a_timeout_the_clock_cannot_hold_is_no_deadline() {
        let never = Deadline::after(Duration::MAX);
        assert_eq!(never, Deadline::NEVER);
        assert!(!never.passed());
        assert_eq!(never.left(), None);
        assert_eq!(never.left_or_max(), Duration::MAX);
        let soon = Deadline::after(Duration::from_secs(60));
        assert!(!soon.passed());
        assert!(soon.left().unwrap() <= Duration::from_secs(60));
        let now = Deadline::after(Duration::ZERO);
        assert!(now.passed());
        assert_eq!(now.left(), Some(Duration::ZERO));
    }
}
