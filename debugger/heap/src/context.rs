//! [`WalkContext`]: what one walk is told that the walker cannot learn from memory.

use crate::ReadPlan;

/// Context of one walk that the walker cannot learn from memory.
#[derive(Debug, Clone, Copy, Default)]
pub struct WalkContext {
    /// The core was halted inside an allocator function (pc lookup done by the caller).
    pub inside_allocator: Option<&'static str>,
    /// How to read the arena (bulk by default: offline memory costs nothing to read whole).
    pub read: ReadPlan,
}
