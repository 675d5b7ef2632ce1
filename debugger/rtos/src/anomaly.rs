//! What a task read found wrong in the kernel's data. Corruption is data, not an error: a
//! wild pointer, a list that loops or a stack that overflowed is reported here and the read
//! goes on with what it can still trust.

use serde::Serialize;

/// What kind of damage an anomaly is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnomalyKind {
    /// A list came back to an item it had already visited.
    Cycle,
    /// A pointer that is null, misaligned, or points at memory the target will not read.
    BadPointer,
    /// A count the kernel keeps (`uxNumberOfItems`, `uxCurrentNumberOfTasks`) disagrees with
    /// the walk.
    CountMismatch,
    /// An item's `pxContainer` is not the list it was found on.
    ListMismatch,
    /// A walk stopped at its bound.
    TooManyItems,
    /// A saved context that does not decode, or decodes to registers no task can have.
    BadFrame,
    /// A stack whose bounds make no sense.
    BadStack,
    /// A stack that has overflowed: the saved stack pointer below `pxStack`, or no fill left at
    /// its low end.
    StackOverflow,
    /// A task's TCB or stack in a heap block the allocator has free.
    FreeBlock,
}

/// Something the read found wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Anomaly {
    /// Kind.
    pub kind: AnomalyKind,
    /// Where, when one address is to blame.
    pub addr: Option<u64>,
    /// What, in words.
    pub message: String,
}

impl Anomaly {
    pub(crate) fn new(kind: AnomalyKind, addr: Option<u64>, message: impl Into<String>) -> Self {
        Anomaly {
            kind,
            addr,
            message: message.into(),
        }
    }
}
