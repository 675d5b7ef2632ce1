//! The arena view: for each live arena its bounds, the container holding it, its persistent
//! (tail), non-persistent (head) and temporary bytes, the free gap, `arena_used_bytes()` as the
//! firmware computes it, the smallest arena its snapshot allows, and its interpreter.

use serde::Serialize;

use crate::layout::Generation;
use crate::plan::TensorPlan;
use crate::scan::Container;

/// TFLM's alignment of arena buffers (`kBufferAlignment`, `MicroArenaBufferAlignment()`).
pub const ARENA_ALIGNMENT: u64 = 16;

/// An object found in RAM: its address and class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Object {
    /// Address.
    pub address: u64,
    /// Full class name.
    pub class: String,
}

/// The persistent arena of a split pair (`PersistentArenaBufferAllocator`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PersistentArena {
    /// Its allocator.
    pub allocator: Object,
    /// `buffer_head_`.
    pub start: u64,
    /// `buffer_tail_`.
    pub end: u64,
    /// Where it lies.
    pub container: Option<Container>,
    /// `tail_temp_`.
    pub tail: u64,
    /// The smallest persistent arena this snapshot allows.
    pub minimum_bytes: u64,
}

/// The interpreter using an arena.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Interpreter {
    /// The `MicroInterpreter` object.
    pub address: u64,
    /// Where it lies.
    pub container: Option<Container>,
    /// Its `model_` (the model's root table).
    pub model: u64,
    /// `tensors_allocated_`: `AllocateTensors` succeeded.
    pub tensors_allocated: Option<bool>,
}

/// Something found wrong with an arena (data, not an error).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArenaAnomaly {
    /// `allocator-damaged`, `overlapping-arenas`, `several-interpreters`, `model-unreadable`,
    /// `tensors-unreadable`, `tensor-overlap`, `tensor-outside-arena`.
    pub kind: &'static str,
    /// What, in words.
    pub message: String,
}

/// One live arena.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Arena {
    /// Which TFLM manages it.
    pub generation: Generation,
    /// The arena allocator object (the persistent one of a split pair).
    pub allocator: Object,
    /// `buffer_head_`: the arena's start as TFLM uses it (the arena handed over, aligned up to
    /// 16); a split pair's non-persistent arena.
    pub start: u64,
    /// `buffer_tail_`: one past its last byte.
    pub end: u64,
    /// `end - start`.
    pub size: u64,
    /// The heap block or static holding it.
    pub container: Option<Container>,
    /// A split pair's persistent arena.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persistent_arena: Option<PersistentArena>,
    /// Where the non-persistent (head) section ends: `head_` (`head_temp_`).
    pub head: u64,
    /// Where the temporaries end: `temp_` (`next_temp_`); `head` in 2020 TFLM.
    pub temp: u64,
    /// Where the persistent (tail) section starts: `tail_` (`tail_temp_`).
    pub tail: u64,
    /// `buffer_tail_ - tail_`.
    pub persistent_bytes: u64,
    /// `head_ - buffer_head_`: the planned activations and scratch buffers.
    pub head_bytes: u64,
    /// `temp_ - head_`: temporary allocations not released yet (Prepare, planning).
    pub temp_bytes: u64,
    /// Bytes between the temporaries and the tail (both arenas' free bytes for a split pair).
    pub free_bytes: u64,
    /// What `MicroInterpreter::arena_used_bytes()` returns now (docs/tflm.md has the formula of
    /// each version); `None` when the object it reads was not found.
    pub arena_used_bytes: Option<u64>,
    /// The smallest arena (from `start`) this snapshot allows: what the tail and the head hold,
    /// the gap given back in steps of 16 bytes so that every tail allocation keeps its
    /// alignment. Temporary peaks before this moment are not in it (see `minimum_complete`).
    pub minimum_bytes: u64,
    /// Always false for a snapshot: peaks of temporaries (planning, Prepare) need a run-time
    /// observer ([`minimum_arena_bytes`] takes the highest non-persistent use it saw).
    pub minimum_complete: bool,
    /// The current TFLM `MicroAllocator` in the tail (2020: it is inside the interpreter).
    pub micro_allocator: Option<u64>,
    /// The interpreter using the arena.
    pub interpreter: Option<Interpreter>,
    /// The tensor plan, once `AllocateTensors` succeeded.
    pub plan: Option<TensorPlan>,
    /// What is wrong.
    pub anomalies: Vec<ArenaAnomaly>,
}

/// The smallest arena (counted from its 16-aligned start) that holds `persistent` tail bytes and
/// `non_persistent_peak` head-and-temporary bytes, for an arena of `arena_bytes` that held
/// them: the free gap is given back in steps of [`ARENA_ALIGNMENT`] so that the tail's top
/// keeps its alignment and every tail allocation keeps its place relative to it (a smaller step
/// could change the padding). A peak above what the arena holds asks for more, rounded up the
/// same way. A run-time observer passes the highest head or temp use it saw.
pub fn minimum_arena_bytes(arena_bytes: u64, persistent: u64, non_persistent_peak: u64) -> u64 {
    let used = i128::from(persistent) + i128::from(non_persistent_peak);
    let gap = i128::from(arena_bytes) - used;
    let step = i128::from(ARENA_ALIGNMENT);
    let returned = gap.div_euclid(step) * step;
    u64::try_from(i128::from(arena_bytes) - returned).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_is_given_back_in_steps_of_sixteen() {
        // 1000 used of 2048: 1048 free, 1040 can go.
        assert_eq!(minimum_arena_bytes(2048, 600, 400), 1008);
        // Exactly full.
        assert_eq!(minimum_arena_bytes(1024, 1000, 24), 1024);
        // 5 bytes short: one more step.
        assert_eq!(minimum_arena_bytes(1024, 1000, 29), 1040);
        assert_eq!(minimum_arena_bytes(0, 0, 0), 0);
        assert_eq!(minimum_arena_bytes(u64::MAX, u64::MAX, u64::MAX), u64::MAX);
    }
}
