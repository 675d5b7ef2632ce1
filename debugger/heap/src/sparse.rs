//! The sparse reader: target memory fetched on demand in small aligned chunks, cached across
//! the walk, so a walk that follows headers reads about one chunk per block instead of the
//! whole arena.
//!
//! It answers exactly what a bulk [`MemImage`](crate::image::MemImage) of the same ranges would:
//! the same spans (neighbours merged the same way), the same `None` outside them, the same bytes
//! (the core is halted). That is what makes both strategies give identical heaps.
//!
//! Each miss costs one round trip: the missing chunks of the access, plus read-ahead chunks
//! after it, go out as one pipelined request. Read-ahead is one chunk after a jump (the next
//! small block's header is often there) and doubles while the misses run on sequentially (a
//! scan of a block's contents, a run of small blocks), up to one packet.
//!
//! Reads are bounded: when the round trips reach the budget (a cap, or the modeled cost of a
//! bulk read for `auto`), the reader reads its spans whole and answers from that. A corrupt heap
//! whose walk wanders then costs one bulk read more, never an unbounded number of chunks.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Instant;

use memlife_core::{Memory, ReadStrategy, TargetError};

use crate::link_model::{LinkModel, round_trips_for};

/// Bytes per chunk: a header and the words around it, small enough to cost little bandwidth.
pub const CHUNK: u64 = 64;
/// Read-ahead stops growing here (32 chunks, 2 KiB: one packet of QEMU's gdbstub).
const MAX_READAHEAD: u64 = 32;
/// Round trips a sparse walk may take before it reads the rest in bulk (`--walk sparse`).
pub const MAX_SPARSE_ROUND_TRIPS: u64 = 20_000;
/// Ranges up to this size (allocator globals) are fetched in the first round trip.
const SMALL_RANGE: u64 = 256;

/// When the sparse reader gives up and reads its spans whole.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Round trips allowed.
    pub max_round_trips: u64,
    /// Modeled microseconds allowed, with the model, for `auto`.
    pub max_cost_us: Option<(f64, LinkModel)>,
}

/// Target memory behind merged spans, fetched a chunk at a time.
pub struct SparseReader<'m> {
    mem: &'m mut dyn Memory,
    /// `[start, end)`, sorted, as `MemImage::read` merges them.
    spans: Vec<(u64, u64)>,
    cache: HashMap<u64, Vec<u8>>,
    /// The spans read whole once the budget was spent.
    bulk: Option<Vec<(u64, Vec<u8>)>>,
    error: Option<TargetError>,
    readahead: u64,
    /// Where the last fetch ended, to tell a sequential miss.
    next_seq: u64,
    budget: Budget,
    max_read: u64,
    round_trips: u64,
    bytes: u64,
    /// The current run of misses moving forward: where it began, how far it got, how many
    /// misses and what had been spent when it began (see [`SparseReader::projected_over`]).
    run: Run,
}

#[derive(Debug, Clone, Copy, Default)]
struct Run {
    start: u64,
    frontier: u64,
    span_end: u64,
    misses: u64,
    trips_before: u64,
    bytes_before: u64,
}

/// Timed one-chunk reads when measuring the link.
const SMALL_READS: u64 = 3;

/// Misses a forward run needs before its pace is trusted for a projection.
const RUN_MIN_MISSES: u64 = 32;

impl std::fmt::Debug for SparseReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparseReader")
            .field("spans", &self.spans)
            .field("chunks", &self.cache.len())
            .field("bulk", &self.bulk.is_some())
            .field("round_trips", &self.round_trips)
            .finish()
    }
}

