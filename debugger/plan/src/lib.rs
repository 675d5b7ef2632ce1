//! memlife's audit plan: `memlife.toml` and the command line's flags resolved once, in one
//! place, into what to run, on which target, with which settings and where the results go.
//!
//! The command line fills [`AuditFlags`] from its flags and [`Environment`] from memlife's
//! environment variables (this crate knows no flag parser and reads no variable);
//! [`AuditPlan::resolve`] reads the settings file, lets each flag win over it, fills in the
//! bundled firmware's lifecycle where neither says anything, and checks every value before any
//! target is touched. The names the user gave are then checked against the firmware
//! ([`AuditPlan::check_names`]). The engine gets its part, [`memlife_audit::EngineSettings`],
//! as plain values.
//!
//! ```no_run
//! use memlife_plan::{AuditFlags, AuditPlan, Environment};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let flags = AuditFlags {
//!     script: Some("scripts/leak.rhai".into()),
//!     config: Some("examples/healthy/memlife.toml".into()),
//!     ..AuditFlags::default()
//! };
//! let plan = AuditPlan::resolve(flags, &Environment::default())?;
//! let symbols = memlife_dwarf::Symbols::load(&plan.elf)?;
//! plan.check_names(&symbols)?;
//! println!("{} on {} with {}", plan.script.display(), plan.target.describe(), plan.engine.method);
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//! - [`file`](mod@file): `memlife.toml` as written ([`ConfigFile`]): read, names checked, values checked,
//!   paths made relative to it, deprecated budget names renamed.
//! - `schema`: the tables and keys the file may have, and the nearest-name errors.
//! - `scope`: `[phases]` roles limited to a task's calls or a caller's.
//! - `trace_scope`: `[trace] scope` as written (a word or a list of phases).
//! - [`flags`]: the command line's flags and environment as plain data.
//! - [`plan`]: [`AuditPlan`], the resolution of both.
//! - [`target`]: which target, flags over `[target]`; `serial`: [`SerialChoice`], where a
//!   QEMU's serial output goes.
//! - [`defaults`]: the bundled firmware's lifecycle names, and what `monitor audit` runs with.
//! - [`names`]: the settings' names checked against the firmware.
//! - [`keep_cycles`]: `--keep-cycles N|all`.
//! - [`matrix`]: the `[[matrix]]` entries of a wide run.
//! - [`error`]: [`PlanError`], why memlife.toml and the flags make no plan.

#![deny(missing_docs)]

pub mod defaults;
pub mod error;
pub mod file;
pub mod flags;
pub mod keep_cycles;
pub mod matrix;
pub mod names;
pub mod plan;
mod schema;
mod scope;
mod serial;
pub mod target;
mod trace_scope;

pub use error::PlanError;
pub use file::{ConfigFile, Expectation};
pub use flags::{AuditFlags, Environment, HeapFlags, Outputs, TargetFlags};
pub use keep_cycles::KeepCycles;
pub use plan::{AuditPlan, HeapPlan, default_config};
pub use target::{ProbeText, SerialChoice, TargetPlan};
