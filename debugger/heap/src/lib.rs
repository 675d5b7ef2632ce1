//! Heap walkers: rebuild an allocator's state from target RAM. The layout facts each walker
//! relies on, with the upstream versions they hold for, are in docs/allocators/.
//!
//! A walker is built once from the ELF's symbols ([`detect()`]), which resolves every address,
//! member offset and constant it needs; [`HeapWalker::walk`] then reads the allocator's
//! globals and its arena (a handful of large reads, or chunks as the walk follows the headers:
//! see [`image`] and [`sparse`]) and parses on the host.
//!
//! Corruption is data, not an error: every pointer is bounds-checked and every loop is bounded,
//! so a damaged heap yields a [`HeapState`] with [`Anomaly`]s (cycle, out of range, overlap, size
//! overflow, counter mismatch). A core halted inside malloc/free is reported as
//! [`HeapStatus::Busy`], not as corrupt. Only failures to read memory are errors.
//!
//! ```no_run
//! use std::path::Path;
//! use memlife_heap::{HeapWalker, WalkContext, WalkerOptions};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let symbols = memlife_dwarf::Symbols::load(Path::new("fw.elf"))?;
//! // The allocator is recognised from the symbols; `Some(kind)` would force one.
//! let walker = memlife_heap::detect(&symbols, None, &WalkerOptions::default(), None)?;
//! let mut ram = memlife_core::Snapshot::load(Path::new("fw.snap"))?;
//! let heap = walker.walk(&mut ram, WalkContext::default())?;
//! println!("{}: {} B used, {} B free, {} anomalies",
//!     heap.allocator, heap.used, heap.total_free, heap.anomalies.len());
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//! - `walker`: [`HeapWalker`], the trait every walker implements; `context`: [`WalkContext`],
//!   what a walk is told that memory cannot say.
//! - `kind`: [`AllocatorKind`], the allocators by name; `options`: [`WalkerOptions`], what the
//!   user says that the symbols cannot.
//! - [`api`]: what a walker says about its allocator's API: [`EntryPoint`]s, [`BlockRef`],
//!   [`LowWaterMark`], [`ResolvedSymbol`].
//! - [`state`]: [`HeapState`], [`Block`], [`Anomaly`] and the metrics of docs/heap-json.md.
//! - [`firmware_view`]: what the firmware's own heap API would return, computed from a walk.
//! - [`image`]: [`image::MemImage`], the memory a walker parses: a few address ranges read
//!   whole (bulk) or on demand ([`sparse`], small chunks cached across the walk).
//! - [`link_model`]: `--walk bulk|sparse|auto`, the link's cost model that decides `auto`, and
//!   the [`LinkState`] a caller keeps between the walks of one target.
//! - [`halted`]: [`walk_halted`], the walk of a halted core with busy detection from its pc.
//! - [`mod@detect`]: choosing the walker from the symbols, or from `--allocator`.
//! - [`render`]: a heap state as the text table, block list, summary line and JSON every
//!   command and monitor command prints.
//! - `walkers`: one module per allocator (`freertos` covers heap_4 and heap_5, `nano`,
//!   `dlmalloc`, `tlsf` the ESP-IDF heap with its several regions, see [`HeapRegion`]).

#![deny(missing_docs)]

pub mod api;
mod context;
pub mod detect;
pub mod error;
pub mod firmware_view;
pub mod halted;
pub mod image;
mod kind;
pub mod link_model;
mod options;
pub mod render;
pub mod sparse;
pub mod state;
#[cfg(test)]
mod testing;
mod walker;
mod walkers;

pub use api::{BlockRef, EntryPoint, EntryRole, HeaderRange, LowWaterMark, ResolvedSymbol};
pub use context::WalkContext;
pub use detect::detect;
pub use error::HeapError;
pub use firmware_view::{FirmwareView, parse_caps};
pub use halted::{HaltedWalk, allocator_function_at, walk_at, walk_halted};
pub use kind::AllocatorKind;
pub use link_model::{LinkModel, LinkState, ReadPlan, ReadReport, WalkStrategy};
pub use options::WalkerOptions;
pub use state::{Anomaly, AnomalyKind, Block, HeapRegion, HeapState, HeapStatus};
pub use walker::HeapWalker;
pub use walkers::tlsf::Poisoning;
