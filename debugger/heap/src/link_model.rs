//! How a walk reads the arena: the strategy asked for (`--walk bulk|sparse|auto`), the link's
//! cost model (round-trip time and bandwidth), and the rule that picks bulk or sparse from it.
//!
//! A bulk read costs about one round trip per [`PIPELINE_DEPTH`] packets plus the arena's bytes
//! over the bandwidth, whatever the heap holds; a sparse read costs one round trip per header
//! the walk follows (plus the bytes of its chunks). Which is cheaper depends on the number of
//! blocks, which is not known before the walk: `auto` walks sparse with the modeled cost of a
//! bulk read as its budget and reads the rest in bulk once the budget is spent, so it never
//! costs much more than twice the cheaper strategy (and costs the sparse price when that wins).
//!
//! The model comes from `MEMLIFE_LINK_MODEL=RTT_US:BYTES_PER_S` when set (a benchmark models a
//! slow probe with it), otherwise it is measured at the first `auto` walk of the process (two
//! timed reads that the walk needs anyway) and kept for the walks after it.

use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

use memlife_core::{Memory, ReadStrategy, Result};

/// Requests a request/reply link answers together (the GDB remote client pipelines this many
/// `m` packets before reading the first reply).
pub const PIPELINE_DEPTH: u64 = 64;

/// Bytes per packet assumed when the link does not say.
const DEFAULT_MAX_READ: u64 = 2048;

/// The environment variable that overrides the measured model.
pub const LINK_MODEL_ENV: &str = "MEMLIFE_LINK_MODEL";

/// What a walk was asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WalkStrategy {
    /// Read the arena whole (what a snapshot or a fast link wants).
    #[default]
    Bulk,
    /// Follow the headers in small chunks.
    Sparse,
    /// Let the link's cost model decide.
    Auto,
}

impl FromStr for WalkStrategy {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "bulk" => Ok(WalkStrategy::Bulk),
            "sparse" => Ok(WalkStrategy::Sparse),
            "auto" => Ok(WalkStrategy::Auto),
            _ => Err(format!(
                "unknown walk strategy `{s}`: expected bulk, sparse or auto"
            )),
        }
    }
}

impl std::fmt::Display for WalkStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WalkStrategy::Bulk => "bulk",
            WalkStrategy::Sparse => "sparse",
            WalkStrategy::Auto => "auto",
        })
    }
}

/// A link's cost: a fixed time per round trip and a bandwidth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkModel {
    /// Round-trip time in microseconds.
    pub rtt_us: f64,
    /// Bytes of memory per second.
    pub bytes_per_s: f64,
}

impl FromStr for LinkModel {
    type Err = String;
    /// `RTT_US:BYTES_PER_S`, both positive numbers (`1000:500000` is a 1 ms, 500 KB/s probe).
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let bad = || {
            format!(
                "{LINK_MODEL_ENV}=`{s}`: expected RTT_US:BYTES_PER_S, two positive numbers \
                 (e.g. 1000:500000 for a 1 ms round trip at 500 KB/s)"
            )
        };
        let (rtt, bw) = s.split_once(':').ok_or_else(bad)?;
        let rtt: f64 = rtt.trim().parse().map_err(|_| bad())?;
        let bw: f64 = bw.trim().parse().map_err(|_| bad())?;
        if !(rtt.is_finite() && bw.is_finite() && rtt >= 0.0 && bw > 0.0) {
            return Err(bad());
        }
        Ok(LinkModel {
            rtt_us: rtt,
            bytes_per_s: bw,
        })
    }
}

impl LinkModel {
    /// Modeled time of `round_trips` round trips moving `bytes`, in microseconds.
    pub fn cost_us(&self, round_trips: u64, bytes: u64) -> f64 {
        round_trips as f64 * self.rtt_us + bytes as f64 * 1e6 / self.bytes_per_s
    }

    /// From one small timed read (about one round trip) and one larger one of `bytes` more.
    pub fn from_timings(small: Duration, large: Duration, extra_bytes: u64) -> Self {
        let rtt_us = small.as_secs_f64() * 1e6;
        let transfer = large.saturating_sub(small).as_secs_f64();
        // A link too fast to time is modeled at 1 GB/s: bulk reads then cost round trips only.
        let bytes_per_s = if transfer > 0.0 {
            (extra_bytes as f64 / transfer).min(1e9)
        } else {
            1e9
        };
        LinkModel {
            rtt_us: rtt_us.max(1.0),
            bytes_per_s,
        }
    }
}

/// Round trips of one pipelined request for `ranges`, split into packets of `max_read` bytes.
pub fn round_trips_for(ranges: &[(u64, usize)], max_read: u64) -> u64 {
    let max = if max_read == 0 {
        DEFAULT_MAX_READ
    } else {
        max_read
    };
    let packets: u64 = ranges
        .iter()
        .map(|&(_, len)| (len as u64).div_ceil(max).max(1))
        .sum();
    packets.div_ceil(PIPELINE_DEPTH).max(1)
}

