//! What the task observer asks of the RTOS kernel, behind a trait so that the engine's tests
//! can give a kernel of their own: who runs now and the tick count, the running task's stack,
//! and which heap blocks hold the listed tasks' TCBs and stacks. [`memlife_rtos::FreeRtos`]
//! answers it from the firmware's RAM through DWARF.

use memlife_core::Memory;
use memlife_heap::HeapState;
use memlife_rtos::{FreeRtos, Now, RtosError, TaskBlock};

/// An RTOS kernel, read at a stop.
pub trait Kernel {
    /// Who runs (`ISR n` in handler mode, `main` before the scheduler) and the tick count.
    fn now(&self, mem: &mut dyn Memory, xpsr: u32) -> Result<Now, RtosError>;

    /// The lowest address of the stack of the task whose TCB is at `tcb`.
    fn stack_low(&self, mem: &mut dyn Memory, tcb: u64) -> Result<Option<u64>, RtosError>;

    /// Bytes still holding the stack fill from `low` upward, reading at most `limit`.
    fn unused_stack(
        &self,
        mem: &mut dyn Memory,
        low: u64,
        limit: u64,
    ) -> Result<Option<u64>, RtosError>;

    /// Whether new stacks are filled (so that their unused depth can be counted).
    fn fills_stacks(&self) -> bool;

    /// `sizeof(StackType_t)`: a stack word, the unit of high-water marks.
    fn stack_word(&self) -> u64;

    /// The heap blocks of every task the kernel lists now (its TCB and stack), in `heap`, a
    /// walk of the same stop.
    fn task_blocks(
        &self,
        mem: &mut dyn Memory,
        heap: &HeapState,
    ) -> Result<Vec<TaskBlock>, RtosError>;
}

impl Kernel for FreeRtos {
    fn now(&self, mem: &mut dyn Memory, xpsr: u32) -> Result<Now, RtosError> {
        FreeRtos::now(self, mem, xpsr)
    }

    fn stack_low(&self, mem: &mut dyn Memory, tcb: u64) -> Result<Option<u64>, RtosError> {
        FreeRtos::stack_low(self, mem, tcb)
    }

    fn unused_stack(
        &self,
        mem: &mut dyn Memory,
        low: u64,
        limit: u64,
    ) -> Result<Option<u64>, RtosError> {
        FreeRtos::unused_stack(self, mem, low, limit)
    }

    fn fills_stacks(&self) -> bool {
        self.stack_fill().counted()
    }

    fn stack_word(&self) -> u64 {
        self.layout().tcb.stack_word.max(1)
    }

    fn task_blocks(
        &self,
        mem: &mut dyn Memory,
        heap: &HeapState,
    ) -> Result<Vec<TaskBlock>, RtosError> {
        let mut snap = self.read_tasks(mem, None)?;
        snap.attribute_heap(heap);
        Ok(snap.task_blocks())
    }
}
