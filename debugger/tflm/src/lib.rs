//! TensorFlow Lite Micro seen from RAM: its arenas found in a halted target without any
//! breakpoint, their figures, and each interpreter's tensor plan with its overlap check. Pure
//! analysis over [`memlife_core::Memory`] and [`memlife_dwarf::Symbols`], like the heap
//! walkers: bounded, never panics on any RAM content, corruption is data. The layout facts it
//! relies on, with the TFLM versions they hold for, are in docs/tflm.md.
//!
//! # The rules
//!
//! **Detection** ([`Tflm::detect`]): the ELF has TFLM when DWARF describes one of its arena
//! allocator classes (`SimpleMemoryAllocator`, `SingleArenaBufferAllocator`, their recording
//! subclasses, `PersistentArenaBufferAllocator`) in namespace `tflite`. Every member is found
//! by name, through base classes; the generation is told by `MicroInterpreter::allocator_`: a
//! `MicroAllocator` held by value is TFLM of 2020, a reference is current TFLM.
//!
//! **Where objects are looked for** ([`containers`]): heap blocks in use and static variables of
//! at least 16 bytes in the image's writable sections, never the heap's free blocks (which hold
//! stale objects) nor the stack.
//!
//! **An arena allocator** is an object of one of those classes that passes all of:
//! - its vtable pointers (polymorphic classes) are its class's vtable: the first is the address
//!   point of the `_ZTV` symbol, the others inside it;
//! - its cursors are in order inside a non-empty arena: `buffer_head_ <= head_ <= temp_ <=
//!   tail_ <= buffer_tail_` (`tail_temp_` for the persistent half of a split pair);
//! - the arena lies in the same container as the object, and the object is the arena's first
//!   persistent allocation, where TFLM's `Create` puts it: inside the tail, its end less than 16
//!   bytes below `buffer_tail_`.
//!
//! The non-persistent half of a split pair is taken only through a `MicroAllocator` that holds
//! both halves (its vtable and cursors checked the same way).
//!
//! **Tied to its interpreter**: current TFLM places the `MicroAllocator` in the arena's tail;
//! it is the object there (vtable checked) whose `persistent_buffer_allocator_` and
//! `non_persistent_buffer_allocator_` point at the arena allocator through its two interface
//! subobjects. The interpreter is a container word outside every arena equal to the
//! `MicroAllocator`'s address at `MicroInterpreter::allocator_`, whose `model_` is set and whose
//! `graph_.allocator_` agrees. In 2020 the interpreter holds its `MicroAllocator` by value: the
//! word is `allocator_.memory_allocator_`, and `allocator_.model_` must equal `model_` and
//! `allocator_.context_` point at the interpreter's own `context_`.
//!
//! **A damaged allocator**: an interpreter that holds together by itself (2020: its
//! `MicroAllocator`'s `context_` points back at its `context_` and has its `model_`; current: its
//! `graph_` points back at its `context_` and holds its `MicroAllocator`), outside every arena,
//! whose arena allocator lies in a container but fails the rules above, is reported with that
//! allocator and an `allocator-damaged` anomaly (no figures).
//!
//! **Stale copies**: of two arenas that overlap, one an interpreter uses wins over one no
//! interpreter uses (a new arena covering an old one's memory); overlaps that remain are
//! reported. Several interpreters at once each get their own arena.
//!
//! **The tensor plan** (after `AllocateTensors`): each tensor's data pointer against the arena's
//! sections, its size, and its lifetime from the model flatbuffer (`model_`, read with a bounded
//! reader of our own): graph inputs from operator 0, graph outputs to the last, otherwise from
//! the first operator writing it to the last reading it. Two planned buffers (tensors or
//! scratch buffers) sharing bytes while both are live are an overlap.
//!
//! ```no_run
//! use std::path::Path;
//! use memlife_tflm::{Tflm, containers, read_arenas};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let symbols = memlife_dwarf::Symbols::load(Path::new("fw.elf"))?;
//! let Some(tflm) = Tflm::detect(&symbols) else {
//!     return Ok(()); // no TFLM in this firmware
//! };
//! let mut ram = memlife_core::Snapshot::load(Path::new("fw.snap"))?;
//! // Static variables only here; a caller with a heap walk adds its blocks in use.
//! let places = containers(&symbols, &[], None);
//! let arenas = read_arenas(&mut ram, &symbols, &tflm, &places)?;
//! print!("{}", memlife_tflm::render::text(&arenas));
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//! - `layout`: detection from DWARF ([`Tflm`], [`Generation`]).
//! - `scan`: where objects are looked for ([`Container`]) and the arena allocator rules.
//! - `link`: the `MicroAllocator` and interpreter of each arena.
//! - `read`: one reading of a halted target ([`read_arenas`]).
//! - `runtime`: an interpreter's model, runtime tensors, registrations and scratch buffers,
//!   read for its plan.
//! - `arena`: the arena view ([`Arena`]) and [`minimum_arena_bytes`].
//! - `demand`: what a build asked of its arena, in order ([`ArenaDemand`]), and the smallest
//!   arena that holds it, replayed with TFLM's alignment.
//! - `live`: what a run-time observer reads at its stops ([`LiveLayout`]): cursors, the node
//!   being prepared, operator names, the planner, a model's name.
//! - `plan`: the tensor plan ([`TensorPlan`]), lifetimes, live bytes, reuse, overlaps.
//! - `flatbuffer`, `model`: the bounded flatbuffer reader and the TFLite schema fields used.
//! - `ram`: the memory a reading looks at (containers read whole, ELF constants, budgeted pages).
//! - [`render`]: the text section, the JSON `arenas[]` and `firmware_view.tflm`.

#![deny(missing_docs)]

mod arena;
mod demand;
mod error;
mod flatbuffer;
mod layout;
mod link;
mod live;
mod model;
mod plan;
mod ram;
mod read;
pub mod render;
mod runtime;
mod scan;
#[cfg(test)]
mod tests;

pub use arena::{
    ARENA_ALIGNMENT, Arena, ArenaAnomaly, Interpreter, Object, PersistentArena, minimum_arena_bytes,
};
pub use demand::{ArenaDemand, DemandStep, Shortfall, TailRequest};
pub use error::TflmError;
pub use layout::{Generation, Tflm};
pub use live::{
    AllocatorLayout, Cursors, InterpreterLayout, LiveLayout, ModelSummary, NodeLayout,
    PlannerFigures, PlannerLayout,
};
pub use plan::{
    BufferRef, Operator, Overlap, PlannedTensor, ScratchBuffer, TensorKind, TensorPlan,
};
pub use read::{MAX_ARENAS, heap_arenas, interpreter_plan, read_arenas};
pub use scan::{Container, ContainerKind, containers};
