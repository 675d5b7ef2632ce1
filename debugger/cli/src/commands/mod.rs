//! One module per subcommand, plus what they share: loading the ELF, choosing the walker, and
//! walking a halted target.

mod audit;
mod heap;
mod snapshot;
mod symbols;

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use memlife_core::{LinkStats, Register, Target};
use memlife_dwarf::Symbols;
use memlife_heap::{HeapState, HeapWalker, WalkContext, WalkerOptions};

use crate::cli::{Cli, Command, HeapOptions};

/// Runs the chosen subcommand.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Symbols(args) => symbols::run(args),
        Command::Heap(args) => heap::run(args),
        Command::Snapshot(args) => snapshot::run(args),
        Command::Audit(args) => audit::run(args),
    }
}

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

/// Builds the walker the flags and symbols call for.
pub fn walker(
    symbols: &Symbols,
    opts: &HeapOptions,
    target: Option<&mut dyn Target>,
) -> Result<Box<dyn HeapWalker>> {
    let forced = opts
        .allocator
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let walker_opts = WalkerOptions {
        heap_regions: opts.heap_region.clone(),
        heap_break: opts.heap_break,
        heap_limit: opts.heap_limit,
    };
    let mem = target.map(|t| t.as_memory());
    Ok(memlife_heap::detect(symbols, forced, &walker_opts, mem)?)
}

/// The pc and the function that holds it.
pub fn where_stopped(target: &mut dyn Target, symbols: &Symbols) -> Option<(u64, Option<String>)> {
    let pc = target.read_register(Register::ProgramCounter).ok()?;
    Some((pc, symbols.function_at(pc).map(|s| s.name.clone())))
}

/// Walks the heap of a halted target, with busy detection from the pc, and what it cost.
pub fn walk(
    target: &mut dyn Target,
    symbols: &Symbols,
    walker: &dyn HeapWalker,
) -> Result<(HeapState, LinkStats)> {
    let (mallocs, frees) = walker.entry_points();
    let inside_allocator = where_stopped(target, symbols)
        .and_then(|(_, f)| f)
        .and_then(|f| mallocs.iter().chain(frees).copied().find(|n| *n == f));
    let before = target.link_stats();
    let state = walker
        .walk(target.as_memory(), WalkContext { inside_allocator })
        .context("walking the heap")?;
    let after = target.link_stats();
    let link = LinkStats {
        reads: after.reads - before.reads,
        bytes: after.bytes - before.bytes,
        max_read: after.max_read,
    };
    Ok((state, link))
}
