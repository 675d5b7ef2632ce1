//! What one build of an interpreter asked of its arena, in order, and the smallest arena that
//! holds it: persistent allocations from the tail (each aligned down as TFLM aligns it),
//! temporaries that come and go (below the tail and above the head), and the head (the planned
//! activations and scratch buffers) once it is laid out. A run-time observer records the
//! demand as the build makes it; [`ArenaDemand::smallest`] replays it for candidate sizes.
//!
//! Why replay rather than add: a tail allocation is aligned down from the tail's current
//! address, so its padding depends on where the arena ends (`start + bytes`, modulo the
//! alignment). A smaller arena can need less padding than the one observed (magic_wand in the
//! firmware README: 12 bytes less at 15652 than at 16384), so the sum of what one arena held is
//! not the smallest that works. Replaying the requests as TFLM makes them, for each candidate
//! size, is exact.

use serde::Serialize;

use crate::arena::ARENA_ALIGNMENT;

/// A persistent (or temporary) allocation from the tail: the bytes asked and the alignment the
/// allocator was given (`AllocateFromTail(size, alignment)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TailRequest {
    /// Bytes asked.
    pub bytes: u64,
    /// Alignment asked (a power of two; 0 and 1 mean none).
    pub alignment: u64,
}

/// One thing a build asked of its arena, in the order it asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum DemandStep {
    /// A persistent allocation: it stays.
    Tail(TailRequest),
    /// A temporary peak: `tail` allocations below the tail and `head` bytes above the head, at
    /// once, all released afterwards (2020: the plan's `AllocationInfo` array below the tail
    /// and the greedy planner's arrays above the head).
    Temporary {
        /// Temporary allocations from the tail, in order.
        tail: Vec<TailRequest>,
        /// Bytes needed above the head.
        head: u64,
    },
    /// The non-persistent section (the head) is now `bytes` from the arena's aligned start,
    /// until the next `Head` step: 2020 lays it out once, after the plan; current TFLM also
    /// moves it while the model is prepared (the scratch requests' buffer) and gives it back
    /// before committing the plan.
    Head {
        /// Its length.
        bytes: u64,
    },
}

/// Where an arena of a given size falls short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shortfall {
    /// The index of the step that does not fit.
    pub step: usize,
    /// Bytes that step lacks in that arena.
    pub missing: u64,
}

/// What one build asked of its arena (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ArenaDemand {
    /// In the order the build made them.
    pub steps: Vec<DemandStep>,
}

fn align_down(addr: u64, alignment: u64) -> u64 {
    if alignment <= 1 {
        addr
    } else {
        addr - addr % alignment
    }
}

/// Where the tail ends up after `requests` from `tail`, or the bytes missing when one of them
/// would go below `floor` (TFLM refuses an allocation that would cross the head).
fn from_tail(mut tail: u64, requests: &[TailRequest], floor: u64) -> Result<u64, u64> {
    for r in requests {
        let Some(below) = tail.checked_sub(r.bytes) else {
            return Err(r.bytes.saturating_sub(tail).saturating_add(floor));
        };
        let placed = align_down(below, r.alignment);
        if placed < floor {
            return Err(floor - placed);
        }
        tail = placed;
    }
    Ok(tail)
}

impl ArenaDemand {
    /// Whether an arena of `bytes` handed over at `start` holds the demand: replayed as TFLM
    /// does (the start aligned up to 16, every tail allocation aligned down from the end).
    pub fn fit(&self, start: u64, bytes: u64) -> Result<(), Shortfall> {
        let head_start = start
            .checked_next_multiple_of(ARENA_ALIGNMENT)
            .unwrap_or(u64::MAX);
        let end = start.saturating_add(bytes);
        let mut tail = end;
        let mut head = head_start;
        if end < head_start {
            return Err(Shortfall {
                step: 0,
                missing: head_start - end,
            });
        }
        for (i, step) in self.steps.iter().enumerate() {
            let short = |missing: u64| Shortfall { step: i, missing };
            match step {
                DemandStep::Tail(r) => {
                    tail = from_tail(tail, std::slice::from_ref(r), head).map_err(short)?;
                }
                DemandStep::Temporary {
                    tail: requests,
                    head: above,
                } => {
                    let low = from_tail(tail, requests, head).map_err(short)?;
                    let top = head.saturating_add(*above);
                    if top > low {
                        return Err(short(top - low));
                    }
                }
                DemandStep::Head { bytes } => {
                    let top = head_start.saturating_add(*bytes);
                    if top > tail {
                        return Err(short(top - tail));
                    }
                    head = top;
                }
            }
        }
        Ok(())
    }

