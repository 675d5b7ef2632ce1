//! What the subcommands share: the ELF loaded (refused without DWARF), the heap walker built,
//! a halted target's heap walked.

use std::path::Path;

use anyhow::{Context, Result, bail};
use memlife_core::Target;
use memlife_dwarf::Symbols;
use memlife_heap::{AllocatorKind, HeapWalker, LinkState, WalkerOptions};

/// Loads the ELF; an ELF without DWARF is refused, since every layout comes from it.
pub fn load_symbols(elf: &Path) -> Result<Symbols> {
    let symbols = Symbols::load(elf)?;
    if !symbols.has_dwarf() {
        bail!(
            "{} has no DWARF debug information (.debug_info): rebuild the firmware with -g",
            elf.display()
        );
    }
    Ok(symbols)
}

/// Builds the walker of `allocator` (detected from the symbols when `None`).
pub fn walker(
    symbols: &Symbols,
    allocator: Option<AllocatorKind>,
    options: &WalkerOptions,
    target: Option<&mut dyn Target>,
) -> Result<Box<dyn HeapWalker>> {
    let mem = target.map(|t| t.as_memory());
    Ok(memlife_heap::detect(symbols, allocator, options, mem)?)
}

/// Walks the heap of a halted target (busy detection from its pc) as `link` says, and what it
/// cost on the link.
pub fn walk(
    target: &mut dyn Target,
    symbols: &Symbols,
    walker: &dyn HeapWalker,
    link: &mut LinkState,
) -> Result<(memlife_heap::HeapState, memlife_core::LinkStats)> {
    let walked =
        memlife_heap::walk_halted(walker, symbols, target, link).context("walking the heap")?;
    Ok((walked.state, walked.link))
}