/// Everything a walk needs to choose how it reads.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReadPlan {
    /// What was asked.
    pub strategy: WalkStrategy,
    /// The link's cost, when known (from the environment or measured).
    pub model: Option<LinkModel>,
    /// Largest single read the link allows (0 when unknown).
    pub max_read: u64,
}

impl ReadPlan {
    /// A plan with the given strategy and no model yet.
    pub fn new(strategy: WalkStrategy) -> Self {
        ReadPlan {
            strategy,
            ..ReadPlan::default()
        }
    }
}

/// How a walk read memory, kept in [`crate::HeapState`] for the `link` object. Not part of the
/// heap: two states that differ only here are equal (the point of the strategies is to agree).
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadReport {
    /// The strategy the arena was read with, when a walk read one.
    pub strategy: Option<ReadStrategy>,
    /// The model the choice was made with.
    pub model: Option<LinkModel>,
}

impl PartialEq for ReadReport {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for ReadReport {}

/// The strategy commands use for live walks (set once from `--walk` or memlife.toml).
static STRATEGY: Mutex<WalkStrategy> = Mutex::new(WalkStrategy::Auto);
/// The model measured at the first `auto` walk, for the walks after it.
static MEASURED: Mutex<Option<LinkModel>> = Mutex::new(None);

/// Sets the strategy of every later live walk ([`crate::walk_halted`]).
pub fn set_walk_strategy(strategy: WalkStrategy) {
    if let Ok(mut s) = STRATEGY.lock() {
        *s = strategy;
    }
}

/// The strategy live walks use.
pub fn walk_strategy() -> WalkStrategy {
    STRATEGY.lock().map_or(WalkStrategy::Auto, |s| *s)
}

/// The model from [`LINK_MODEL_ENV`], when set and not empty; an error naming the variable when it is set to
/// something that is not a model.
pub fn model_from_env() -> std::result::Result<Option<LinkModel>, String> {
    match std::env::var(LINK_MODEL_ENV) {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => v.parse().map(Some),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(format!("{LINK_MODEL_ENV} is not valid UTF-8"))
        }
    }
}

/// The model for the next live walk: the environment's, else the one measured earlier.
pub(crate) fn known_model() -> Option<LinkModel> {
    model_from_env()
        .ok()
        .flatten()
        .or_else(|| MEASURED.lock().ok().and_then(|m| *m))
}

/// Keeps a measured model for the walks after this one.
pub(crate) fn remember(model: LinkModel) {
    if let Ok(mut m) = MEASURED.lock() {
        *m = Some(model);
    }
}

/// A memory that counts round trips (see [`round_trips_for`]) of the reads through it.
pub struct CountingMemory<'a> {
    inner: &'a mut dyn Memory,
    max_read: u64,
    /// Round trips so far.
    pub round_trips: u64,
}

impl<'a> CountingMemory<'a> {
    /// Wraps `inner`, whose packets hold `max_read` bytes (0: unknown).
    pub fn new(inner: &'a mut dyn Memory, max_read: u64) -> Self {
        CountingMemory {
            inner,
            max_read,
            round_trips: 0,
        }
    }
}

impl Memory for CountingMemory<'_> {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<()> {
        self.round_trips += round_trips_for(&[(addr, buf.len())], self.max_read);
        self.inner.read(addr, buf)
    }

    fn read_ranges(&mut self, ranges: &[(u64, usize)]) -> Result<Vec<Vec<u8>>> {
        self.round_trips += round_trips_for(ranges, self.max_read);
        self.inner.read_ranges(ranges)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_a_model_and_refuses_nonsense() {
        let m: LinkModel = "1000:500000".parse().unwrap();
        assert_eq!(m.rtt_us, 1000.0);
        assert_eq!(m.bytes_per_s, 500_000.0);
        // 10 round trips and 500 KB: 10 ms + 1 s.
        assert_eq!(m.cost_us(10, 500_000), 1_010_000.0);
        for bad in ["", "1000", "a:b", "1000:0", "-1:5", "1:inf"] {
            let e = bad.parse::<LinkModel>().unwrap_err();
            assert!(e.contains("RTT_US:BYTES_PER_S"), "{bad}: {e}");
        }
        assert_eq!("auto".parse::<WalkStrategy>().unwrap(), WalkStrategy::Auto);
        assert!(
            "fast"
                .parse::<WalkStrategy>()
                .unwrap_err()
                .contains("bulk, sparse or auto")
        );
    }

    #[test]
    fn round_trips_follow_the_pipeline() {
        // 8 MiB in 2046-byte packets: 4101 packets, 65 batches of 64.
        assert_eq!(round_trips_for(&[(0, 8 << 20)], 2046), 65);
        assert_eq!(round_trips_for(&[(0, 64), (128, 64)], 2046), 1);
        assert_eq!(round_trips_for(&[(0, 0)], 0), 1);
    }
}
