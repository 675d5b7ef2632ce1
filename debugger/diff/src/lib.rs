//! `memlife diff`: memory regressions between two builds, from their audit JSON reports.
//!
//! Pure logic over reports, no target: [`parse`] reads a report (the one model of
//! `memlife-report`, [`AuditReport`], read defensively: fields it does not know are ignored,
//! fields it lacks take defaults), [`diff`] aligns the two runs and compares every figure the audit checks use,
//! [`Budgets`] (`[diff]` in memlife.toml) say which change is too much, and [`text`] renders the
//! result for a terminal and for a pull request. `memlife audit --baseline` compares the report
//! it just made, in memory, with one read from JSON.
//!
//! Alignment: phases by role and cycle (the k-th `run` of cycle 2 is the k-th `run` of cycle 2),
//! spans by the label the script gave them or else by position, allocation sites by function,
//! file, line and call chain, or by function and call chain alone when a line moved. Two
//! reports with no phase role, or no phase function and no site function, in common are
//! refused ([`DiffError::Unrelated`]).
//!
//! ```no_run
//! use memlife_diff::{Budgets, diff, parse, text};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let base = parse(&std::fs::read("base.json")?, "BASE")?;
//! let head = parse(&std::fs::read("head.json")?, "HEAD")?;
//! let d = diff(&base, &head, ("BASE", "HEAD"), &Budgets::default())?;
//! print!("{}", text::table(&d, false));
//! println!("{:?}", d.verdict);
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//! - [`read`]: the audit JSON reports, read and refused when there is nothing to compare.
//! - [`figures`]: the figures of one report, under keys that align.
//! - [`sites`]: allocation sites matched between two reports.
//! - [`budgets`]: the `diff` table of memlife.toml.
//! - [`compare`]: the diff.
//! - `error`: [`DiffError`], why two reports could not be compared; [`BudgetError`], why a
//!   `[diff]` table was refused.
//! - [`text`]: terminal table and markdown.

#![deny(missing_docs)]

pub mod budgets;
pub mod compare;
mod error;
pub mod figures;
pub mod read;
pub mod sites;
pub mod text;

pub use budgets::Budgets;
pub use compare::{Change, Diff, Verdict, diff};
pub use error::{BudgetError, DiffError};
pub use memlife_report::AuditReport;
pub use read::{parse, require_phases};
