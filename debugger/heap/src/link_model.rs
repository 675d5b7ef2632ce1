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
//! The model is given by the caller (the command line reads it from `MEMLIFE_LINK_MODEL`: a
//! benchmark models a slow probe with it), or measured at the first `auto` walk (two timed reads
//! that the walk needs anyway). A [`LinkState`], owned by whoever walks one target again and
//! again (a command, a server session, an audit), keeps the strategy and the model between
//! walks; nothing here is global to the process.

use std::str::FromStr;
use std::time::Duration;

use memlife_core::{Memory, ReadStrategy, Result};

/// Requests a request/reply link answers together (the GDB remote client pipelines this many
/// `m` packets before reading the first reply).
pub const PIPELINE_DEPTH: u64 = 64;

/// Bytes per packet assumed when the link does not say.
const DEFAULT_MAX_READ: u64 = 2048;

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
    /// The error quotes the text; the caller says where it came from.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let bad = || {
            format!(
                "`{s}`: expected RTT_US:BYTES_PER_S, two positive numbers \
                 (e.g. 1000:500000 for a 1 ms round trip at 500 KB/s)"
            )
        };
        let (rtt, bw) = s.split_once(':').ok_or_else(bad)?;
        let rtt: f64 = rtt.trim().parse().map_err(|_| bad())?;
        let bw: f64 = bw.trim().parse().map_err(|_| bad())?;
        // A round trip of no time at all is no link: the model's costs would all be bandwidth.
        if !(rtt.is_finite() && bw.is_finite() && rtt > 0.0 && bw > 0.0) {
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

/// How the live walks of one target read the arena: the strategy asked for, and the link's
/// model once known (given by the caller, or measured at the first `auto` walk and kept for the
/// walks after it). The caller owns it for as long as it talks to the target and hands it to
/// every [`crate::walk_halted`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkState {
    /// What live walks were asked to do (`--walk`).
    pub strategy: WalkStrategy,
    /// The link's cost: given, or measured by an earlier `auto` walk.
    pub model: Option<LinkModel>,
}

impl Default for LinkState {
    /// `auto`, with the model still to measure: what a command does unless told otherwise.
    fn default() -> Self {
        LinkState::new(WalkStrategy::Auto, None)
    }
}

impl LinkState {
    /// Walks read as `strategy` says, with `model` as the link's cost when given.
    pub fn new(strategy: WalkStrategy, model: Option<LinkModel>) -> Self {
        LinkState { strategy, model }
    }

    /// The read plan of the next walk of a link whose packets hold `max_read` bytes; `live` is
    /// false for offline memory (a snapshot), which costs nothing to read whole.
    pub fn read_plan(&self, live: bool, max_read: u64) -> ReadPlan {
        ReadPlan {
            strategy: if live {
                self.strategy
            } else {
                WalkStrategy::Bulk
            },
            model: self.model,
            max_read,
        }
    }

    /// Keeps the model a walk measured, for the walks after it; a model already known stays.
    pub fn learn(&mut self, report: &ReadReport) {
        if self.model.is_none() {
            self.model = report.model;
        }
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
        // "Two positive numbers": a round trip of no time is refused too (issue 30's red team
        // found `0:500000` accepted).
        for zero in ["0:500000", "0.0:1", "-0:1"] {
            let e = zero.parse::<LinkModel>().unwrap_err();
            assert!(e.contains("two positive numbers"), "{zero}: {e}");
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
    fn a_link_state_keeps_the_first_model_it_learns_and_offline_reads_whole() {
        let mut link = LinkState::default();
        assert_eq!(link.strategy, WalkStrategy::Auto);
        let measured = LinkModel {
            rtt_us: 300.0,
            bytes_per_s: 1e6,
        };
        let plan = link.read_plan(true, 2048);
        assert_eq!(
            (plan.strategy, plan.model, plan.max_read),
            (WalkStrategy::Auto, None, 2048)
        );
        link.learn(&ReadReport {
            strategy: Some(ReadStrategy::Sparse),
            model: Some(measured),
        });
        assert_eq!(link.read_plan(true, 2048).model, Some(measured));
        // A later walk's model (the same one, handed back) does not replace it; a given one
        // is never replaced.
        let mut given = LinkState::new(WalkStrategy::Sparse, Some(measured));
        given.learn(&ReadReport {
            strategy: None,
            model: Some(LinkModel {
                rtt_us: 1.0,
                bytes_per_s: 1.0,
            }),
        });
        assert_eq!(given.model, Some(measured));
        assert_eq!(given.read_plan(false, 0).strategy, WalkStrategy::Bulk);
    }

    #[test]
    fn round_trips_follow_the_pipeline() {
        // 8 MiB in 2046-byte packets: 4101 packets, 65 batches of 64.
        assert_eq!(round_trips_for(&[(0, 8 << 20)], 2046), 65);
        assert_eq!(round_trips_for(&[(0, 64), (128, 64)], 2046), 1);
        assert_eq!(round_trips_for(&[(0, 0)], 0), 1);
    }
}
