//! The allocator's own counters (`xFreeBytesRemaining`, `xMinimumEverFreeBytesRemaining`, the
//! allocation and free counts) and the scheduler lock, as one walk read them: recorded in the
//! state, given as what the firmware's heap API would return, and checked by `checks`.

use super::arena::FreeListWalk;
use crate::firmware_view::{FirmwareView, FreeRtosView, HeapStats};
use crate::state::HeapState;

/// The allocator's counters and the scheduler lock, as read for one walk.
#[derive(Debug, Clone, Copy)]
pub(super) struct Counters {
    pub(super) free_bytes: u64,
    pub(super) min_ever: Option<u64>,
    pub(super) allocs: Option<u64>,
    pub(super) frees: Option<u64>,
    pub(super) suspended: Option<u64>,
}

impl Counters {
    /// Into the state's counters, in the order `memlife heap` lists them.
    pub(super) fn record(&self, st: &mut HeapState) {
        st.counters
            .push(("xFreeBytesRemaining".into(), self.free_bytes));
        st.min_ever_free = self.min_ever;
        if let Some(v) = self.min_ever {
            st.counters
                .push(("xMinimumEverFreeBytesRemaining".into(), v));
        }
        if let (Some(a), Some(f)) = (self.allocs, self.frees) {
            st.counters
                .push(("xNumberOfSuccessfulAllocations".into(), a));
            st.counters.push(("xNumberOfSuccessfulFrees".into(), f));
        }
        if let Some(s) = self.suspended {
            st.counters.push(("uxSchedulerSuspended".into(), s));
        }
    }

    /// What `vPortGetHeapStats`, `xPortGetFreeHeapSize` and `xPortGetMinimumEverFreeHeapSize`
    /// return: the counters as stored, and the free list as walked, heap_5's region markers
    /// still linked counted as free blocks (but not as the smallest one).
    pub(super) fn firmware_view(&self, list: &FreeListWalk) -> FirmwareView {
        let min_ever = self.min_ever.unwrap_or(0);
        FirmwareView::FreeRtos(FreeRtosView {
            heap_stats: HeapStats {
                xAvailableHeapSpaceInBytes: self.free_bytes,
                xSizeOfLargestFreeBlockInBytes: list.largest,
                // The allocator starts its minimum at SIZE_MAX and keeps it when no free block
                // is found (32-bit ports).
                xSizeOfSmallestFreeBlockInBytes: list.smallest.unwrap_or(0xffff_ffff),
                xNumberOfFreeBlocks: list.markers + list.count,
                xMinimumEverFreeBytesRemaining: min_ever,
                xNumberOfSuccessfulAllocations: self.allocs.unwrap_or(0),
                xNumberOfSuccessfulFrees: self.frees.unwrap_or(0),
            },
            xPortGetFreeHeapSize: self.free_bytes,
            xPortGetMinimumEverFreeHeapSize: min_ever,
        })
    }

    /// heap_4/5 suspend the scheduler around every change, so a task halted inside
    /// pvPortMalloc or vPortFree leaves it suspended; but FreeRTOS also suspends it in queue,
    /// timer and delay code. A suspended scheduler explains an inconsistent walk (the caller
    /// asks only then); a consistent one is simply the heap.
    pub(super) fn busy_lock(&self) -> Option<String> {
        self.suspended.filter(|s| *s != 0).map(|s| {
            format!(
                "scheduler suspended (uxSchedulerSuspended = {s}) and the heap inconsistent: \
                 a task was halted inside pvPortMalloc/vPortFree"
            )
        })
    }
}