impl<'m> SparseReader<'m> {
    /// A reader of the merged `spans`; `ranges` are the ranges the walker asked for, whose small
    /// ones (globals) are fetched at once in one round trip with the first chunk of each large one.
    pub fn new(
        mem: &'m mut dyn Memory,
        spans: Vec<(u64, u64)>,
        ranges: &[(u64, u64)],
        budget: Budget,
        max_read: u64,
    ) -> Result<Self, TargetError> {
        let mut r = SparseReader {
            mem,
            spans,
            cache: HashMap::new(),
            bulk: None,
            error: None,
            readahead: 1,
            next_seq: u64::MAX,
            budget,
            max_read,
            round_trips: 0,
            bytes: 0,
            run: Run::default(),
        };
        let mut first: Vec<u64> = Vec::new();
        for &(addr, len) in ranges.iter().filter(|r| r.1 > 0) {
            let end = if len <= SMALL_RANGE {
                addr.saturating_add(len)
            } else {
                addr.saturating_add(1)
            };
            let mut c = chunk_of(addr);
            while c < end {
                first.push(c);
                c = c.saturating_add(CHUNK);
            }
        }
        first.sort_unstable();
        first.dedup();
        r.fetch_chunks(&first);
        match r.error.take() {
            Some(e) => Err(e),
            None => Ok(r),
        }
    }

    /// Times two reads at the start of the largest span (a chunk, then up to `extra` bytes
    /// after it) for the link's model; the bytes go into the cache, where the walk wants them.
    pub fn measure(&mut self, extra: u64) -> Result<LinkModel, TargetError> {
        let Some(&(start, end)) = self.spans.iter().max_by_key(|(s, e)| e - s) else {
            return Ok(LinkModel {
                rtt_us: 1.0,
                bytes_per_s: 1e9,
            });
        };
        let base = chunk_of(start);
        // The quickest of three one-chunk reads: one slow answer must not make the link look
        // slow for the whole process.
        let mut small = std::time::Duration::MAX;
        for i in 0..SMALL_READS {
            let Some(c) = base.checked_add(i * CHUNK).filter(|c| *c < end) else {
                break;
            };
            let t = Instant::now();
            self.fetch_chunks(&[c]);
            small = small.min(t.elapsed());
        }
        let more: Vec<u64> = (SMALL_READS..SMALL_READS + extra / CHUNK)
            .map_while(|i| base.checked_add(i * CHUNK).filter(|c| *c < end))
            .collect();
        let extra_bytes = more.len() as u64 * CHUNK;
        let t = Instant::now();
        self.fetch_chunks(&more);
        let large = t.elapsed();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        Ok(LinkModel::from_timings(small, large, extra_bytes))
    }

    /// Replaces the budget (auto sets it once the link's model is known).
    pub fn set_budget(&mut self, budget: Budget) {
        self.budget = budget;
    }

    /// Round trips and bytes so far.
    pub fn cost(&self) -> (u64, u64) {
        (self.round_trips, self.bytes)
    }

    /// The strategy this reader ended up using.
    pub fn strategy(&self) -> ReadStrategy {
        if self.bulk.is_some() {
            ReadStrategy::SparseThenBulk
        } else {
            ReadStrategy::Sparse
        }
    }

    /// The first read that failed, if any (an access that needed it answered `None`).
    pub fn take_error(&mut self) -> Option<TargetError> {
        self.error.take()
    }

