//! The result of a walk, with the metrics and JSON keys of docs/heap-json.md.

use serde::Serialize;

/// One heap block as the allocator sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Block {
    /// Address of the block header.
    pub addr: u64,
    /// Size in the allocator's own accounting (heap_4 and nano include the header).
    pub size: u64,
    /// On the allocator's free list.
    pub free: bool,
    /// Never handed out by sbrk yet (newlib: between the break and the heap limit).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unclaimed: bool,
    /// The size the caller asked for, where the allocator records it (ESP-IDF with heap
    /// poisoning); `None` elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alloc_size: Option<u64>,
}

/// What kind of damage an anomaly is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnomalyKind {
    /// A list came back to a node it had visited (or went backwards in an address-ordered list).
    Cycle,
    /// A pointer outside the arena or misaligned.
    OutOfRange,
    /// Blocks overlap, or the physical walk does not tile the arena.
    Overlap,
    /// A size that is zero, misaligned, or runs past the end.
    SizeOverflow,
    /// The walk disagrees with the allocator's own counter.
    CounterMismatch,
    /// Two free blocks side by side (the allocator always coalesces).
    NotCoalesced,
    /// The free list and the physical walk disagree about a block.
    ListMismatch,
    /// A header field that must hold a fixed value does not.
    BadHeader,
    /// A walk stopped at its iteration bound.
    TooManyBlocks,
    /// An allocator's occupancy bitmap disagrees with its lists (TLSF `fl_bitmap`/`sl_bitmap`).
    BitmapMismatch,
    /// A block in use was written past its requested size (its tail canary is broken).
    Overrun,
    /// A block in use was written before its data (its head canary or recorded size is broken).
    Underrun,
    /// Free memory no longer holds the allocator's free fill.
    WriteAfterFree,
}

impl AnomalyKind {
    /// Damage to a block's contents found by the allocator's canaries or fill (not its lists).
    pub fn is_integrity(self) -> bool {
        matches!(
            self,
            AnomalyKind::Overrun | AnomalyKind::Underrun | AnomalyKind::WriteAfterFree
        )
    }

    /// The name the JSON uses (`overrun`, `write-after-free`...).
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// Something the walk found wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Anomaly {
    /// Kind.
    pub kind: AnomalyKind,
    /// Where, when one address is to blame.
    pub addr: Option<u64>,
    /// What, in words.
    pub message: String,
}

/// Overall verdict of a walk (read back from audit reports too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HeapStatus {
    /// Consistent.
    Ok,
    /// Halted inside the allocator: inconsistencies are expected, not corruption.
    Busy,
    /// Anomalies found while the allocator was idle.
    Corrupt,
    /// The allocator has not run yet; the layout shown is what the first allocation creates.
    Uninitialised,
}

/// The heap at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapState {
    /// Allocator name (`freertos-heap4`, `newlib-nano`...).
    pub allocator: &'static str,
    /// Verdict.
    pub status: HeapStatus,
    /// Why the status is busy (the lock or function seen).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_reason: Option<String>,
    /// First address of the arena.
    pub heap_start: u64,
    /// Arena size in bytes (capacity the allocator can hand out, headers included).
    pub heap_size: u64,
    /// Free bytes (allocator accounting; for newlib includes the unclaimed tail).
    pub total_free: u64,
    /// `heap_size - total_free`.
    pub used: u64,
    /// Largest free block.
    pub largest_free: u64,
    /// Free blocks on the allocator's free list.
    pub free_blocks: u64,
    /// Blocks in use.
    pub used_blocks: u64,
    /// The allocator's low-water mark, where it keeps one.
    pub min_ever_free: Option<u64>,
    /// newlib: bytes between the break and the heap limit (`None` when the limit is unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unclaimed: Option<u64>,
    /// newlib: the sbrk break (the end of the chunks the free list and the walk cover).
    #[serde(rename = "break", skip_serializing_if = "Option::is_none")]
    pub brk: Option<u64>,
    /// newlib: the bytes of the chunks on the free list (`total_free` minus `unclaimed`), what
    /// the allocator itself could hand out without moving the break.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_list_bytes: Option<u64>,
    /// The allocator's own counters as read (`xFreeBytesRemaining` ...), for cross-checks.
    pub counters: Vec<(String, u64)>,
    /// Free-list order (addresses of the free blocks as the list links them).
    pub free_list: Vec<u64>,
    /// Every block in address order.
    pub blocks: Vec<Block>,
    /// What is wrong.
    pub anomalies: Vec<Anomaly>,
    /// The largest request the allocator can still satisfy, where it differs from the largest
    /// free block (ESP-IDF's `largest_free_block`: TLSF rounds down to its size classes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub largest_allocatable: Option<u64>,
    /// Multi-heap allocators (ESP-IDF): each registered heap on its own; empty elsewhere.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<HeapRegion>,
    /// What the firmware's own heap API would return at this moment (docs/heap-json.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub firmware_view: Option<crate::FirmwareView>,
    /// ESP-IDF heap poisoning built in: `none`, `light` or `comprehensive`; `None` for
    /// allocators without the option.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poisoning: Option<&'static str>,
    /// How the walk read the arena (for the `link` object; equal in every state, so a bulk and
    /// a sparse walk of the same memory compare equal).
    #[serde(skip)]
    pub read: crate::ReadReport,
}

