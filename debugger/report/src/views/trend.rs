//! The leak trend: free bytes after every release, lifecycle after lifecycle. Flat is healthy;
//! a staircase down is a leak, and its step is the bytes lost per lifecycle. Over a long run the
//! folded cycles join in from their series: each bucket of cycles by its highest free value at
//! its first cycle and its lowest at its last.

use crate::AuditReport;
use crate::views::signed_delta;

/// Free bytes after each release phase.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    /// Free bytes after each kept release, in order.
    pub free: Vec<u64>,
    /// Where each value is drawn: the release's cycle (its number among the releases when
    /// cycles were not observed), folded cycles included, in order.
    pub at: Vec<(f64, u64)>,
    /// Largest free block after each release.
    pub largest: Vec<u64>,
    /// Drop from the first to the last release (positive: lost).
    pub lost: i64,
    /// How many kept releases come before the folded cycles (all of them when none were
    /// folded): where the folded range goes in a list of `free`.
    pub before_fold: usize,
}

impl Trend {
    /// The trend, when any release phase ran.
    pub fn of(report: &AuditReport) -> Option<Trend> {
        let releases: Vec<_> = report
            .phases
            .iter()
            .filter(|p| report.role_of(p) == "release")
            .collect();
        if releases.is_empty() {
            return None;
        }
        let free: Vec<u64> = releases.iter().map(|p| p.after.free).collect();
        let largest = releases.iter().map(|p| p.after.largest_free).collect();
        let mut at: Vec<(f64, u64)> = releases
            .iter()
            .enumerate()
            .map(|(i, p)| (p.cycle.unwrap_or(i as u64 + 1) as f64, p.after.free))
            .collect();
        let mut before_fold = releases.len();
        if let Some(f) = &report.folded {
            for b in &f.series {
                at.push((b.first as f64, b.end_free_max));
                if b.last > b.first || b.end_free_min != b.end_free_max {
                    at.push((b.last as f64, b.end_free_min));
                }
            }
            at.sort_by(|a, b| a.0.total_cmp(&b.0));
            before_fold = releases
                .iter()
                .take_while(|p| p.cycle.is_some_and(|c| c < f.first_cycle))
                .count();
        }
        // `releases` is not empty (checked above), so neither is `free`.
        let lost = match (free.first(), free.last()) {
            (Some(&first), Some(&last)) => signed_delta(last, first),
            _ => 0,
        };
        Some(Trend {
            free,
            at,
            largest,
            lost,
            before_fold,
        })
    }

    /// Whether free memory fell between any two releases.
    pub fn leaking(&self) -> bool {
        self.at.windows(2).any(|w| w[1].1 < w[0].1)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn releases(free: &[u64], cycles: bool) -> AuditReport {
        let phases: Vec<serde_json::Value> = free
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut p = serde_json::json!({"function": "model_release", "after": {"free": f, "largest_free": f / 2}});
                if cycles {
                    p["cycle"] = [1u64, 2, 9, 10][i].into();
                }
                p
            })
            .collect();
        AuditReport::from_value(serde_json::json!({"run": {}, "phases": phases,
            "phase_aliases": {"release": "model_release"}}))
        .unwrap()
    }

    /// The figures the audit page's leak trend showed before the views were shared.
    #[test]
    fn a_staircase_down_is_a_leak_and_flat_is_not() {
        let t = Trend::of(&releases(&[9000, 8632, 8264], false)).unwrap();
        assert_eq!(t.at, [(1.0, 9000), (2.0, 8632), (3.0, 8264)]);
        assert_eq!((t.lost, t.leaking()), (736, true));
        assert_eq!(t.largest, [4500, 4316, 4132]);
        let flat = Trend::of(&releases(&[9000, 9000], false)).unwrap();
        assert_eq!((flat.lost, flat.leaking(), flat.before_fold), (0, false, 2));
        assert!(Trend::of(&AuditReport::default()).is_none());
    }

    /// Folded cycles join the kept releases by their series, in cycle order.
    #[test]
    fn folded_cycles_join_in_from_their_series() {
        let mut r = releases(&[9000, 8632, 6056, 5688], true);
        r.folded = Some(crate::model::Folded {
            first_cycle: 3,
            last_cycle: 8,
            series: vec![crate::model::CycleBucket {
                first: 3,
                last: 8,
                end_free_min: 6424,
                end_free_max: 8264,
                peak_used: 0,
            }],
            ..crate::model::Folded::default()
        });
        let t = Trend::of(&r).unwrap();
        let xs: Vec<f64> = t.at.iter().map(|a| a.0).collect();
        assert_eq!(xs, [1.0, 2.0, 3.0, 8.0, 9.0, 10.0]);
        assert_eq!(t.at[3], (8.0, 6424));
        assert_eq!((t.free.len(), t.before_fold, t.lost), (4, 2, 3312));
    }
}
