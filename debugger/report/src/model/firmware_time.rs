//! What an audit cost the firmware's own time (`run.firmware_time`): how long the firmware ran
//! and how long memlife held it halted, and its tick counter over the same span where it has
//! one. A real-time firmware notices the halts: a board's SysTick stops with the core while its
//! peripheral timers run on, so a check that compares the two fails after a long enough halt.

use serde::{Deserialize, Serialize};

/// The firmware's time over an audit, from the first resume to the last stop.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FirmwareTime {
    /// Wall seconds the firmware ran: from each resume to the stop that followed it.
    pub running_seconds: f64,
    /// Wall seconds memlife held it halted: from each stop to the next resume.
    pub halted_seconds: f64,
    /// Halted seconds per second the firmware ran; `None` when it never ran.
    pub halted_per_second: Option<f64>,
    /// The longest single halt, in milliseconds.
    pub longest_halt_ms: f64,
    /// Halts between two resumes.
    pub halts: u64,
    /// The firmware's tick counter over the same span, where it has one.
    pub ticks: Option<TickCount>,
}

/// The firmware's tick counter (`xTickCount`) at the first resume and at the last stop.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TickCount {
    /// The variable read.
    pub counter: String,
    /// Its value at the first resume.
    pub start: u64,
    /// Its value at the last stop.
    pub end: u64,
    /// Ticks that passed (the counter may wrap once).
    pub elapsed: u64,
    /// Ticks per second the firmware ran: its tick rate where no tick was lost, lower where
    /// the firmware missed some; `None` when it never ran.
    pub per_running_second: Option<f64>,
    /// Milliseconds halted per tick of the firmware's time; `None` when no tick passed.
    pub halted_ms_per_tick: Option<f64>,
}

impl FirmwareTime {
    /// The figures for `running` and `halted` seconds over `halts` halts, the longest
    /// `longest_halt_ms`, and the tick counter `counter` read as `start` and `end` (a counter
    /// of `bits` bits).
    pub fn new(
        running_seconds: f64,
        halted_seconds: f64,
        halts: u64,
        longest_halt_ms: f64,
        ticks: Option<(&str, u64, u64, u32)>,
    ) -> Self {
        let per_running = |x: f64| (running_seconds > 0.0).then(|| x / running_seconds);
        FirmwareTime {
            running_seconds,
            halted_seconds,
            halted_per_second: per_running(halted_seconds),
            longest_halt_ms,
            halts,
            ticks: ticks.map(|(counter, start, end, bits)| {
                let mask = if bits >= 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                let elapsed = end.wrapping_sub(start) & mask;
                TickCount {
                    counter: counter.to_string(),
                    start,
                    end,
                    elapsed,
                    per_running_second: per_running(elapsed as f64),
                    halted_ms_per_tick: (elapsed > 0)
                        .then(|| halted_seconds * 1000.0 / elapsed as f64),
                }
            }),
        }
    }

    /// One line for the summary: `halted 0.12 s per second it ran (longest halt 4 ms), 312
    /// ticks of xTickCount`.
    pub fn summary(&self) -> String {
        let mut s = match self.halted_per_second {
            Some(r) => format!(
                "firmware halted {r:.2} s per second it ran (longest halt {:.0} ms)",
                self.longest_halt_ms
            ),
            None => "firmware never ran".to_string(),
        };
        if let Some(t) = &self.ticks {
            s.push_str(&format!(", {} ticks of {}", t.elapsed, t.counter));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halted_time_and_ticks_are_per_second_the_firmware_ran() {
        let t = FirmwareTime::new(2.0, 0.5, 10, 120.0, Some(("xTickCount", 100, 300, 32)));
        assert_eq!(t.halted_per_second, Some(0.25));
        let ticks = t
            .ticks
            .as_ref()
            .map(|k| (k.elapsed, k.per_running_second, k.halted_ms_per_tick));
        assert_eq!(ticks, Some((200, Some(100.0), Some(2.5))));
        assert_eq!(
            t.summary(),
            "firmware halted 0.25 s per second it ran (longest halt 120 ms), 200 ticks of xTickCount"
        );
    }

    #[test]
    fn a_counter_that_wrapped_once_and_a_firmware_that_never_ran() {
        let t = FirmwareTime::new(
            0.0,
            0.0,
            0,
            0.0,
            Some(("xTickCount", 0xffff_fff0, 0x10, 32)),
        );
        let ticks = t.ticks.as_ref().map(|k| (k.elapsed, k.per_running_second));
        assert_eq!(ticks, Some((0x20, None)));
        assert_eq!(t.halted_per_second, None);
        assert!(
            t.summary().starts_with("firmware never ran"),
            "{}",
            t.summary()
        );
    }
}