    /// The bytes at `[addr, addr+len)` when one span holds them all, as a bulk image answers.
    pub fn bytes(&mut self, addr: u64, len: u64) -> Option<Cow<'_, [u8]>> {
        let end = addr.checked_add(len)?;
        let ulen = usize::try_from(len).ok()?;
        let &(s_start, s_end) = self.spans.iter().find(|(s, e)| *s <= addr && end <= *e)?;
        if self.error.is_some() {
            return None;
        }
        if len == 0 {
            return Some(Cow::Owned(Vec::new()));
        }
        if self.bulk.is_none() {
            let missing: Vec<u64> = chunks(addr, end)
                .filter(|c| !self.cache.contains_key(c))
                .collect();
            if !missing.is_empty() {
                let wanted = self.with_readahead(missing, s_end);
                if !self.fetch_chunks(&wanted) {
                    return None;
                }
            }
        }
        if let Some(bulk) = &self.bulk {
            let (start, data) = bulk.iter().find(|(s, _)| *s == s_start)?;
            let off = usize::try_from(addr - start).ok()?;
            return data.get(off..off.checked_add(ulen)?).map(Cow::Borrowed);
        }
        let mut out = Vec::with_capacity(ulen);
        for c in chunks(addr, end) {
            let data = self.cache.get(&c)?;
            // A chunk's bytes start at max(c, span start) and are clipped to the span.
            let from = c.max(s_start);
            let lo = addr.max(from) - from;
            let hi = end.min(from.saturating_add(data.len() as u64)) - from;
            out.extend_from_slice(data.get(lo as usize..hi as usize)?);
        }
        (out.len() == ulen).then_some(Cow::Owned(out))
    }

    /// `missing` (sorted chunk addresses) and the read-ahead after it, within the span.
    fn with_readahead(&mut self, mut missing: Vec<u64>, span_end: u64) -> Vec<u64> {
        self.readahead = if missing.first() == Some(&self.next_seq) {
            (self.readahead * 2).min(MAX_READAHEAD)
        } else {
            1
        };
        let mut c = missing.last().copied().unwrap_or(0);
        for _ in 0..self.readahead {
            c = c.saturating_add(CHUNK);
            if c >= span_end {
                break;
            }
            if !self.cache.contains_key(&c) {
                missing.push(c);
            }
        }
        missing
    }

    /// Fetches the chunks (sorted) in one pipelined request, contiguous ones as one range; or,
    /// once the budget is spent, every span whole. False when the read failed (the error is
    /// kept for [`SparseReader::take_error`]).
    fn fetch_chunks(&mut self, wanted: &[u64]) -> bool {
        if wanted.is_empty() || self.bulk.is_some() {
            return true;
        }
        let mut ranges: Vec<(u64, usize)> = Vec::new();
        let mut pieces: Vec<(u64, u64, u64)> = Vec::new(); // chunk, from, to
        for &c in wanted {
            // Saturating: a span may end at the top of the address space (as in a bulk image).
            let c_end = c.saturating_add(CHUNK);
            let Some(&(s, e)) = self.spans.iter().find(|(s, e)| c < *e && c_end > *s) else {
                continue;
            };
            let (from, to) = (c.max(s), c_end.min(e));
            pieces.push((c, from, to));
            match ranges.last_mut() {
                Some((a, n)) if *a + *n as u64 == from => *n += (to - from) as usize,
                _ => ranges.push((from, (to - from) as usize)),
            }
        }
        if ranges.is_empty() {
            return true;
        }
        let trips = round_trips_for(&ranges, self.max_read);
        let bytes: u64 = ranges.iter().map(|r| r.1 as u64).sum();
        self.follow_run(wanted, &pieces);
        if self.over_budget(trips, bytes) {
            return self.read_whole();
        }
        self.round_trips += trips;
        self.bytes += bytes;
        let data = match self.mem.read_ranges(&ranges) {
            Ok(d) => d,
            Err(e) => {
                self.error.get_or_insert(e);
                return false;
            }
        };
        // Each piece's bytes sit in the range that starts at or before it.
        let mut ri = 0;
        for (c, from, to) in pieces {
            while ri + 1 < ranges.len() && ranges[ri + 1].0 <= from {
                ri += 1;
            }
            let off = (from - ranges[ri].0) as usize;
            let Some(bytes) = data
                .get(ri)
                .and_then(|d| d.get(off..off + (to - from) as usize))
            else {
                // A reader that answers short breaks the contract of read_ranges: say so, as a
                // bulk read would, rather than walk on with a hole.
                self.error.get_or_insert(TargetError::Protocol(format!(
                    "a read of {:#x}..{to:#x} returned fewer bytes than asked",
                    from
                )));
                return false;
            };
            self.cache.insert(c, bytes.to_vec());
        }
        self.next_seq = wanted.last().map_or(u64::MAX, |c| c.saturating_add(CHUNK));
        true
    }

    /// Extends the current forward run of misses with this fetch, or starts a new one when the
    /// walk jumped back (a second pass, a list in another order).
    fn follow_run(&mut self, wanted: &[u64], pieces: &[(u64, u64, u64)]) {
        let (Some(&first), Some(&last)) = (wanted.first(), wanted.last()) else {
            return;
        };
        let span_end = pieces.last().map_or(0, |p| {
            self.spans
                .iter()
                .find(|(s, e)| p.1 >= *s && p.1 < *e)
                .map_or(0, |s| s.1)
        });
        if first < self.run.frontier || span_end != self.run.span_end {
            self.run = Run {
                start: first,
                frontier: first,
                span_end,
                misses: 0,
                trips_before: self.round_trips,
                bytes_before: self.bytes,
            };
        }
        self.run.misses += 1;
        self.run.frontier = self.run.frontier.max(last.saturating_add(CHUNK));
    }

    fn over_budget(&self, trips: u64, bytes: u64) -> bool {
        if self.round_trips + trips > self.budget.max_round_trips {
            return true;
        }
        match self.budget.max_cost_us {
            Some((limit, model)) => {
                let spent = model.cost_us(self.round_trips + trips, self.bytes + bytes);
                spent > limit || self.projected_over(limit, model, spent)
            }
            None => false,
        }
    }

    /// Whether the current forward run, at its pace so far, will cost more than `limit` by the
    /// end of its span: a walk through thousands of small blocks then goes on in bulk early
    /// instead of after spending a bulk read's worth of round trips.
    fn projected_over(&self, limit: f64, model: LinkModel, spent: f64) -> bool {
        let run = &self.run;
        let covered = run.frontier.saturating_sub(run.start);
        let ahead = run.span_end.saturating_sub(run.start);
        if run.misses < RUN_MIN_MISSES || covered == 0 || ahead <= covered {
            return false;
        }
        let before = model.cost_us(run.trips_before, run.bytes_before);
        let pace = (spent - before) / covered as f64;
        before + pace * ahead as f64 > limit
    }

    /// Reads every span whole and answers from that from now on.
    fn read_whole(&mut self) -> bool {
        let ranges: Vec<(u64, usize)> = self
            .spans
            .iter()
            .map(|&(s, e)| (s, (e - s) as usize))
            .collect();
        self.round_trips += round_trips_for(&ranges, self.max_read);
        self.bytes += ranges.iter().map(|r| r.1 as u64).sum::<u64>();
        match self.mem.read_ranges(&ranges) {
            Ok(data) => {
                self.bulk = Some(self.spans.iter().map(|s| s.0).zip(data).collect());
                self.cache.clear();
                true
            }
            Err(e) => {
                self.error.get_or_insert(e);
                false
            }
        }
    }
}

