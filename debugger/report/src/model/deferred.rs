//! Late frees as the report lists them: blocks one cycle allocated and a later one freed (the
//! engine finds them, `memlife_audit::deferred`).

use serde::{Deserialize, Serialize};

use super::Site;

/// Late frees listed one by one at most; more are counted (`deferred_unlisted` in the report),
/// so a long run that defers a block every cycle keeps a bounded list.
pub const MAX_LISTED: usize = 1000;

/// A block allocated in one cycle and freed in a later one.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct DeferredBlock {
    /// Block address.
    pub addr: u64,
    /// Block size in the allocator's accounting.
    pub size: u64,
    /// Requested size.
    pub request: Option<u64>,
    /// Where it was allocated.
    pub site: Site,
    /// The cycle it was allocated in (1-based).
    pub allocated_cycle: u64,
    /// The cycle it was freed in.
    pub freed_cycle: u64,
    /// `freed_cycle - allocated_cycle`: how many cycle starts it lived through.
    pub cycles: u64,
    /// The phase function it was allocated in, if any.
    pub allocated_in: Option<String>,
    /// The phase function it was freed in, if any.
    pub freed_in: Option<String>,
}
