//! `--keep-cycles N|all` and `keep_cycles` in `[trace]`: how many observed cycles an audit keeps
//! in full at each end of a long run (the engine folds the ones between).

use serde::Deserialize;

/// How many cycles to keep in full at each end: a number, or `all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum KeepCycles {
    /// This many at each end (at least 1).
    Count(u64),
    /// Every cycle.
    Word(AllCycles),
}

/// The word `all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AllCycles {
    /// Every cycle.
    All,
}

impl KeepCycles {
    /// Cycles kept at each end; `None` for all. A count of 0 is refused: it would keep no
    /// cycle to compare the folded ones with.
    pub fn count(self) -> Result<Option<u64>, String> {
        match self {
            KeepCycles::Count(0) => {
                Err("keep_cycles: 0 keeps no cycle; use 1 or more, or \"all\"".into())
            }
            KeepCycles::Count(n) => Ok(Some(n)),
            KeepCycles::Word(AllCycles::All) => Ok(None),
        }
    }

    /// `N` or `all`, as the command line gives it.
    pub fn parse(s: &str) -> Result<Self, String> {
        if s.eq_ignore_ascii_case("all") {
            return Ok(KeepCycles::Word(AllCycles::All));
        }
        let n: u64 = s
            .parse()
            .map_err(|_| format!("'{s}': a number of cycles, or all"))?;
        let keep = KeepCycles::Count(n);
        keep.count()?;
        Ok(keep)
    }
}

impl std::fmt::Display for KeepCycles {
    /// As the command line takes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeepCycles::Count(n) => write!(f, "{n}"),
            KeepCycles::Word(AllCycles::All) => f.write_str("all"),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_count_is_positive_or_all() {
        assert_eq!(
            KeepCycles::parse("ALL"),
            Ok(KeepCycles::Word(AllCycles::All))
        );
        assert_eq!(KeepCycles::parse("3"), Ok(KeepCycles::Count(3)));
        assert_eq!(KeepCycles::parse("3").unwrap().to_string(), "3");
        assert!(
            KeepCycles::parse("0")
                .unwrap_err()
                .contains("0 keeps no cycle")
        );
        assert!(KeepCycles::parse("x").is_err());
    }
}