/// The aligned chunk holding `addr`.
fn chunk_of(addr: u64) -> u64 {
    addr & !(CHUNK - 1)
}

/// The aligned chunks covering `[addr, end)`.
fn chunks(addr: u64, end: u64) -> impl Iterator<Item = u64> {
    let first = chunk_of(addr);
    let last = chunk_of(end.saturating_sub(1).max(addr));
    (0..=(last - first) / CHUNK).map(move |i| first + i * CHUNK)
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// RAM at 0x1000..0x9000 (a byte is its address's low byte), counting reads and bytes.
    pub(crate) struct Ram {
        pub(crate) reads: u64,
        pub(crate) bytes: u64,
    }
    impl Memory for Ram {
        fn read(&mut self, addr: u64, buf: &mut [u8]) -> memlife_core::Result<()> {
            if addr < 0x1000 || addr + buf.len() as u64 > 0x9000 {
                return Err(TargetError::Unmapped {
                    addr,
                    len: buf.len(),
                });
            }
            self.reads += 1;
            self.bytes += buf.len() as u64;
            for (i, b) in buf.iter_mut().enumerate() {
                *b = (addr + i as u64) as u8;
            }
            Ok(())
        }
    }

    /// A sparse reader over [`Ram`] for a small global and a 32 KiB arena.
    pub(crate) fn reader(ram: &mut Ram, max_round_trips: u64) -> SparseReader<'_> {
        let ranges = [(0x1000, 0x10), (0x1100, 0x7f00)];
        let budget = Budget {
            max_round_trips,
            max_cost_us: None,
        };
        SparseReader::new(ram, vec![(0x1000, 0x9000)], &ranges, budget, 2046).unwrap()
    }

    /// A link that answers every pipelined read with half of what was asked.
    struct Short(Ram);
    impl Memory for Short {
        fn read(&mut self, addr: u64, buf: &mut [u8]) -> memlife_core::Result<()> {
            self.0.read(addr, buf)
        }
        fn read_ranges(&mut self, ranges: &[(u64, usize)]) -> memlife_core::Result<Vec<Vec<u8>>> {
            let mut out = Vec::new();
            for &(a, n) in ranges {
                let mut v = vec![0; n / 2];
                self.0.read(a, &mut v)?;
                out.push(v);
            }
            Ok(out)
        }
    }

    #[test]
    fn a_short_answer_is_a_read_error_not_a_hole() {
        let mut short = Short(Ram { reads: 0, bytes: 0 });
        let budget = Budget {
            max_round_trips: 1000,
            max_cost_us: None,
        };
        // The first round trip (the allocator's globals and the arena's first chunk) already
        // comes back short.
        let Err(e) = SparseReader::new(
            &mut short,
            vec![(0x1000, 0x9000)],
            &[(0x1100, 0x7f00)],
            budget,
            2046,
        ) else {
            panic!("a short answer is an error");
        };
        assert!(e.to_string().contains("fewer bytes than asked"), "{e}");
    }

    #[test]
    fn a_wandering_walk_goes_on_in_bulk_at_the_cap() {
        let mut ram = Ram { reads: 0, bytes: 0 };
        let mut r = reader(&mut ram, 5);
        for a in (0x1000u64..0x9000).step_by(0x200) {
            assert_eq!(r.bytes(a, 4).unwrap()[0], a as u8);
        }
        assert_eq!(r.strategy(), ReadStrategy::SparseThenBulk);
        let (trips, bytes) = r.cost();
        assert!(trips <= 5 + 1 + 1, "{trips}");
        assert!(bytes <= 0x8000 + 10 * CHUNK, "{bytes}");
    }

    #[test]
    fn a_failed_chunk_is_kept_as_the_error() {
        let mut ram = Ram { reads: 0, bytes: 0 };
        // The span claims memory the target does not have past 0x9000.
        let budget = Budget {
            max_round_trips: 100,
            max_cost_us: None,
        };
        let mut r = SparseReader::new(
            &mut ram,
            vec![(0x1000, 0xa000)],
            &[(0x1000, 0x9000)],
            budget,
            0,
        )
        .unwrap();
        assert!(r.bytes(0x9100, 4).is_none());
        assert!(matches!(r.take_error(), Some(TargetError::Unmapped { .. })));
    }

    /// Memory everywhere: a byte is its address's low byte.
    struct Everywhere;
    impl Memory for Everywhere {
        fn read(&mut self, addr: u64, buf: &mut [u8]) -> memlife_core::Result<()> {
            for (i, b) in buf.iter_mut().enumerate() {
                *b = addr.wrapping_add(i as u64) as u8;
            }
            Ok(())
        }
    }

    #[test]
    fn a_span_ending_at_the_top_of_the_address_space_is_read_without_overflow() {
        // Ranges come from target values; a bulk image takes a span that ends at 2^64
        // (`a_span_ending_past_the_top_is_read_without_overflow`), and so must the sparse one.
        let start = u64::MAX - 0x3ff;
        let budget = Budget {
            max_round_trips: 100,
            max_cost_us: None,
        };
        let mut mem = Everywhere;
        let mut r = SparseReader::new(
            &mut mem,
            vec![(start, u64::MAX)],
            &[(start, 0x400)],
            budget,
            0,
        )
        .unwrap();
        r.measure(4096).unwrap();
        assert_eq!(&*r.bytes(u64::MAX - 3, 3).unwrap(), &[0xfc, 0xfd, 0xfe]);
        assert_eq!(&*r.bytes(start, 2).unwrap(), &[0x00, 0x01]);
        assert!(r.bytes(u64::MAX - 3, 4).is_none());
        for a in (start..u64::MAX - 4).step_by(0x40) {
            assert_eq!(r.bytes(a, 4).unwrap()[0], a as u8, "{a:#x}");
        }
        assert!(r.take_error().is_none());
    }
}
