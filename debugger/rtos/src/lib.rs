//! FreeRTOS tasks read from target RAM through DWARF: every task with its state, priority,
//! stack bounds, saved registers and stack high-water mark; which heap blocks are its TCB and
//! stack; and who runs now, cheaply, for tagging allocations. The kernel facts this crate
//! relies on, with the FreeRTOS versions they hold for, are in docs/rtos.md.
//!
//! Pure analysis over [`memlife_core::Memory`] and [`memlife_dwarf::Symbols`], like the heap
//! walkers: no target control. [`FreeRtos::from_symbols`] resolves the kernel's globals and
//! the members of its types by name once; [`FreeRtos::read_tasks`] then reads the globals in
//! one bulk read, follows each task list item by item, and reads the TCBs and the stacks in
//! two pipelined requests.
//!
//! Corruption is data, not an error: every list walk is bounded by its `uxNumberOfItems` and a
//! cycle guard, every pointer is checked before it is followed, a read of memory the target
//! will not give is an [`Anomaly`] and the read goes on. Only a layout memlife cannot resolve
//! and a failing link are errors.
//!
//! # Layout
//! - [`layout`]: [`KernelLayout`], the globals and the members of `TCB_t`, `List_t` and
//!   `ListItem_t`, by name.
//! - [`port`]: [`Port`], which port the firmware runs (with or without FPU context).
//! - [`frame`]: the context a port saves on a task's stack, decoded ([`frame::decode`]).
//! - `list`: one list walk.
//! - `walk`: one read of every task ([`TaskSnapshot`]).
//! - [`task`]: [`Task`], [`TaskState`], [`TaskSnapshot`] and what they hold.
//! - [`heap`]: the tasks' TCB and stack blocks in a heap walk.
//! - `current`: who runs now and the tick count ([`Now`]), in at most two round trips; the
//!   running task's unused stack.
//! - [`render`]: a snapshot as the table and the JSON of `memlife tasks`
//!   (docs/tasks-json.md).
//! - [`anomaly`]: [`Anomaly`] and its kinds.
//! - `testing` (feature `testing`, and this crate's own tests): a synthetic kernel in fake RAM
//!   for the tests of code that reads tasks (this crate's, `memlife serve`'s threads).

pub mod anomaly;
mod current;
mod error;
pub mod frame;
pub mod heap;
pub mod layout;
mod list;
pub mod port;
mod read;
pub mod render;
pub mod task;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;
mod walk;

use memlife_core::Memory;
use memlife_core::cortex_m::CoreRegisters;
use memlife_dwarf::Symbols;

pub use anomaly::{Anomaly, AnomalyKind};
pub use error::RtosError;
pub use heap::{BlockRole, TaskBlock};
pub use layout::KernelLayout;
pub use list::MAX_LIST_ITEMS;
pub use port::Port;
pub use task::{
    Allocation, HeapBlock, HighWater, Now, RegisterSource, Running, StackBounds, StackFill,
    StackTop, Task, TaskRegisters, TaskSnapshot, TaskState,
};
pub use walk::{MAX_STACK_BYTES, MAX_TASKS, MAX_TOTAL_STACK_BYTES, STACK_FILL};

/// A FreeRTOS kernel found in an ELF, with its layout and port resolved.
#[derive(Debug, Clone)]
pub struct FreeRtos {
    layout: KernelLayout,
    port: Port,
    stack_fill: StackFill,
}

impl FreeRtos {
    /// Finds the kernel in the ELF's DWARF. [`RtosError::NotFound`] when there is none;
    /// another error when it is there but memlife cannot read it (naming what is missing).
    pub fn from_symbols(symbols: &Symbols) -> Result<FreeRtos, RtosError> {
        let layout = KernelLayout::from_symbols(symbols)?;
        let port = Port::detect(symbols, layout.tcb.mpu_settings);
        let stack_fill = configured_fill(symbols, &layout);
        tracing::debug!(?port, ?stack_fill, "FreeRTOS kernel found");
        Ok(FreeRtos {
            layout,
            port,
            stack_fill,
        })
    }

    /// A kernel from a layout and port resolved elsewhere (a test's synthetic kernel, a layout
    /// kept from an earlier load).
    pub fn from_parts(layout: KernelLayout, port: Port, stack_fill: StackFill) -> FreeRtos {
        FreeRtos {
            layout,
            port,
            stack_fill,
        }
    }

    /// Whether the ELF has a FreeRTOS kernel at all (`pxCurrentTCB`), without resolving it.
    pub fn present(symbols: &Symbols) -> bool {
        symbols.has_symbol("pxCurrentTCB") || symbols.has_symbol("pxCurrentTCBs")
    }

    /// The resolved layout.
    pub fn layout(&self) -> &KernelLayout {
        &self.layout
    }

    /// The port.
    pub fn port(&self) -> &Port {
        &self.port
    }

    /// Reads every task from memory. `core` is the halted core's registers, when known: the
    /// running task's registers, and whether the core is in an exception handler.
    pub fn read_tasks(
        &self,
        mem: &mut dyn Memory,
        core: Option<&CoreRegisters>,
    ) -> Result<TaskSnapshot, RtosError> {
        walk::read_tasks(self, mem, core)
    }

    /// Who runs now, given the core's xPSR: an ISR in handler mode (no read), `main` before
    /// the scheduler starts, else the current task and its name (two round trips).
    pub fn running(&self, mem: &mut dyn Memory, xpsr: u32) -> Result<Running, RtosError> {
        Ok(current::now(self, mem, xpsr, false)?.running)
    }

    /// Who runs now and the tick count (`xTickCount`), given the core's xPSR: in handler mode
    /// one read (the tick count), otherwise two round trips (the globals together, then the
    /// running task's name).
    pub fn now(&self, mem: &mut dyn Memory, xpsr: u32) -> Result<Now, RtosError> {
        current::now(self, mem, xpsr, true)
    }

    /// Whether the kernel fills new stacks with 0xa5, as far as the build tells.
    pub fn stack_fill(&self) -> StackFill {
        self.stack_fill
    }

    /// The lowest address of the stack of the task whose TCB is at `tcb` (`pxStack`); `None`
    /// when the TCB cannot be read or holds none.
    pub fn stack_low(&self, mem: &mut dyn Memory, tcb: u64) -> Result<Option<u64>, RtosError> {
        current::stack_low(self, mem, tcb)
    }

    /// The bytes still holding the 0xa5 fill from `low` upward, reading at most `limit` bytes
    /// (and never more than [`MAX_STACK_BYTES`]): a stack's unused depth when `low` is its
    /// `pxStack`. `None` when the memory cannot be read.
    pub fn unused_stack(
        &self,
        mem: &mut dyn Memory,
        low: u64,
        limit: u64,
    ) -> Result<Option<u64>, RtosError> {
        current::unused_stack(mem, low, limit)
    }
}

/// What the build says about the 0xa5 fill of new stacks: tasks.c fills them when the trace
/// facility, `INCLUDE_uxTaskGetStackHighWaterMark(2)` or stack-overflow checking method 2 is
/// configured; the first two leave marks in the ELF.
fn configured_fill(symbols: &Symbols, layout: &KernelLayout) -> StackFill {
    if layout.tcb.number.is_some() {
        StackFill::Configured("configUSE_TRACE_FACILITY (uxTCBNumber is in the TCB)")
    } else if symbols.has_symbol("uxTaskGetStackHighWaterMark")
        || symbols.has_symbol("uxTaskGetStackHighWaterMark2")
    {
        StackFill::Configured("uxTaskGetStackHighWaterMark is linked")
    } else {
        StackFill::Unknown
    }
}
