//! Budgets on the change, from `[diff]` in memlife.toml:
//!
//! ```toml
//! [diff]
//! bytes = 256        # any byte figure may grow (or free memory shrink) by this much...
//! percent = 5        # ...or by this share of its BASE value, whichever is larger
//! count = 4          # allocation counts
//! ratio = 0.05       # largest/total free after release
//! [diff.build_step]  # per figure: `bytes` (or `count`, `ratio`: its unit) and `percent`
//! bytes = 1024
//! ```
//!
//! A change exceeds its budget when it is for the worse by more than both limits: the absolute
//! one keeps small figures from failing on a few bytes, the relative one keeps large figures
//! from failing on noise. A figure that was 0 has no relative slack. Improvements never exceed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::BudgetError;
use crate::figures::{Kind, Unit};

/// Default absolute slack for byte figures.
pub const BYTES: f64 = 256.0;
/// Default absolute slack for allocation counts.
pub const COUNT: f64 = 4.0;
/// Default absolute slack for the largest/total free ratio.
pub const RATIO: f64 = 0.05;
/// Default relative slack, percent of the BASE value.
pub const PERCENT: f64 = 5.0;

/// The two limits of one figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Limit {
    /// Absolute slack, in the figure's unit.
    pub absolute: f64,
    /// Relative slack, percent of the BASE value.
    pub percent: f64,
}

impl Limit {
    /// Whether going from `base` to `head` is for the worse by more than both limits.
    pub fn exceeded(&self, kind: Kind, base: f64, head: f64) -> bool {
        let worse = if kind.higher_is_better() {
            base - head
        } else {
            head - base
        };
        worse > self.absolute + 1e-9 && worse > self.percent / 100.0 * base.abs() + 1e-9
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Override {
    absolute: Option<f64>,
    percent: Option<f64>,
}

/// The budgets of `[diff]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(try_from = "toml::Table")]
pub struct Budgets {
    bytes: Option<f64>,
    count: Option<f64>,
    ratio: Option<f64>,
    percent: Option<f64>,
    per: BTreeMap<Kind, Override>,
}

fn number(v: &toml::Value, key: &str) -> Result<f64, BudgetError> {
    let n = match v {
        toml::Value::Integer(i) => *i as f64,
        toml::Value::Float(f) => *f,
        _ => {
            return Err(BudgetError::NotANumber {
                key: key.to_owned(),
                found: v.type_str(),
            });
        }
    };
    if !n.is_finite() || n < 0.0 {
        return Err(BudgetError::Negative {
            key: key.to_owned(),
            value: n,
        });
    }
    Ok(n)
}

fn nearest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    candidates
        .map(|c| (strsim::levenshtein(name, c), c))
        .filter(|(d, c)| *d <= (name.len().max(c.len()) / 2).max(2))
        .min()
        .map_or_else(String::new, |(_, c)| format!("; did you mean `{c}`?"))
}

impl TryFrom<toml::Table> for Budgets {
    type Error = BudgetError;

    fn try_from(table: toml::Table) -> Result<Self, BudgetError> {
        let mut b = Budgets::default();
        for (key, value) in &table {
            let what = format!("[diff] {key}");
            match key.as_str() {
                "bytes" => b.bytes = Some(number(value, &what)?),
                "count" => b.count = Some(number(value, &what)?),
                "ratio" => b.ratio = Some(number(value, &what)?),
                "percent" => b.percent = Some(number(value, &what)?),
                _ => {
                    let top = ["bytes", "count", "ratio", "percent"];
                    let Some(kind) = Kind::from_key(key) else {
                        let names = top.into_iter().chain(Kind::ALL.iter().map(|k| k.key()));
                        return Err(BudgetError::UnknownKey {
                            key: key.clone(),
                            table: "[diff]".into(),
                            hint: nearest(key, names),
                        });
                    };
                    let Some(inner) = value.as_table() else {
                        return Err(BudgetError::NotATable {
                            figure: key.clone(),
                            unit: kind.unit().key(),
                        });
                    };
                    let mut o = Override::default();
                    for (k, v) in inner {
                        let what = format!("[diff.{key}] {k}");
                        if k == "percent" {
                            o.percent = Some(number(v, &what)?);
                        } else if k == kind.unit().key() {
                            o.absolute = Some(number(v, &what)?);
                        } else if ["bytes", "count", "ratio"].contains(&k.as_str()) {
                            return Err(BudgetError::WrongUnit {
                                figure: key.clone(),
                                key: k.clone(),
                                unit: kind.unit().key(),
                            });
                        } else {
                            let names = [kind.unit().key(), "percent"];
                            return Err(BudgetError::UnknownKey {
                                key: k.clone(),
                                table: format!("[diff.{key}]"),
                                hint: nearest(k, names.into_iter()),
                            });
                        }
                    }
                    b.per.insert(kind, o);
                }
            }
        }
        Ok(b)
    }
}

impl Budgets {
    /// The limits of `kind`: its own table, else the figure's default, else `[diff]`'s, else
    /// memlife's.
    pub fn limit(&self, kind: Kind) -> Limit {
        let own = self.per.get(&kind).copied().unwrap_or_default();
        // A leak has no slack unless one is given: any growth of it fails.
        let strict = kind == Kind::LeakPerCycle;
        let unit = match kind.unit() {
            Unit::Bytes => self.bytes.unwrap_or(BYTES),
            Unit::Count => self.count.unwrap_or(COUNT),
            Unit::Ratio => self.ratio.unwrap_or(RATIO),
        };
        let percent = self.percent.unwrap_or(PERCENT);
        Limit {
            absolute: own.absolute.unwrap_or(if strict { 0.0 } else { unit }),
            percent: own.percent.unwrap_or(if strict { 0.0 } else { percent }),
        }
    }

