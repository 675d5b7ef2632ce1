//! TensorFlow Lite Micro's arenas as an audit saw them being built (the engine's arena
//! observer, `memlife_audit::observers::arena`): each build of an interpreter with its
//! persistent allocations step by step (the operator whose Init or Prepare asked, the category
//! TFLM's `RecordingMicroAllocator` would file it under), its temporary peaks, the arena's
//! figures at the lifecycle's boundaries, and per model the smallest arena that works. The JSON
//! keys are in docs/tflm.md ("The audit report's `arenas`").

use serde::{Deserialize, Serialize};

/// Builds listed one by one at most; more are counted (`builds_unlisted`).
pub const MAX_BUILDS: usize = 256;
/// Persistent allocations listed per build at most; more are counted (`steps_unlisted`) and
/// still summed in the categories and operators.
pub const MAX_STEPS: usize = 4096;
/// Arena figures kept per build (read at phase boundaries), the first ones.
pub const MAX_FIGURES: usize = 64;

/// The arenas an audit observed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct ArenaRecord {
    /// Which TFLM the firmware has: `2020` or `current`.
    pub generation: String,
    /// Per model, in the order each was first built: its arena and the smallest that works.
    pub models: Vec<ModelArena>,
    /// Every build observed, oldest first (the first [`MAX_BUILDS`]).
    pub builds: Vec<ArenaBuild>,
    /// Builds past those listed.
    pub builds_unlisted: u64,
}

/// One model's arena, from its last build that ran to its end (else its last build).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct ModelArena {
    /// The model: the ELF symbol of its flatbuffer (where it lies in flash, or what its RAM
    /// copy was copied from), else its operators and tensors (`model (QUANTIZE
    /// FULLY_CONNECTED; 12 tensors)`), else `model at 0x...` (its flatbuffer unreadable).
    pub model: String,
    /// Its operators in execution order.
    pub operators: Vec<String>,
    /// Its tensors (first subgraph).
    pub tensors: u64,
    /// Builds of it observed.
    pub builds: u64,
    /// The build the figures below are from ([`ArenaBuild::index`]).
    pub build: u64,
    /// The arena as the application handed it over, in bytes.
    pub arena_bytes: u64,
    /// The smallest arena that works, handed over at the same address; `None` when the build
    /// was not observed far enough to tell.
    pub needs: Option<u64>,
    /// `needs` is exact (the build ran to its end, or failed where nothing was left to ask);
    /// false: a lower bound (a tail allocation failed, and what would have come after it is
    /// unknown).
    pub exact: bool,
    /// `arena_bytes - needs`: negative when the arena is too small (the bytes missing).
    pub spare: Option<i64>,
    /// `AllocateTensors` failed in that build.
    pub failed: bool,
    /// What failed, in words ([`ArenaBuild::failure`]).
    pub failure: Option<String>,
    /// Persistent (tail) bytes at the end of that build.
    pub persistent_bytes: u64,
    /// The planned activations and scratch buffers (head bytes), or what the plan asked for
    /// when it did not fit.
    pub head_bytes: u64,
    /// The largest temporary peak of that build.
    pub temp_peak: u64,
    /// Inferences (`Invoke` returns) observed on that build.
    pub inferences: u64,
}

/// How a build ended.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum BuildStatus {
    /// Constructed; `AllocateTensors` has not returned (yet, or before the run ended).
    #[default]
    Building,
    /// `AllocateTensors` returned ok.
    Ok,
    /// `AllocateTensors` failed.
    Failed,
}

/// One interpreter's build: its construction, `AllocateTensors`, and what came after.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct ArenaBuild {
    /// 1-based, in the order the builds began.
    pub index: u64,
    /// The model ([`ModelArena::model`]).
    pub model: String,
    /// The open phase when `AllocateTensors` was called (its function), and its call.
    pub phase: Option<String>,
    /// See `phase`.
    pub call: Option<u64>,
    /// The cycle, when cycles were observed.
    pub cycle: Option<u64>,
    /// The `MicroInterpreter`.
    pub interpreter: u64,
    /// The arena allocator object (at the arena's top).
    pub allocator: u64,
    /// The arena as handed over: its address, `None` when the construction was not seen (the
    /// start is then taken as 16-aligned).
    pub arena: Option<u64>,
    /// Its bytes as handed over.
    pub arena_bytes: u64,
    /// `buffer_head_`: the arena aligned up to 16.
    pub buffer_head: u64,
    /// `buffer_tail_`: its end.
    pub buffer_tail: u64,
    /// How it ended.
    pub status: BuildStatus,
    /// What failed, in words, when it failed.
    pub failure: Option<String>,
    /// Persistent bytes when the build ended (`buffer_tail_ - tail_`).
    pub persistent_bytes: u64,
    /// Head bytes when it ended (the plan's head when it did not fit).
    pub head_bytes: u64,
    /// `arena_used_bytes()` as the firmware computes it when the build ended.
    pub arena_used_bytes: Option<u64>,
    /// The smallest arena that works for what this build asked ([`ModelArena::needs`]).
    pub needs: Option<u64>,
    /// See [`ModelArena::exact`].
    pub exact: bool,
    /// Every persistent allocation, in order (the first [`MAX_STEPS`]).
    pub steps: Vec<ArenaStep>,
    /// Steps past those listed.
    pub steps_unlisted: u64,
    /// The steps by category, as `RecordingMicroAllocator::PrintAllocations` lists them.
    pub categories: Vec<CategoryTotal>,
    /// The steps by operator (node -1: construction and setup, outside any operator).
    pub operators: Vec<OperatorTotal>,
    /// The temporary peaks.
    pub peaks: Vec<TempPeak>,
    /// `Invoke` returns observed.
    pub inferences: u64,
    /// The arena at the lifecycle's boundaries while the interpreter lived (the first
    /// [`MAX_FIGURES`]).
    pub figures: Vec<ArenaFigures>,
    /// The interpreter was destroyed.
    pub released: bool,
}

