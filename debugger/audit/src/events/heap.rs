//! An allocation or a release, as the trace saw it at a stop, on its way to being recorded: the
//! spans and the open phase raise their peaks with it and file it, and added observers may tag
//! it ([`HeapEvent::tags`]) before the trace keeps it.

use memlife_heap::BlockRef;

use crate::model::{EventKind, Site};

/// What observers add to an event, by name (the task that made it, the operator in progress).
pub type Tags = Vec<(&'static str, String)>;

/// One allocation or release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeapEvent {
    /// Its number in the trace.
    pub seq: u64,
    /// Allocation or release.
    pub kind: EventKind,
    /// The block (its address and size in the allocator's accounting).
    pub block: BlockRef,
    /// The size asked for, when the allocator's entry was seen.
    pub request: Option<u64>,
    /// Bytes in use after it, as the trace counts them.
    pub used_after: u64,
    /// Where it was made.
    pub site: Site,
    /// What observers added.
    pub tags: Tags,
}
