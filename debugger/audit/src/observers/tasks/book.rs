//! What each task did on the heap: the allocations and releases traced while it ran, and, for
//! every block still allocated, the task that allocated it. A heap walk is then told apart by
//! task ([`by_task`]): a block the trace saw allocated belongs to the task that allocated it;
//! one allocated before tracing (or while it was off) to the task whose TCB or stack it holds,
//! when it holds one; the rest is untraced.
//!
//! A release is traced at the allocator's entry, but another task may preempt the one freeing
//! before the allocator has taken the block back (FreeRTOS's idle task freeing a deleted task's
//! TCB, say): a walk at that moment still shows the block in use. Such a block still belongs to
//! the task that allocated it, so the owners of the last releases are kept until their block
//! is handed out again.

use std::collections::{BTreeMap, BTreeSet};

use memlife_heap::HeapState;
use memlife_rtos::TaskBlock;

use crate::events::HeapEvent;
use crate::model::{EventKind, TaskRecord};

/// The name the blocks of no known task go under.
pub const UNTRACED: &str = "(untraced)";

/// One task's traced allocations and releases.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Totals {
    allocs: u64,
    allocated_bytes: u64,
    frees: u64,
    freed_bytes: u64,
}

/// A block allocated under the trace and not freed since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The task that allocated it.
    pub task: String,
    /// Its size.
    pub size: u64,
    /// Its allocation event.
    pub seq: u64,
}

/// Every task's traced totals and the owners of the live blocks.
#[derive(Debug, Default)]
pub struct TaskBook {
    totals: BTreeMap<String, Totals>,
    live: BTreeMap<u64, Owner>,
    /// The owners of the last blocks released, by block address.
    freeing: BTreeMap<u64, Owner>,
}

/// Releases whose owner is kept (see the module doc): more than the tasks that can be inside
/// the allocator at once.
const FREEING_KEPT: usize = 64;

impl TaskBook {
    /// An allocation or release made by `task`.
    pub fn record(&mut self, task: &str, event: &HeapEvent) {
        let t = self.totals.entry(task.to_string()).or_default();
        let (addr, size) = (event.block.addr, event.block.size);
        match event.kind {
            EventKind::Alloc => {
                t.allocs += 1;
                t.allocated_bytes = t.allocated_bytes.saturating_add(size);
                self.freeing.remove(&addr);
                self.live.insert(
                    addr,
                    Owner {
                        task: task.to_string(),
                        size,
                        seq: event.seq,
                    },
                );
            }
            EventKind::Free => {
                t.frees += 1;
                t.freed_bytes = t.freed_bytes.saturating_add(size);
                if let Some(owner) = self.live.remove(&addr) {
                    self.freeing.insert(addr, owner);
                }
                if self.freeing.len() > FREEING_KEPT
                    && let Some(oldest) = self.freeing.values().map(|o| o.seq).min()
                {
                    self.freeing.retain(|_, o| o.seq != oldest);
                }
            }
        }
    }

    /// The task that allocated the live block at `addr` of `size` bytes, when the trace saw it.
    pub fn owner(&self, addr: u64, size: u64) -> Option<&Owner> {
        self.live.get(&addr).filter(|o| o.size == size)
    }

    /// The task that allocated a block a walk shows in use at `addr` with `size` bytes: its
    /// live owner, or the owner of a release traced but not finished when the walk was taken.
    pub fn holder(&self, addr: u64, size: u64) -> Option<&Owner> {
        self.owner(addr, size)
            .or_else(|| self.freeing.get(&addr).filter(|o| o.size == size))
    }

    /// The target was reset: no block is live.
    pub fn forget_live(&mut self) {
        self.live.clear();
        self.freeing.clear();
    }