/// One persistent allocation: the tail moved down.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct ArenaStep {
    /// The node whose Init or Prepare asked; -1 outside any operator.
    pub node: i64,
    /// That node's operator (`FULLY_CONNECTED`, a custom operator's name).
    pub operator: Option<String>,
    /// `construct` (the interpreter's constructor), `setup` (`AllocateTensors` before the
    /// operators), `init`, `prepare`, `finish` (after the plan: variables).
    pub stage: String,
    /// What it holds: `RecordingMicroAllocator`'s category (`kOpData`,
    /// `kPersistentBufferData`...) or ours where TFLM records none (docs/tflm.md).
    pub category: String,
    /// Bytes asked, when the allocator's entry was seen.
    pub requested: Option<u64>,
    /// Alignment asked.
    pub alignment: Option<u64>,
    /// How far the tail moved: the bytes asked plus alignment padding.
    pub bytes: u64,
    /// Where it was placed (the new tail); 0 when it failed.
    pub address: u64,
    /// The function that asked (the allocator's caller).
    pub site: Option<String>,
    /// The allocator refused it (the arena is too small).
    pub failed: bool,
}

/// The steps of one category.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct CategoryTotal {
    /// The category ([`ArenaStep::category`]).
    pub category: String,
    /// Bytes asked.
    pub requested_bytes: u64,
    /// Bytes the tail moved (padding included).
    pub used_bytes: u64,
    /// Allocations.
    pub count: u64,
}

/// The steps of one operator (a node of the graph).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct OperatorTotal {
    /// The node; -1 for what the interpreter allocated outside any operator.
    pub node: i64,
    /// Its operator; `setup` for node -1.
    pub operator: String,
    /// Bytes its Init made the tail move.
    pub init_bytes: u64,
    /// Bytes its Prepare made the tail move.
    pub prepare_bytes: u64,
    /// Everything attributed to it (init, prepare, and for node -1 construction, setup and
    /// finish).
    pub bytes: u64,
    /// Allocations.
    pub count: u64,
}

/// A temporary peak: bytes the arena held for a while besides its persistent and head bytes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct TempPeak {
    /// `plan` (2020: `FinishTensorAllocation`'s `AllocationInfo` array and the greedy
    /// planner's arrays), `prepare`, `invoke` (current TFLM's temporaries).
    pub kind: String,
    /// The node running, when one was.
    pub node: Option<i64>,
    /// Bytes below the tail (padding included).
    pub below_tail: u64,
    /// Bytes needed above the head.
    pub above_head: u64,
    /// `below_tail + above_head`.
    pub bytes: u64,
    /// Persistent bytes at that moment.
    pub persistent_bytes: u64,
    /// For `plan`: the buffers planned and the head the plan needs.
    pub buffers: Option<u64>,
    /// See `buffers`.
    pub head_needed: Option<u64>,
}

/// The arena's figures at one moment.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default)]
pub struct ArenaFigures {
    /// The phase function at whose boundary they were read, or what the build had just done
    /// (`constructed`, `allocated`, `invoked`).
    pub at: String,
    /// `entry` or `return` for a phase; empty for a build milestone.
    pub when: String,
    /// The phase call.
    pub call: Option<u64>,
    /// The cycle, when cycles were observed.
    pub cycle: Option<u64>,
    /// `buffer_tail_ - tail_`.
    pub persistent_bytes: u64,
    /// `head_ - buffer_head_`.
    pub head_bytes: u64,
    /// Temporaries above the head (current TFLM).
    pub temp_bytes: u64,
    /// Between the temporaries and the tail.
    pub free_bytes: u64,
    /// `arena_used_bytes()` as the firmware would compute it then.
    pub arena_used_bytes: Option<u64>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_record_reads_back_as_written_and_an_older_one_reads_with_defaults() {
        let r = ArenaRecord {
            generation: "2020".into(),
            models: vec![ModelArena {
                model: "g_hello_world_tflite".into(),
                needs: Some(1888),
                spare: Some(160),
                exact: true,
                ..ModelArena::default()
            }],
            builds: vec![ArenaBuild {
                index: 1,
                status: BuildStatus::Failed,
                steps: vec![ArenaStep {
                    node: 1,
                    stage: "init".into(),
                    category: "kPersistentBufferData".into(),
                    bytes: 32,
                    ..ArenaStep::default()
                }],
                ..ArenaBuild::default()
            }],
            builds_unlisted: 0,
        };
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["builds"][0]["status"], "failed");
        assert_eq!(json["models"][0]["spare"], 160);
        let back: ArenaRecord = serde_json::from_value(json).unwrap();
        assert_eq!(back, r);
        let old: ArenaRecord = serde_json::from_str(r#"{"models":[{"model":"m"}]}"#).unwrap();
        assert_eq!(old.models[0].needs, None);
        assert!(old.builds.is_empty());
    }
}
