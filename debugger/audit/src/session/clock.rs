//! The firmware's time as the session sees it: the wall time it runs (from each resume to the
//! stop after it) and the wall time memlife holds it halted (from each stop to the next resume),
//! counted from the first resume, and its tick counter (FreeRTOS's `xTickCount`) at the first
//! resume and at the end. A firmware's own clock runs only while it runs (in QEMU every clock
//! stops with the core; on a board SysTick does), so the halts are what an audit adds to each
//! second of the firmware's time: `run.firmware_time` in the report.

use std::time::{Duration, Instant};

use memlife_core::Memory;
use memlife_dwarf::Symbols;

use crate::model::FirmwareTime;

/// The tick counters memlife knows: the variable and the compile unit it is file-static in.
const TICK_COUNTERS: [(&str, &[&str]); 1] = [("xTickCount", &["tasks.c"])];

/// A tick counter in target RAM.
#[derive(Debug, Clone, Copy)]
struct TickCounter {
    name: &'static str,
    addr: u64,
    /// Its width in bytes (1 to 8).
    size: usize,
}

impl TickCounter {
    /// The first tick counter the ELF has.
    fn find(symbols: &Symbols) -> Option<TickCounter> {
        TICK_COUNTERS.iter().find_map(|(name, units)| {
            let v = symbols.variable(name, units)?;
            let size = v.type_id.and_then(|t| symbols.types().size_of(t))?;
            let size = usize::try_from(size).ok().filter(|s| (1..=8).contains(s))?;
            Some(TickCounter {
                name,
                addr: v.address?,
                size,
            })
        })
    }

    /// Its value now (the target halted); `None` when the target will not give it.
    fn read(&self, mem: &mut dyn Memory) -> Option<u64> {
        let bytes = mem.read_vec(self.addr, self.size).ok()?;
        Some(
            bytes
                .iter()
                .rev()
                .fold(0u64, |v, b| (v << 8) | u64::from(*b)),
        )
    }
}

/// Running and halted time, and the tick counter at both ends.
#[derive(Debug, Default)]
pub struct FirmwareClock {
    counter: Option<TickCounter>,
    /// The counter at the first resume.
    ticks_start: Option<u64>,
    /// The counter when last read at the end.
    ticks_end: Option<u64>,
    /// When the firmware was resumed, while it runs.
    resumed_at: Option<Instant>,
    /// When it last stopped (`None` before the first resume).
    stopped_at: Option<Instant>,
    running: Duration,
    halted: Duration,
    longest_halt: Duration,
    halts: u64,
}

impl FirmwareClock {
    /// A clock for the firmware of `symbols`, with its tick counter when it has one.
    pub fn new(symbols: &Symbols) -> Self {
        FirmwareClock {
            counter: TickCounter::find(symbols),
            ..FirmwareClock::default()
        }
    }

    /// Whether the firmware was ever resumed.
    pub fn started(&self) -> bool {
        self.stopped_at.is_some() || self.resumed_at.is_some()
    }

    /// Reads the tick counter before the first resume (the target is halted).
    pub fn before_first_resume(&mut self, mem: &mut dyn Memory) {
        if !self.started() {
            self.ticks_start = self.counter.and_then(|c| c.read(mem));
        }
    }

    /// The firmware was resumed now.
    pub fn resumed(&mut self) {
        let now = Instant::now();
        if let Some(stop) = self.stopped_at.take() {
            let halt = now.saturating_duration_since(stop);
            self.halted += halt;
            self.longest_halt = self.longest_halt.max(halt);
            self.halts += 1;
        }
        self.resumed_at = Some(now);
    }

    /// The firmware stopped now.
    pub fn stopped(&mut self) {
        let now = Instant::now();
        if let Some(resumed) = self.resumed_at.take() {
            self.running += now.saturating_duration_since(resumed);
        }
        self.stopped_at = Some(now);
    }

    /// Reads the tick counter at the end of the audit (the target is halted); a target that is
    /// gone leaves it unread.
    pub fn at_end(&mut self, mem: &mut dyn Memory) {
        if self.started() {
            self.ticks_end = self.counter.and_then(|c| c.read(mem));
        }
    }

    /// The figures so far; `None` when the firmware was never resumed.
    pub fn figures(&self) -> Option<FirmwareTime> {
        if !self.started() {
            return None;
        }
        let ticks = match (self.counter, self.ticks_start, self.ticks_end) {
            (Some(c), Some(start), Some(end)) => {
                Some((c.name, start, end, u32::try_from(c.size * 8).unwrap_or(64)))
            }
            _ => None,
        };
        Some(FirmwareTime::new(
            self.running.as_secs_f64(),
            self.halted.as_secs_f64(),
            self.halts,
            self.longest_halt.as_secs_f64() * 1000.0,
            ticks,
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// RAM from 0x2000_0000.
    struct Ram(Vec<u8>);

    impl Memory for Ram {
        fn read(&mut self, addr: u64, buf: &mut [u8]) -> memlife_core::Result<()> {
            let o = usize::try_from(addr - 0x2000_0000).unwrap();
            let bytes =
                self.0
                    .get(o..o + buf.len())
                    .ok_or(memlife_core::TargetError::Unmapped {
                        addr,
                        len: buf.len(),
                    })?;
            buf.copy_from_slice(bytes);
            Ok(())
        }
    }

    #[test]
    fn the_tick_counter_is_read_little_endian_at_its_width_at_both_ends() {
        let mut ram = Ram(vec![0x34, 0x12, 0, 0, 0xff, 0xff, 0, 0]);
        let counter = |size| TickCounter {
            name: "xTickCount",
            addr: 0x2000_0000,
            size,
        };
        assert_eq!(counter(4).read(&mut ram), Some(0x1234));
        assert_eq!(counter(1).read(&mut ram), Some(0x34));
        assert_eq!(counter(2).read(&mut Ram(vec![1])), None, "not readable");
        let mut c = FirmwareClock {
            counter: Some(counter(4)),
            ..FirmwareClock::default()
        };
        c.before_first_resume(&mut ram);
        c.resumed();
        c.stopped();
        ram.0[0] = 0x96;
        c.at_end(&mut ram);
        let ticks = c.figures().unwrap().ticks.unwrap();
        assert_eq!(
            (ticks.start, ticks.end, ticks.elapsed),
            (0x1234, 0x1296, 0x62)
        );
    }

    #[test]
    fn halts_count_between_resumes_only() {
        let mut c = FirmwareClock::default();
        assert!(c.figures().is_none(), "never resumed");
        c.resumed();
        std::thread::sleep(Duration::from_millis(20));
        c.stopped();
        std::thread::sleep(Duration::from_millis(30));
        c.resumed();
        c.stopped();
        let f = c.figures().unwrap();
        assert_eq!(f.halts, 1);
        assert!(f.running_seconds >= 0.02, "{f:?}");
        assert!(
            f.halted_seconds >= 0.03 && f.longest_halt_ms >= 30.0,
            "{f:?}"
        );
        assert!(f.ticks.is_none(), "no counter");
    }
}
