//! The memory a walker parses: a few address ranges, read whole (bulk) or on demand (sparse).
//!
//! Ranges closer than [`MERGE_GAP`] are merged into one read, so an allocator's globals (which
//! the linker puts side by side in `.bss`) cost one transaction, and the arena costs as many as
//! the link's largest packet needs.

use std::borrow::Cow;
use std::cell::RefCell;

use memlife_core::{Memory, ReadStrategy, TargetError};

use crate::link_model::{self, ReadPlan, ReadReport, WalkStrategy};
use crate::sparse::{Budget, MAX_SPARSE_ROUND_TRIPS, SparseReader};

/// Ranges closer than this are read as one.
pub const MERGE_GAP: u64 = 256;

/// `auto` reads in bulk when that costs at most this many round trips' time.
const CHEAP_BULK_RTTS: f64 = 8.0;

/// Bytes the first `auto` walk reads after the first chunk to time the link's bandwidth.
const MEASURE_BYTES: u64 = 4096;

/// A read-only image of a few address ranges of target memory: read whole up front (bulk), or
/// fetched on demand as a walk looks (sparse, see [`crate::sparse`]). Both answer the same.
#[derive(Debug)]
pub struct MemImage<'m> {
    inner: Inner<'m>,
}

#[derive(Debug)]
enum Inner<'m> {
    Bulk(Vec<(u64, Vec<u8>)>),
    Sparse(Box<RefCell<SparseReader<'m>>>),
}

