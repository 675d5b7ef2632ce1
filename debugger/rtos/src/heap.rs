//! Tasks and the heap: which heap blocks hold each task's TCB and stack, found by address in a
//! walk of the heap (any allocator memlife walks). A block holds an address when the address
//! lies in `[block.addr, block.addr + block.size)`.
//!
//! A dynamically created task owns two blocks, its stack (`pvPortMallocStack`) and its TCB,
//! until the idle task frees them after its deletion; a block a live task owns is not a leak.
//! When the build records no `pxEndOfStack`, the stack's top is the end of its block.

use memlife_heap::{Block, HeapState};

use crate::task::{HeapBlock, StackTop, TaskSnapshot, TaskState};
use crate::{Anomaly, AnomalyKind};

/// What a task's heap block holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockRole {
    /// The TCB.
    Tcb,
    /// The stack.
    Stack,
}

impl BlockRole {
    /// The name the JSON and the table use.
    pub fn name(self) -> &'static str {
        match self {
            BlockRole::Tcb => "tcb",
            BlockRole::Stack => "stack",
        }
    }
}

/// A heap block that belongs to a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskBlock {
    /// The block.
    pub block: HeapBlock,
    /// What it holds.
    pub role: BlockRole,
    /// The task's TCB.
    pub tcb: u64,
    /// The task's name.
    pub task: String,
    /// The task's state (a deleted task's blocks are freed by the idle task soon).
    pub state: TaskState,
}

/// The blocks in use, sorted by address, for lookups by address.
struct UsedBlocks<'a>(Vec<&'a Block>);

impl<'a> UsedBlocks<'a> {
    fn new(heap: &'a HeapState) -> Self {
        let mut v: Vec<&Block> = heap.blocks.iter().filter(|b| !b.unclaimed).collect();
        v.sort_by_key(|b| b.addr);
        UsedBlocks(v)
    }

    /// The block holding `addr`.
    fn holding(&self, addr: u64) -> Option<&'a Block> {
        let i = self.0.partition_point(|b| b.addr <= addr).checked_sub(1)?;
        let b = *self.0.get(i)?;
        (addr < b.addr.saturating_add(b.size)).then_some(b)
    }
}

impl TaskSnapshot {
    /// Finds each task's TCB and stack blocks in `heap` (a walk at the same stop), and the top
    /// of a stack whose build records no `pxEndOfStack`. A TCB or stack in a free block is an
    /// anomaly (a task the kernel still lists, in memory the allocator may hand out again).
    pub fn attribute_heap(&mut self, heap: &HeapState) {
        let blocks = UsedBlocks::new(heap);
        for t in &mut self.tasks {
            for role in [BlockRole::Tcb, BlockRole::Stack] {
                let addr = match role {
                    BlockRole::Tcb => t.tcb,
                    BlockRole::Stack => t.stack.low,
                };
                let Some(b) = blocks.holding(addr) else {
                    continue;
                };
                if b.free {
                    self.anomalies.push(Anomaly::new(
                        AnomalyKind::FreeBlock,
                        Some(addr),
                        format!(
                            "task {}: its {} at {addr:#010x} lies in the free heap block at \
                             {:#010x}",
                            t.name,
                            if role == BlockRole::Tcb {
                                "TCB"
                            } else {
                                "stack"
                            },
                            b.addr
                        ),
                    ));
                    continue;
                }
                let block = HeapBlock {
                    addr: b.addr,
                    size: b.size,
                };
                match role {
                    BlockRole::Tcb => t.tcb_block = Some(block),
                    BlockRole::Stack => {
                        t.stack_block = Some(block);
                        if t.stack.high.is_none() {
                            t.stack.high = Some(b.addr.saturating_add(b.size));
                            t.stack.high_from = Some(StackTop::HeapBlock);
                        }
                    }
                }
            }
        }
    }

