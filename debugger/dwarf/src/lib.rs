//! ELF symbols and DWARF for memlife.
//!
//! [`Symbols`] is loaded once per ELF and answers the questions the heap walkers and the audit
//! engine ask: where is this static (scoped by compile unit, because `xStart` in `heap_4.c` is not
//! the `xStart` of another file), what is its type, where does that struct member sit, what is this
//! folded constant, where does this function start, and which function and source line hold this pc.
//!
//! The file is parsed once and its bytes are held once: the symbol table, the function index
//! (pc to function in `O(log n)`), the code, DWARF and CFI sections are all read from that one
//! parse, the sections as ranges of the shared bytes rather than copies. Variables and types are
//! collected eagerly into plain tables (firmware images are small; a few milliseconds); line
//! tables are built by `addr2line` on first use.
//!
//! ```no_run
//! use std::path::Path;
//! use memlife_dwarf::{Symbols, read_variable};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let symbols = Symbols::load(Path::new("fw.elf"))?;
//! if let Some((addr, size)) = symbols.static_location("xStart", &["heap_4.c"]) {
//!     println!("xStart at {addr:#010x}, {size:?} bytes");
//! }
//! for frame in symbols.locate(0x0800_0124) {
//!     println!("{:?} {:?}:{:?}", frame.function, frame.file, frame.line);
//! }
//! // A global's value, decoded by its DWARF type, from any memlife_core::Memory.
//! let mut snap = memlife_core::Snapshot::load(Path::new("fw.snap"))?;
//! println!("{}", read_variable(&symbols, &mut snap, "xFreeBytesRemaining")?.to_json());
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//! - `symbols`: [`Symbols`], the loaded image and the questions it answers directly;
//!   [`FunctionLookup`].
//! - `error`: [`SymbolError`], why loading failed, and the crate's [`Result`].
//! - `elf`: the one parse of the file: symbol table ([`ElfSymbol`]), function index, sections,
//!   the processor ([`Machine`]).
//! - `types`: the type table ([`Type`], [`TypeId`]): structs, members, C++ base classes
//!   ([`Base`]), arrays, pointers, enums.
//! - [`demangle`](mod@demangle): C++ and Rust linkage names as people write them
//!   ([`demangle_name`]), and a function found by its demangled name.
//! - `vars`: variables ([`Variable`]) collected from every compile unit, with their scope.
//! - `source`: pc → function, file and line through `addr2line`, and a line table's rows.
//! - [`location`]: where to stop as users write it: a function, `FILE:LINE` or `*ADDR`; the
//!   places an inlined function was inlined into.
//! - [`unwind`]: call-stack unwinding through DWARF CFI ([`Backtrace`], [`Frame`]); `cfi`: the
//!   CFI sections of one image ([`Unwinder`]); `task_exit`: the RTOS task-exit traps where a
//!   walk ends.
//! - [`value`]: typed reads of globals into [`Value`]s for scripts and reports.

#![deny(missing_docs)]

mod cfi;
pub mod demangle;
mod elf;
mod error;
pub mod location;
mod source;
mod symbols;
mod task_exit;
mod types;
pub mod unwind;
pub mod value;
mod vars;

pub use demangle::demangle as demangle_name;
pub use elf::{ElfSymbol, Machine, SymbolKind};
pub use error::{Result, SymbolError};
pub use location::{CodeLocation, InlinedInstance, LocationError, LocationSpec};
pub use source::SourceLocation;
pub use symbols::{FunctionLookup, FunctionRange, Symbols};
pub use types::{Base, Member, Type, TypeId, TypeTable};
pub use unwind::{Backtrace, Frame, UnwindEnd, Unwinder};
pub use value::{Value, ValueError, read_c_string, read_typed, read_variable, read_variable_in};
pub use vars::Variable;