/// `ranges` as `[start, end)` spans, neighbours closer than [`MERGE_GAP`] merged, zero-length
/// ranges dropped.
fn merge(ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut wanted: Vec<(u64, u64)> = ranges
        .iter()
        .filter(|(_, len)| *len > 0)
        .map(|&(a, l)| (a, a.saturating_add(l)))
        .collect();
    wanted.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (start, end) in wanted {
        match merged.last_mut() {
            Some(last) if start <= last.1.saturating_add(MERGE_GAP) => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// The spans as `(addr, len)` reads; an error for a span no buffer can hold.
fn as_reads(merged: &[(u64, u64)]) -> Result<Vec<(u64, usize)>, TargetError> {
    merged
        .iter()
        .map(|&(start, end)| {
            // end >= start: each end is `start.saturating_add(len)`, and merging only raises it.
            usize::try_from(end - start)
                .map(|len| (start, len))
                .map_err(|_| TargetError::Unmapped {
                    addr: start,
                    len: usize::MAX,
                })
        })
        .collect()
}

impl MemImage<'static> {
    /// Reads every `(addr, len)` range, merging neighbours; zero-length ranges are skipped.
    pub fn read(mem: &mut dyn Memory, ranges: &[(u64, u64)]) -> Result<Self, TargetError> {
        let merged = merge(ranges);
        let data = mem.read_ranges(&as_reads(&merged)?)?;
        Ok(MemImage {
            inner: Inner::Bulk(merged.iter().map(|r| r.0).zip(data).collect()),
        })
    }

    /// Builds an image from given bytes (tests, snapshots).
    pub fn from_spans(spans: Vec<(u64, Vec<u8>)>) -> Self {
        MemImage {
            inner: Inner::Bulk(spans),
        }
    }
}

impl<'m> MemImage<'m> {
    /// The image a walk parses: the ranges of the allocator's globals and arena, read as `plan`
    /// says. Bulk reads them now; sparse fetches the globals and the first chunk of the arena
    /// now and the rest as the walk looks; auto decides from the link's model (measured here
    /// at the first auto walk when no model is known).
    pub fn for_walk(
        mem: &'m mut dyn Memory,
        ranges: &[(u64, u64)],
        plan: &ReadPlan,
    ) -> Result<(Self, ReadReport), TargetError> {
        let merged = merge(ranges);
        let total: u64 = merged.iter().map(|(s, e)| e - s).sum();
        let reads = as_reads(&merged)?;
        let bulk_trips = link_model::round_trips_for(&reads, plan.max_read);
        let mut model = plan.model;
        let budget = match plan.strategy {
            WalkStrategy::Bulk => None,
            WalkStrategy::Sparse => Some(Budget {
                max_round_trips: MAX_SPARSE_ROUND_TRIPS,
                max_cost_us: None,
            }),
            // Too small to be worth a gamble: one bulk round trip is what sparse starts with.
            WalkStrategy::Auto if total <= MEASURE_BYTES + sparse_start(ranges) => None,
            WalkStrategy::Auto
                if model.is_some_and(|m| {
                    m.cost_us(bulk_trips, total) <= CHEAP_BULK_RTTS * m.rtt_us
                }) =>
            {
                None
            }
            WalkStrategy::Auto => Some(Budget {
                max_round_trips: MAX_SPARSE_ROUND_TRIPS,
                // Filled in below, once the model is known.
                max_cost_us: None,
            }),
        };
        let Some(mut budget) = budget else {
            let data = mem.read_ranges(&reads)?;
            let image = MemImage {
                inner: Inner::Bulk(merged.iter().map(|r| r.0).zip(data).collect()),
            };
            let report = ReadReport {
                strategy: Some(ReadStrategy::Bulk),
                model,
            };
            return Ok((image, report));
        };
        let auto = plan.strategy == WalkStrategy::Auto;
        if auto {
            // Unlimited until the model is known: measuring reads at most MEASURE_BYTES.
            budget.max_cost_us = None;
        }
        let mut reader = SparseReader::new(mem, merged, ranges, budget, plan.max_read)?;
        if auto {
            // A model measured here goes back in the report, for the caller to keep.
            let m = match model {
                Some(m) => m,
                None => reader.measure(MEASURE_BYTES)?,
            };
            model = Some(m);
            let bulk_cost = m.cost_us(bulk_trips, total);
            // A bulk read worth a few round trips is not worth a gamble: the next miss reads
            // the spans whole.
            let limit = if bulk_cost <= CHEAP_BULK_RTTS * m.rtt_us {
                0.0
            } else {
                bulk_cost
            };
            reader.set_budget(Budget {
                max_round_trips: MAX_SPARSE_ROUND_TRIPS,
                max_cost_us: Some((limit, m)),
            });
        }
        let image = MemImage {
            inner: Inner::Sparse(Box::new(RefCell::new(reader))),
        };
        let report = ReadReport {
            strategy: Some(ReadStrategy::Sparse),
            model,
        };
        Ok((image, report))
    }

    /// After the walk: the strategy the image ended up using (sparse may have gone on in bulk),
    /// or the first read that failed (a walk that needed it saw missing bytes, so its result
    /// must not be shown).
    pub fn finish(&self, report: &mut ReadReport) -> Result<(), TargetError> {
        if let Inner::Sparse(r) = &self.inner {
            let mut r = r.borrow_mut();
            if let Some(e) = r.take_error() {
                return Err(e);
            }
            report.strategy = Some(r.strategy());
        }
        Ok(())
    }

    /// Round trips and bytes a sparse image took so far (`None` for a bulk one).
    pub fn sparse_cost(&self) -> Option<(u64, u64)> {
        match &self.inner {
            Inner::Sparse(r) => Some(r.borrow().cost()),
            Inner::Bulk(_) => None,
        }
    }

    /// The bytes at `[addr, addr+len)` if the image holds all of them.
    pub fn bytes(&self, addr: u64, len: u64) -> Option<Cow<'_, [u8]>> {
        match &self.inner {
            Inner::Bulk(spans) => bulk_bytes(spans, addr, len).map(Cow::Borrowed),
            Inner::Sparse(r) => r
                .borrow_mut()
                .bytes(addr, len)
                .map(|b| Cow::Owned(b.into_owned())),
        }
    }

    /// A little-endian 32-bit word.
    pub fn u32(&self, addr: u64) -> Option<u32> {
        let b = self.bytes(addr, 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A little-endian word of `size` bytes (1, 2, 4 or 8).
    pub fn uint(&self, addr: u64, size: u64) -> Option<u64> {
        let b = self.bytes(addr, size)?;
        let mut v = [0u8; 8];
        v[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
        Some(u64::from_le_bytes(v))
    }
}

/// Bytes a sparse reader fetches before the walk starts (the small ranges, one chunk per large).
fn sparse_start(ranges: &[(u64, u64)]) -> u64 {
    ranges
        .iter()
        .map(|&(_, l)| if l <= 256 { l } else { crate::sparse::CHUNK })
        .sum()
}

fn bulk_bytes(spans: &[(u64, Vec<u8>)], addr: u64, len: u64) -> Option<&[u8]> {
    // Checked throughout: addresses and lengths come from target RAM, and a span may end
    // at the top of the address space.
    addr.checked_add(len)?;
    let len = usize::try_from(len).ok()?;
    spans.iter().find_map(|(start, data)| {
        let off = usize::try_from(addr.checked_sub(*start)?).ok()?;
        data.get(off..off.checked_add(len)?)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::sparse::CHUNK;
    use crate::sparse::tests::{Ram, reader};

    struct Counting {
        reads: usize,
    }
    impl Memory for Counting {
        fn read(&mut self, addr: u64, buf: &mut [u8]) -> memlife_core::Result<()> {
            self.reads += 1;
            for (i, b) in buf.iter_mut().enumerate() {
                *b = (addr as usize + i) as u8;
            }
            Ok(())
        }
    }

    #[test]
    fn merges_neighbouring_ranges_into_one_read() {
        let mut m = Counting { reads: 0 };
        let img =
            MemImage::read(&mut m, &[(0x100, 4), (0x108, 4), (0x2000, 8), (0x104, 0)]).unwrap();
        assert_eq!(m.reads, 2);
        assert_eq!(img.u32(0x108).unwrap(), u32::from_le_bytes([8, 9, 10, 11]));
        assert_eq!(&*img.bytes(0x10b, 1).unwrap(), &[0x0b]);
        assert!(img.bytes(0x10c, 1).is_none());
        assert!(img.u32(0x1ffe).is_none());
        assert!(img.u32(u64::MAX - 1).is_none());
    }

    /// A span at the top of the address space: `start + data.len()` overflowed before.
    #[test]
    fn a_span_ending_past_the_top_is_read_without_overflow() {
        let img = MemImage::from_spans(vec![(u64::MAX - 3, vec![1, 2, 3, 4, 5, 6, 7, 8])]);
        assert_eq!(&*img.bytes(u64::MAX - 3, 3).unwrap(), &[1, 2, 3]);
        assert_eq!(&*img.bytes(u64::MAX - 1, 1).unwrap(), &[3]);
        // Bytes past 2^64 are no address (a range's end must be one).
        assert!(img.bytes(u64::MAX - 3, 4).is_none());
        assert!(img.u32(u64::MAX - 3).is_none());
        assert!(img.u32(0).is_none());
        assert!(img.bytes(u64::MAX - 1, u64::MAX).is_none());
    }

    #[test]
    fn answers_what_a_bulk_image_answers_reading_far_less() {
        let mut bulk_ram = Ram { reads: 0, bytes: 0 };
        let bulk = MemImage::read(&mut bulk_ram, &[(0x1000, 0x10), (0x1100, 0x7f00)]).unwrap();
        let mut ram = Ram { reads: 0, bytes: 0 };
        let mut r = reader(&mut ram, 1000);
        // Headers 0x400 apart, accesses across chunk edges, one outside every span.
        for a in (0x1000u64..0x9000).step_by(0x400) {
            for (off, len) in [(0, 4), (60, 8), (3, 1)] {
                let got = r.bytes(a + off, len).map(|b| b.into_owned());
                let want = bulk.bytes(a + off, len).map(|b| b.into_owned());
                assert_eq!(got, want, "{:#x}", a + off);
            }
        }
        assert_eq!(r.bytes(0x8ffe, 4), None);
        assert_eq!(r.bytes(0x9000 - 8, 0).map(|b| b.len()), Some(0));
        assert_eq!(r.bytes(0x9000, 1), None);
        assert_eq!(r.strategy(), ReadStrategy::Sparse);
        let (trips, bytes) = r.cost();
        // One chunk plus one read-ahead chunk per header, never the 32 KiB.
        assert!(bytes <= 32 * 2 * CHUNK + 2 * CHUNK, "{bytes} bytes");
        assert!(trips <= 33, "{trips} round trips");
        assert!(r.take_error().is_none());
    }
}
