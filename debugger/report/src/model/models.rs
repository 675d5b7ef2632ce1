//! Cycles by model: where a firmware alternates between models (a keyword model one cycle, a
//! gesture model the next), each model's cycles and the free bytes they lost, so that a leak
//! in one model's cycles is told as that model's instead of averaged over every cycle. The
//! engine keys the cycles (`memlife_audit::observers::models`); the report lists the models
//! only when there were at least two.

use serde::{Deserialize, Serialize};

/// One model's cycles.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct ModelCycles {
    /// Its name, as the firmware gives it (a name string the key leads to, a symbol, or the
    /// key itself).
    pub name: String,
    /// The value that tells it apart: the argument of the cycle's load call (a pointer to a
    /// model descriptor or its bytes, or an index).
    pub key: u64,
    /// Its cycles observed.
    pub cycles: u64,
    /// Its first cycle (1-based, over the audit).
    pub first_cycle: u64,
    /// Its last cycle.
    pub last_cycle: u64,
    /// The cycles from one of its cycles to its next, when always the same (3: every 3rd
    /// cycle); absent after a single cycle, or when the spacing varies.
    pub every: Option<u64>,
    /// Its cycles whose loss was measured: every one after the audit's first cycle.
    pub measured: u64,
    /// Free bytes its measured cycles lost in all, each from the end of the cycle before it to
    /// its own end (negative: gained).
    pub lost: i64,
    /// The largest loss of one of its measured cycles.
    pub most: i64,
    /// The smallest.
    pub least: i64,
}

/// `1st`, `2nd`, `3rd`, `4th`, `11th`, `21st`...
fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

impl ModelCycles {
    /// When its cycles come, of the `total` observed: `every 3rd cycle`, `every cycle`, or
    /// `2 of the 9 cycles`.
    pub fn when(&self, total: u64) -> String {
        match self.every {
            Some(1) => "every cycle".into(),
            Some(n) if self.cycles > 1 => format!("every {} cycle", ordinal(n)),
            _ => format!("{} of the {total} cycles", self.cycles),
        }
    }

    /// What its cycles lost, when they lost anything: `24 B per cycle of micro_speech (every
    /// 3rd cycle)`, `up to 48 B per cycle of ...` when its cycles lost different amounts.
    pub fn leak_text(&self, total: u64) -> Option<String> {
        if self.measured == 0 || self.most <= 0 {
            return None;
        }
        let amount = if self.least == self.most {
            format!("{} B", self.most)
        } else {
            format!("up to {} B", self.most)
        };
        Some(format!(
            "{amount} per cycle of {} ({})",
            self.name,
            self.when(total)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(every: Option<u64>, cycles: u64, most: i64, least: i64) -> ModelCycles {
        ModelCycles {
            name: "micro_speech".into(),
            key: 0x0800_1234,
            cycles,
            first_cycle: 2,
            last_cycle: 8,
            every,
            measured: cycles,
            lost: most * cycles as i64,
            most,
            least,
        }
    }

    #[test]
    fn a_models_leak_is_told_per_cycle_of_that_model() {
        assert_eq!(
            model(Some(3), 3, 24, 24).leak_text(9).as_deref(),
            Some("24 B per cycle of micro_speech (every 3rd cycle)")
        );
        assert_eq!(
            model(Some(2), 2, 64, 32).leak_text(4).as_deref(),
            Some("up to 64 B per cycle of micro_speech (every 2nd cycle)")
        );
        assert_eq!(
            model(None, 1, 24, 24).leak_text(3).as_deref(),
            Some("24 B per cycle of micro_speech (1 of the 3 cycles)")
        );
        assert_eq!(model(Some(3), 3, 0, 0).leak_text(9), None);
        assert_eq!(model(Some(1), 4, 0, 0).when(4), "every cycle");
        let ords: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 101].map(ordinal).to_vec();
        assert_eq!(
            ords,
            [
                "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"
            ]
        );
    }
}
