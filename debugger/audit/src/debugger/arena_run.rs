//! Running a TFLM firmware until every model it builds was built (and run once, when its build
//! succeeded): the wait `memlife arena` and the scripts' `t.observe_arenas()` make. The arena
//! observer (`crate::observers::arena`) records the builds; this only decides when enough was
//! seen, from the entries of `MicroInterpreter::AllocateTensors`:
//!
//! - a model is built a second time and every build so far has ended (and, when it succeeded,
//!   has run an inference): the firmware went round its models;
//! - the program exited;
//! - no further build began within the timeout, after at least one build ended (a firmware that
//!   builds once and then runs inferences for ever);
//! - `max_builds` builds began.

use memlife_core::TargetError;
use memlife_report::model::{ArenaRecord, BuildStatus};

use super::facade::Debugger;
use super::goal::{Goal, Outcome};
use crate::error::AuditError;
use crate::observers::arena;

/// The function whose entries begin builds, in TFLM's namespace (`tflite` or `tflite::micro`:
/// `arena::hooks::find` looks in both).
const BUILD_ENTRY: &str = "MicroInterpreter::AllocateTensors";

/// Why the run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArenaEnd {
    /// This model was about to be built again (the target is halted at that
    /// `AllocateTensors` entry).
    Repeated(String),
    /// The program exited with this status.
    Exited(i32),
    /// No build began within the timeout after the last one ended (the target was halted).
    Quiet,
    /// `max_builds` builds began.
    Limit,
}

/// Whether every build has ended and, when it succeeded, has run an inference.
fn all_ended(r: &ArenaRecord) -> bool {
    !r.builds.is_empty()
        && r.builds.iter().all(|b| match b.status {
            BuildStatus::Building => false,
            BuildStatus::Ok => b.inferences > 0,
            BuildStatus::Failed => true,
        })
}

/// The model whose build just began, when an earlier build of it has ended.
fn repeated(r: &ArenaRecord) -> Option<String> {
    let (last, earlier) = r.builds.split_last()?;
    earlier
        .iter()
        .any(|b| b.model == last.model && b.status != BuildStatus::Building)
        .then(|| last.model.clone())
}

impl Debugger {
    /// The arena observer's records, when it has one and it saw a build.
    pub fn arena_record(&self) -> Option<ArenaRecord> {
        self.observer_reports()
            .into_iter()
            .find(|(name, _)| *name == arena::NAME)
            .and_then(|(_, v)| serde_json::from_value(v).ok())
    }

    /// Runs the firmware until every model it builds was built and run once (see the module
    /// doc); the arena observer's record at the end.
    pub fn observe_arenas(
        &mut self,
        max_builds: u64,
    ) -> Result<(ArenaEnd, ArenaRecord), AuditError> {
        let (entry_name, addr) =
            match arena::hooks::find_named(self.session.symbols(), BUILD_ENTRY, None) {
                Some(found) => found,
                None => {
                    // Not there: the error names the function and the nearest ones.
                    let name = format!("tflite::{BUILD_ENTRY}");
                    let entry = self.function(&name)?.entry;
                    (name, entry)
                }
            };
        if self.arena_record().is_none() && !self.has_arena_observer() {
            return Err(AuditError::Config(
                "this firmware's TensorFlow Lite Micro cannot be observed while it builds (the arena observer follows TFLM of 2020 and current TFLM with one arena)".into(),
            ));
        }
        let mut begun = 0u64;
        loop {
            let mut goal = Goal::Entry {
                function: entry_name.clone(),
                addr,
                remaining: 1,
            };
            let reached = loop {
                match self.run(&mut goal) {
                    Ok(Outcome::Reached) => break Ok(()),
                    Ok(Outcome::Hook(_)) => {}
                    Err(e) => break Err(e),
                }
            };
            let record = self.arena_record().unwrap_or_default();
            match reached {
                Ok(()) => {}
                Err(AuditError::Target(TargetError::Exited(status))) => {
                    return Ok((ArenaEnd::Exited(status), record));
                }
                Err(AuditError::NotReached { .. }) if all_ended(&record) => {
                    return Ok((ArenaEnd::Quiet, record));
                }
                Err(e) => return Err(e),
            }
            begun += 1;
            if let Some(model) = repeated(&record) {
                let earlier = record.builds.split_last().map_or(&[][..], |(_, e)| e);
                if all_ended(&ArenaRecord {
                    builds: earlier.to_vec(),
                    ..ArenaRecord::default()
                }) {
                    return Ok((ArenaEnd::Repeated(model), record));
                }
            }
            if begun >= max_builds {
                return Ok((ArenaEnd::Limit, record));
            }
        }
    }

    /// Whether the arena observer was added (the ELF has a TFLM it follows).
    fn has_arena_observer(&self) -> bool {
        self.extensions.names().any(|n| n == arena::NAME)
    }
}

#[cfg(test)]
mod tests {
    use memlife_report::model::ArenaBuild;

    use super::*;

    fn build(model: &str, status: BuildStatus, inferences: u64) -> ArenaBuild {
        ArenaBuild {
            model: model.into(),
            status,
            inferences,
            ..ArenaBuild::default()
        }
    }

    #[test]
    fn a_round_ends_when_a_model_comes_back_after_every_build_ended() {
        let mut r = ArenaRecord::default();
        assert!(!all_ended(&r) && repeated(&r).is_none());
        r.builds.push(build("a", BuildStatus::Ok, 1));
        r.builds.push(build("b", BuildStatus::Failed, 0));
        assert!(all_ended(&r));
        r.builds.push(build("a", BuildStatus::Building, 0));
        assert_eq!(repeated(&r).as_deref(), Some("a"));
        // A build that succeeded but never ran has not ended for the round.
        let mut r = ArenaRecord::default();
        r.builds.push(build("a", BuildStatus::Ok, 0));
        assert!(!all_ended(&r));
    }
}
