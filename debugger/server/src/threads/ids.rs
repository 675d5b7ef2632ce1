//! The ids gdb knows the threads by: the core's (thread 1), the exception handler's (thread 2)
//! and a task's (its TCB's address), and the xPSR bits that tell handler mode from thread mode.
//! Apart from `threads` because both the stop's view and the thread that runs are named with
//! them.

use std::num::NonZeroUsize;

use gdbstub::common::Tid;

/// The core's thread: the only one without an RTOS, and the one that runs before the
/// scheduler starts (gdbstub's own id for a single-threaded target).
pub const CORE_TID: Tid = NonZeroUsize::MIN;
/// The thread of the exception handler the core runs (no TCB is at address 2).
pub const HANDLER_TID: Tid = match NonZeroUsize::new(2) {
    Some(t) => t,
    None => NonZeroUsize::MIN,
};

/// IPSR: the exception number in the low 9 bits of xPSR; 0 in thread mode.
pub(super) const IPSR_MASK: u32 = 0x1ff;

/// A task's thread id: its TCB's address.
pub(crate) fn task_tid(tcb: u64) -> Option<Tid> {
    usize::try_from(tcb).ok().and_then(NonZeroUsize::new)
}