    /// Bytes asked, padding left out: no arena smaller than this (plus the start's alignment)
    /// can hold the demand.
    pub fn lower_bound(&self) -> u64 {
        let mut persistent = 0u64;
        let mut need = 0u64;
        let mut head = 0u64;
        for step in &self.steps {
            match step {
                DemandStep::Tail(r) => {
                    persistent = persistent.saturating_add(r.bytes);
                    need = need.max(persistent.saturating_add(head));
                }
                DemandStep::Temporary { tail, head: above } => {
                    let below = tail.iter().fold(0u64, |s, r| s.saturating_add(r.bytes));
                    let at_once = persistent
                        .saturating_add(below)
                        .saturating_add(head)
                        .saturating_add(*above);
                    need = need.max(at_once);
                }
                DemandStep::Head { bytes } => {
                    head = *bytes;
                    need = need.max(persistent.saturating_add(head));
                }
            }
        }
        need.max(persistent.saturating_add(head))
    }

    /// The most padding the replay can add: each alignment less one, and the start's.
    fn padding_bound(&self) -> u64 {
        let pad = |r: &TailRequest| r.alignment.saturating_sub(1);
        self.steps
            .iter()
            .map(|s| match s {
                DemandStep::Tail(r) => pad(r),
                DemandStep::Temporary { tail, .. } => {
                    tail.iter().fold(0u64, |a, r| a.saturating_add(pad(r)))
                }
                DemandStep::Head { .. } => 0,
            })
            .fold(ARENA_ALIGNMENT, u64::saturating_add)
    }