/// One heap of a multi-heap allocator (an ESP-IDF `registered_heaps` entry), with its own
/// capabilities, counters and metrics. The totals of [`HeapState`] are the sums over these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapRegion {
    /// First address of the region (`heap_t_.start`).
    pub start: u64,
    /// End of the region, exclusive (`heap_t_.end`).
    pub end: u64,
    /// The memory type the capabilities describe: `DRAM`, `D/IRAM`, `IRAM`, `PSRAM`, `RTCRAM`.
    pub kind: &'static str,
    /// Capability names (`8BIT`, `32BIT`, `DMA`, `INTERNAL`, `DEFAULT`, `EXEC`, `SPIRAM`...), the
    /// union of the region's prioritised masks.
    pub caps: Vec<String>,
    /// The raw prioritised capability masks as the allocator stores them.
    pub caps_raw: Vec<u64>,
    /// Capacity in the allocator's accounting (ESP-IDF: `pool_size - tlsf_size`, the
    /// `free_bytes` of an empty heap).
    pub size: u64,
    /// Free bytes in the allocator's accounting (equals its own counter when consistent).
    pub free: u64,
    /// `size - free`.
    pub used: u64,
    /// Largest free block (same units as `Block::size`).
    pub largest_free: u64,
    /// The largest request this heap can satisfy (ESP-IDF's `largest_free_block`).
    pub largest_allocatable: u64,
    /// Free blocks on the free lists.
    pub free_blocks: u64,
    /// Blocks in use.
    pub used_blocks: u64,
    /// The heap's low-water mark (`minimum_free_bytes`).
    pub min_ever_free: Option<u64>,
    /// The heap's own counters as read.
    pub counters: Vec<(String, u64)>,
    /// Why this heap is busy (its lock is held), if it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_reason: Option<String>,
}

impl HeapState {
    /// Largest free / total free: 1.0 is one free block, below 0.5 is fragmented (the seed's
    /// measure); `None` when nothing is free.
    pub fn largest_free_ratio(&self) -> Option<f64> {
        (self.total_free > 0).then(|| self.largest_free as f64 / self.total_free as f64)
    }

    /// `1 - largest_free_ratio`.
    pub fn fragmentation(&self) -> Option<f64> {
        self.largest_free_ratio().map(|r| 1.0 - r)
    }

    /// The value of one of the allocator's counters.
    pub fn counter(&self, name: &str) -> Option<u64> {
        self.counters
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }

    /// Records an anomaly.
    pub(crate) fn anomaly(&mut self, kind: AnomalyKind, addr: Option<u64>, message: String) {
        // A damaged heap can produce thousands; the first hundred tell the story.
        if self.anomalies.len() < 100 {
            self.anomalies.push(Anomaly {
                kind,
                addr,
                message,
            });
        }
    }

    /// Fills `used`, block counts and `status` from `blocks`, `total_free` and the anomalies.
    pub(crate) fn finish(&mut self, ctx: crate::WalkContext, busy_lock: Option<String>) {
        self.used = self.heap_size.saturating_sub(self.total_free);
        self.used_blocks = self.blocks.iter().filter(|b| !b.free).count() as u64;
        let busy = ctx
            .inside_allocator
            .map(|f| format!("halted inside {f}"))
            .or(busy_lock);
        self.status = if self.status == HeapStatus::Uninitialised {
            HeapStatus::Uninitialised
        } else if busy.is_some() {
            HeapStatus::Busy
        } else if self.anomalies.is_empty() {
            HeapStatus::Ok
        } else {
            HeapStatus::Corrupt
        };
        self.busy_reason = busy;
    }

    /// A state with nothing walked yet: no blocks, no figures, status ok. Walkers fill it in;
    /// tests spell only the fields they care about (`..HeapState::empty("x")`).
    pub fn empty(allocator: &'static str) -> Self {
        HeapState {
            allocator,
            status: HeapStatus::Ok,
            busy_reason: None,
            heap_start: 0,
            heap_size: 0,
            total_free: 0,
            used: 0,
            largest_free: 0,
            free_blocks: 0,
            used_blocks: 0,
            min_ever_free: None,
            unclaimed: None,
            brk: None,
            free_list_bytes: None,
            counters: Vec::new(),
            free_list: Vec::new(),
            blocks: Vec::new(),
            anomalies: Vec::new(),
            largest_allocatable: None,
            regions: Vec::new(),
            firmware_view: None,
            poisoning: None,
            read: crate::ReadReport::default(),
        }
    }

    /// The serialisable view `memlife heap --json` prints: the state plus derived metrics.
    pub fn report(&self) -> HeapReport<'_> {
        HeapReport {
            state: self,
            largest_free_ratio: self.largest_free_ratio(),
            fragmentation: self.fragmentation(),
        }
    }
}

/// A [`HeapState`] with the derived metrics added (the stable JSON object of docs/heap-json.md).
#[derive(Debug, Serialize)]
pub struct HeapReport<'a> {
    #[serde(flatten)]
    state: &'a HeapState,
    largest_free_ratio: Option<f64>,
    fragmentation: Option<f64>,
}

/// What the "random garbage" tests assert of every walk: it ended with a result (a read error is
/// fine: the garbage may point outside the memory given), and its work stayed within what the
/// memory can hold, one block per `min_block` bytes of `memory` (a walk that lost its bound would
/// list more, or never end).
#[cfg(test)]
pub(crate) fn assert_walk_bounded(
    result: Result<HeapState, crate::HeapError>,
    memory: u64,
    min_block: u64,
) {
    let st = match result {
        Ok(st) => st,
        Err(crate::HeapError::Target(_)) => return,
        Err(e) => panic!("a walk of garbage failed with something else than a read error: {e}"),
    };
    let bound = memory / min_block + 2;
    assert!(
        st.blocks.len() as u64 <= bound,
        "{} blocks in {memory} bytes",
        st.blocks.len()
    );
    assert!(
        st.free_list.len() as u64 <= bound,
        "{} free-list entries in {memory} bytes",
        st.free_list.len()
    );
    assert!(st.anomalies.len() <= 100);
}