    /// Every task's record for the report, live blocks counted now.
    pub fn records(&self) -> Vec<TaskRecord> {
        let mut out: BTreeMap<&str, TaskRecord> = BTreeMap::new();
        for (task, t) in &self.totals {
            out.insert(
                task,
                TaskRecord {
                    task: task.clone(),
                    allocs: t.allocs,
                    allocated_bytes: t.allocated_bytes,
                    frees: t.frees,
                    freed_bytes: t.freed_bytes,
                    ..TaskRecord::default()
                },
            );
        }
        for o in self.live.values() {
            let r = out.entry(&o.task).or_insert_with(|| TaskRecord {
                task: o.task.clone(),
                ..TaskRecord::default()
            });
            r.live_blocks += 1;
            r.live_bytes = r.live_bytes.saturating_add(o.size);
        }
        out.into_values().collect()
    }
}

/// Bytes and blocks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Bytes, in the allocator's accounting.
    pub bytes: u64,
    /// Blocks.
    pub blocks: u64,
}

impl Held {
    fn add(&mut self, size: u64) {
        self.bytes = self.bytes.saturating_add(size);
        self.blocks += 1;
    }
}

/// A heap walk told apart by task.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ByTask {
    /// The blocks in use, by the task they belong to ([`UNTRACED`] for none known).
    pub tasks: BTreeMap<String, Held>,
    /// Each block's task, by block address.
    pub owners: BTreeMap<u64, String>,
    /// The blocks that hold a listed task's TCB or stack (whoever allocated them): not leaks
    /// while the task is listed.
    pub task_blocks: Held,
    /// Those blocks' addresses, as listed at the walk's stop (a later stop may list others).
    pub listed: BTreeSet<u64>,
}

impl ByTask {
    /// Adds the split to a heap's JSON (`memlife heap --json`, `dump`): `by_task` (task →
    /// `{bytes, blocks}`), `task_blocks` and `by_task_from` (`from`: how blocks were told
    /// apart), and each block's `task`.
    pub fn insert_json(&self, heap: &mut serde_json::Value, from: &str) {
        let Some(obj) = heap.as_object_mut() else {
            return;
        };
        let held = |h: &Held| serde_json::json!({ "bytes": h.bytes, "blocks": h.blocks });
        let tasks: serde_json::Map<String, serde_json::Value> = self
            .tasks
            .iter()
            .map(|(t, h)| (t.clone(), held(h)))
            .collect();
        obj.insert("by_task".into(), tasks.into());
        obj.insert("by_task_from".into(), from.into());
        obj.insert("task_blocks".into(), held(&self.task_blocks));
        let blocks = obj.get_mut("blocks").and_then(|b| b.as_array_mut());
        for b in blocks.into_iter().flatten() {
            let task = b
                .get("addr")
                .and_then(serde_json::Value::as_u64)
                .and_then(|a| self.owners.get(&a))
                .cloned();
            if let (Some(task), Some(b)) = (task, b.as_object_mut()) {
                b.insert("task".into(), task.into());
            }
        }
    }
}

/// `heap` by task: a block the trace saw allocated is its allocator's (per `book`); another
/// the task's whose TCB or stack it holds (per `blocks`, read at the same stop); the rest
/// [`UNTRACED`].
pub fn by_task(heap: &HeapState, book: Option<&TaskBook>, blocks: &[TaskBlock]) -> ByTask {
    let task_block: BTreeMap<u64, &TaskBlock> = blocks.iter().map(|b| (b.block.addr, b)).collect();
    let mut out = ByTask::default();
    for b in heap.blocks.iter().filter(|b| !b.free && !b.unclaimed) {
        let listed = task_block.get(&b.addr).filter(|t| t.block.size == b.size);
        if listed.is_some() {
            out.task_blocks.add(b.size);
            out.listed.insert(b.addr);
        }
        let task = match (book.and_then(|k| k.holder(b.addr, b.size)), listed) {
            (Some(o), _) => o.task.clone(),
            (None, Some(t)) => t.task.clone(),
            (None, None) => UNTRACED.to_string(),
        };
        out.tasks.entry(task.clone()).or_default().add(b.size);
        out.owners.insert(b.addr, task);
    }
    out
}