    /// The smallest arena handed over at `start` that holds the demand: every size from the
    /// lower bound up is replayed until one fits. One always does within the lower bound plus
    /// every alignment's padding, so the search ends; `None` only when that overflows.
    pub fn smallest(&self, start: u64) -> Option<u64> {
        let from = self.lower_bound();
        let to = from.checked_add(self.padding_bound())?;
        (from..=to).find(|&n| self.fit(start, n).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(bytes: u64, alignment: u64) -> DemandStep {
        DemandStep::Tail(TailRequest { bytes, alignment })
    }

    fn req(bytes: u64, alignment: u64) -> TailRequest {
        TailRequest { bytes, alignment }
    }

    /// An arena at a 16-aligned start with nothing asked fits from 0 bytes; one whose start
    /// is off 16 loses the bytes up to the next 16 first.
    #[test]
    fn an_empty_demand_needs_only_the_alignment_of_the_start() {
        let d = ArenaDemand::default();
        assert_eq!(d.smallest(0x2000_0000), Some(0));
        assert_eq!(d.smallest(0x2000_0008), Some(8));
        assert_eq!(
            d.fit(0x2000_0008, 4),
            Err(Shortfall {
                step: 0,
                missing: 4
            })
        );
    }

    /// Padding depends on where the arena ends: a 40-byte request aligned to 16 below a tail
    /// that ends 12 bytes past 16 takes 52 bytes; 12 bytes less arena takes 40.
    #[test]
    fn tail_padding_is_replayed_for_each_candidate_end() {
        // 20 B object (align 4) at the top, then 40 B aligned to 16.
        let d = ArenaDemand {
            steps: vec![tail(20, 4), tail(40, 16)],
        };
        // End at +64: 20 -> 44, 40 from 44 -> 4 aligned down to 0: 64 bytes used.
        assert!(d.fit(0x1000, 64).is_ok());
        // End at +60: 20 -> 40, 40 from 40 -> 0: fits in 60 (the 4 bytes of padding gone).
        assert!(d.fit(0x1000, 60).is_ok());
        assert_eq!(
            d.fit(0x1000, 59),
            Err(Shortfall {
                step: 1,
                missing: 16
            })
        );
        assert_eq!(d.smallest(0x1000), Some(60));
        assert_eq!(d.lower_bound(), 60);
    }

    /// Every tail position is a non-decreasing function of the arena's end, so what fits at
    /// N fits at N + 1: the smallest size that fits is the minimum, and 16 bytes less fails.
    #[test]
    fn the_search_finds_the_smallest_size_that_fits() {
        let d = ArenaDemand {
            steps: vec![tail(4, 4), tail(16, 16), tail(16, 16)],
        };
        // 36 asked; at 36 the end is 4 past 16: 4 -> 32, 16 -> 16, 16 -> 0.
        assert_eq!(d.smallest(0), Some(36));
        for n in 36..100 {
            assert!(d.fit(0, n).is_ok(), "{n}");
        }
        assert!(d.fit(0, 35).is_err() && d.fit(0, 20).is_err());
        // Ending 8 past 16 instead: 4 -> 4 past, 16 -> 0 past, 16: 4 bytes of padding more.
        assert_eq!(d.smallest(8), Some(8 + 36));
    }

    /// 2020's plan: the AllocationInfo array below the tail and 36 B per planned buffer above
    /// the head, at once, then the head (figures shaped like hello_world's in the firmware
    /// README: tail 1424, 240 B of AllocationInfo, 6 buffers, head 48).
    #[test]
    fn the_plans_temporary_peak_can_set_the_minimum_rather_than_the_head() {
        let mut steps = vec![tail(20, 4)];
        // 1404 B of other tail allocations, 4-aligned, one of them 16-aligned.
        steps.push(tail(768, 4));
        steps.push(tail(636, 4));
        steps.push(DemandStep::Temporary {
            tail: vec![req(240, 4)],
            head: 216,
        });
        steps.push(DemandStep::Head { bytes: 48 });
        let d = ArenaDemand { steps };
        assert_eq!(d.lower_bound(), 1424 + 240 + 216);
        assert_eq!(d.smallest(0x2000_0ac0), Some(1880));
        // The head alone would have allowed 1472.
        let without_plan = ArenaDemand {
            steps: vec![tail(20, 4), tail(1404, 4), DemandStep::Head { bytes: 48 }],
        };
        assert_eq!(without_plan.smallest(0x2000_0ac0), Some(1472));
        // One byte short: the temporary step is where it fails.
        assert_eq!(
            d.fit(0x2000_0ac0, 1879),
            Err(Shortfall {
                step: 3,
                missing: 4
            })
        );
    }

    /// micro_speech in arena-tight (firmware README): tail 1056, head 5968 in 6144 B: the head
    /// does not fit, 880 B missing; the smallest arena is 7024.
    #[test]
    fn a_head_given_back_leaves_its_room_to_the_tail() {
        // Current TFLM: the scratch requests' buffer (96 B) at the head while preparing, given
        // back before the plan; then 64 B more of tail and a committed head of 48 B. The room
        // the buffer took is free again: 32 + 64 + 48, not 32 + 64 + 96.
        let d = ArenaDemand {
            steps: vec![
                tail(32, 16),
                DemandStep::Head { bytes: 96 },
                DemandStep::Head { bytes: 0 },
                tail(64, 16),
                DemandStep::Head { bytes: 48 },
            ],
        };
        assert_eq!(d.smallest(0x1000), Some(144));
        assert_eq!(d.fit(0x1000, 128).unwrap_err().missing, 16);
        // While it is held, it counts: 32 + 96.
        let held = ArenaDemand {
            steps: d.steps[..2].to_vec(),
        };
        assert_eq!(held.smallest(0x1000), Some(128));
    }

    #[test]
    fn a_head_that_does_not_fit_names_the_bytes_missing() {
        let d = ArenaDemand {
            steps: vec![
                tail(1056, 16),
                DemandStep::Temporary {
                    tail: vec![req(160, 4)],
                    head: 144,
                },
                DemandStep::Head { bytes: 5968 },
            ],
        };
        assert_eq!(
            d.fit(0x2000_4860, 6144),
            Err(Shortfall {
                step: 2,
                missing: 880
            })
        );
        assert_eq!(d.smallest(0x2000_4860), Some(7024));
    }

    /// Whatever the figures (read from a target), nothing overflows or panics.
    #[test]
    fn huge_figures_neither_overflow_nor_panic() {
        let d = ArenaDemand {
            steps: vec![
                tail(u64::MAX, 16),
                DemandStep::Temporary {
                    tail: vec![req(u64::MAX, 0)],
                    head: u64::MAX,
                },
                DemandStep::Head { bytes: u64::MAX },
            ],
        };
        assert!(d.fit(u64::MAX - 3, u64::MAX).is_err());
        assert!(d.fit(0, 0).is_err());
        assert_eq!(d.lower_bound(), u64::MAX);
        assert_eq!(d.smallest(0), None);
        let lone = ArenaDemand {
            steps: vec![tail(8, u64::MAX)],
        };
        assert!(lone.fit(0, 64).is_err() || lone.fit(0, 64).is_ok());
    }
}
