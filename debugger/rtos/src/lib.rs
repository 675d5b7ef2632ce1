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
//! ```no_run
//! use std::path::Path;
//! use memlife_rtos::FreeRtos;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let symbols = memlife_dwarf::Symbols::load(Path::new("fw.elf"))?;
//! let kernel = FreeRtos::from_symbols(&symbols)?;
//! let mut ram = memlife_core::Snapshot::load(Path::new("fw.snap"))?;
//! let snapshot = kernel.read_tasks(&mut ram, None)?;
//! for task in &snapshot.tasks {
//!     println!("{} {:?}", task.name, task.state);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//! - `kernel`: [`FreeRtos`], the kernel resolved from the ELF once.
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

#![deny(missing_docs)]

pub mod anomaly;
mod current;
mod error;
pub mod frame;
pub mod heap;
mod kernel;
pub mod layout;
mod list;
mod mode;
pub mod port;
mod read;
pub mod render;
pub mod task;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;
mod walk;

pub use anomaly::{Anomaly, AnomalyKind};
pub use error::RtosError;
pub use heap::{BlockRole, TaskBlock};
pub use kernel::FreeRtos;
pub use layout::KernelLayout;
pub use list::MAX_LIST_ITEMS;
pub use port::Port;
pub use task::{
    Allocation, HeapBlock, HighWater, Now, RegisterSource, Running, StackBounds, StackFill,
    StackTop, Task, TaskRegisters, TaskSnapshot, TaskState,
};
pub use walk::{MAX_STACK_BYTES, MAX_TASKS, MAX_TOTAL_STACK_BYTES, STACK_FILL};