#[cfg(test)]
mod tests {
    use memlife_heap::{Block, BlockRef};
    use memlife_rtos::{BlockRole, HeapBlock, TaskState};

    use super::*;
    use crate::model::Site;

    fn event(seq: u64, kind: EventKind, addr: u64, size: u64) -> HeapEvent {
        HeapEvent {
            seq,
            kind,
            block: BlockRef { addr, size },
            request: None,
            used_after: 0,
            site: Site::default(),
            tags: Vec::new(),
        }
    }

    fn block(addr: u64, size: u64, free: bool) -> Block {
        Block {
            addr,
            size,
            free,
            unclaimed: false,
            alloc_size: None,
        }
    }

    #[test]
    fn each_block_belongs_to_its_allocator_else_to_the_task_whose_tcb_it_holds() {
        let mut book = TaskBook::default();
        book.record("Infer", &event(0, EventKind::Alloc, 0x100, 64));
        book.record("Logger", &event(1, EventKind::Alloc, 0x140, 104));
        book.record("Spawner", &event(2, EventKind::Alloc, 0x1a8, 96));
        // Freed by another task: the block is gone, the free is the freeing task's.
        book.record("Consumer", &event(3, EventKind::Free, 0x1a8, 96));
        let records = book.records();
        let names: Vec<&str> = records.iter().map(|r| r.task.as_str()).collect();
        assert_eq!(names, ["Consumer", "Infer", "Logger", "Spawner"]);
        let spawner = &records[3];
        assert_eq!((spawner.allocs, spawner.live_blocks), (1, 0));
        assert_eq!((records[0].frees, records[0].freed_bytes), (1, 96));
        assert_eq!((records[2].live_blocks, records[2].live_bytes), (1, 104));

        let heap = HeapState {
            blocks: vec![
                block(0x100, 64, false),
                block(0x140, 104, false),
                block(0x1a8, 96, true),
                // Allocated before tracing: a task's TCB, and something else.
                block(0x208, 0x60, false),
                block(0x268, 32, false),
            ],
            ..HeapState::empty("fake")
        };
        let tcb = TaskBlock {
            block: HeapBlock {
                addr: 0x208,
                size: 0x60,
            },
            role: BlockRole::Tcb,
            tcb: 0x210,
            task: "Check".into(),
            state: TaskState::Blocked,
        };
        let by = by_task(&heap, Some(&book), &[tcb]);
        let held = |t: &str| by.tasks.get(t).copied().unwrap_or_default();
        assert_eq!(
            held("Infer"),
            Held {
                bytes: 64,
                blocks: 1
            }
        );
        assert_eq!(
            held("Check"),
            Held {
                bytes: 0x60,
                blocks: 1
            }
        );
        assert_eq!(
            held(UNTRACED),
            Held {
                bytes: 32,
                blocks: 1
            }
        );
        assert_eq!(held("Spawner"), Held::default(), "its block is free");
        assert_eq!(
            by.task_blocks,
            Held {
                bytes: 0x60,
                blocks: 1
            }
        );
        assert_eq!(by.owners[&0x140], "Logger");
        // The listing of the walk's stop, kept with it: a later stop may list other tasks.
        assert_eq!(by.listed.iter().copied().collect::<Vec<_>>(), [0x208]);
        // A release traced at the allocator's entry and not finished when the walk was taken:
        // the block is still its allocator's.
        let mut walking = heap.clone();
        walking.blocks[2].free = false;
        assert_eq!(
            by_task(&walking, Some(&book), &[]).owners[&0x1a8],
            "Spawner"
        );
        // A block reallocated at the same address with another size is not the traced one.
        let resized = HeapState {
            blocks: vec![block(0x100, 128, false)],
            ..HeapState::empty("fake")
        };
        assert_eq!(by_task(&resized, Some(&book), &[]).owners[&0x100], UNTRACED);
    }
}