    /// Parses a `[diff]` table's text (for tests and callers without a whole memlife.toml).
    pub fn from_toml(text: &str) -> Result<Self, BudgetError> {
        let table: toml::Table =
            toml::from_str(text).map_err(|e| BudgetError::Toml(e.to_string()))?;
        Budgets::try_from(table)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn defaults_per_figure_and_overrides() {
        let b = Budgets::default();
        assert_eq!(
            b.limit(Kind::BuildStep),
            Limit {
                absolute: BYTES,
                percent: PERCENT
            }
        );
        assert_eq!(b.limit(Kind::Allocs).absolute, COUNT);
        assert_eq!(
            b.limit(Kind::LeakPerCycle),
            Limit {
                absolute: 0.0,
                percent: 0.0
            }
        );
        let b = Budgets::from_toml(
            "bytes = 100\npercent = 10\n[build_step]\nbytes = 4096\n[leak_per_cycle]\nbytes = 8",
        )
        .unwrap();
        assert_eq!(
            b.limit(Kind::BuildStep),
            Limit {
                absolute: 4096.0,
                percent: 10.0
            }
        );
        assert_eq!(
            b.limit(Kind::LoadPeak),
            Limit {
                absolute: 100.0,
                percent: 10.0
            }
        );
        assert_eq!(
            b.limit(Kind::LeakPerCycle),
            Limit {
                absolute: 8.0,
                percent: 0.0
            }
        );
    }

    #[test]
    fn a_change_exceeds_only_past_both_limits_and_only_for_the_worse() {
        let l = Limit {
            absolute: 256.0,
            percent: 5.0,
        };
        assert!(l.exceeded(Kind::BuildStep, 264.0, 9488.0));
        assert!(
            !l.exceeded(Kind::BuildStep, 264.0, 500.0),
            "within the bytes"
        );
        assert!(!l.exceeded(Kind::LoadPeak, 32128.0, 33600.0), "within 5 %");
        assert!(l.exceeded(Kind::LoadPeak, 32128.0, 38272.0));
        assert!(
            !l.exceeded(Kind::BuildStep, 9488.0, 264.0),
            "an improvement"
        );
        assert!(
            l.exceeded(Kind::MinEverFree, 40176.0, 30952.0),
            "less free is worse"
        );
        assert!(!l.exceeded(Kind::MinEverFree, 30952.0, 40176.0));
        let leak = Budgets::default().limit(Kind::LeakPerCycle);
        assert!(leak.exceeded(Kind::LeakPerCycle, 0.0, 8.0));
        assert!(!leak.exceeded(Kind::LeakPerCycle, 8.0, 8.0));
    }

    #[test]
    fn wrong_keys_and_values_are_named() {
        let e = |t: &str| Budgets::from_toml(t).unwrap_err().to_string();
        assert_eq!(
            e("byte = 1"),
            "unknown key `byte` in [diff]; did you mean `bytes`?"
        );
        assert_eq!(
            e("[build_stp]\nbytes = 1"),
            "unknown key `build_stp` in [diff]; did you mean `build_step`?"
        );
        assert_eq!(
            e("[allocs]\nbytes = 1"),
            "[diff.allocs] bytes: allocs is counted in count: use `count`"
        );
        assert_eq!(
            e("[load_peak]\nprecent = 1"),
            "unknown key `precent` in [diff.load_peak]; did you mean `percent`?"
        );
        assert_eq!(
            e("bytes = \"x\""),
            "[diff] bytes must be a number, not string"
        );
        assert_eq!(
            e("percent = -1"),
            "[diff] percent must be 0 or more, not -1"
        );
        assert_eq!(
            e("load_peak = 3"),
            "[diff] load_peak must be a table: [diff.load_peak] with `bytes` and `percent`"
        );
    }
}