    /// Every heap block a listed task owns (after [`TaskSnapshot::attribute_heap`]).
    pub fn task_blocks(&self) -> Vec<TaskBlock> {
        let mut out = Vec::new();
        for t in &self.tasks {
            for (role, block) in [
                (BlockRole::Tcb, t.tcb_block),
                (BlockRole::Stack, t.stack_block),
            ] {
                if let Some(block) = block {
                    out.push(TaskBlock {
                        block,
                        role,
                        tcb: t.tcb,
                        task: t.name.clone(),
                        state: t.state,
                    });
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::StackFill;
    use crate::frame::{ContextLayout, FrameKind};
    use crate::testing::{Builder, STACK_BYTES, kernel};

    fn heap(blocks: &[(u64, u64, bool)]) -> HeapState {
        HeapState {
            blocks: blocks
                .iter()
                .map(|&(addr, size, free)| Block {
                    addr,
                    size,
                    free,
                    unclaimed: false,
                    alloc_size: None,
                })
                .collect(),
            ..HeapState::empty("freertos-heap4")
        }
    }

    #[test]
    fn each_task_owns_the_blocks_that_hold_its_tcb_and_stack() {
        let mut b = Builder::new();
        let l = b.layout.clone();
        let a = b.task("A", 1, l.ready_list(1), FrameKind::Basic, 0x0800_0000);
        let c = b.task("C", 1, l.ready_list(1), FrameKind::Basic, 0x0800_0000);
        let a_stack = u64::from(b.get(a + l.tcb.stack.offset));
        let c_stack = u64::from(b.get(c + l.tcb.stack.offset));
        let mut mem = b.finish(0);
        let mut s = kernel(ContextLayout::NoFpu)
            .read_tasks(&mut mem, None)
            .unwrap();
        // The same kernel built without configRECORD_STACK_HIGH_ADDRESS: no pxEndOfStack.
        let k = kernel(ContextLayout::NoFpu);
        let mut layout = k.layout().clone();
        layout.tcb.end_of_stack = None;
        let k = crate::FreeRtos::from_parts(layout, k.port().clone(), StackFill::Seen);
        let mut no_top = k.read_tasks(&mut mem, None).unwrap();
        assert!(no_top.anomalies.is_empty(), "{:?}", no_top.anomalies);
        assert_eq!(no_top.task(c).unwrap().stack.high, None);
        // Blocks out of order; A's TCB block and both stacks in use, C's TCB block free.
        s.attribute_heap(&heap(&[
            (c_stack - 8, STACK_BYTES + 8, false),
            (a - 8, 0x60, false),
            (a_stack - 8, STACK_BYTES + 8, false),
            (c - 8, 0x60, true),
        ]));
        let ta = s.task(a).unwrap();
        assert_eq!(
            ta.tcb_block,
            Some(HeapBlock {
                addr: a - 8,
                size: 0x60
            })
        );
        assert_eq!(ta.stack_block.unwrap().addr, a_stack - 8);
        assert_eq!(ta.stack.high_from, Some(StackTop::EndOfStack));
        let tc = s.task(c).unwrap();
        assert_eq!(tc.tcb_block, None);
        assert_eq!(tc.stack.high_from, Some(StackTop::EndOfStack));
        // Without pxEndOfStack, a stack's top is its block's end.
        no_top.attribute_heap(&heap(&[(c_stack - 8, STACK_BYTES + 8, false)]));
        let tc = no_top.task(c).unwrap();
        assert_eq!(tc.stack.high, Some(c_stack + STACK_BYTES));
        assert_eq!(tc.stack.high_from, Some(StackTop::HeapBlock));
        assert_eq!(tc.stack.size(), Some(STACK_BYTES));
        assert!(
            s.anomalies
                .iter()
                .any(|x| x.kind == AnomalyKind::FreeBlock && x.addr == Some(c)),
            "{:?}",
            s.anomalies
        );
        let owned = s.task_blocks();
        assert_eq!(owned.len(), 3);
        assert!(owned.iter().all(|o| o.state == TaskState::Ready));
        assert_eq!(
            owned.iter().filter(|o| o.role == BlockRole::Stack).count(),
            2
        );
        // No heap block holds an address past the last block's end.
        let mut lone = s.clone();
        lone.tasks.iter_mut().for_each(|t| t.tcb_block = None);
        lone.attribute_heap(&heap(&[(0x1000, 0x10, false)]));
        assert!(lone.tasks.iter().all(|t| t.tcb_block.is_none()));
    }
}
