//! One module per subcommand, plus what they share: loading the ELF, choosing the walker, and
//! walking a halted target.

pub mod arena;
mod audit;
pub mod diff;
mod heap;
mod init;
mod probes;
mod serve;
mod snapshot;
mod symbols;
mod tasks;

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use memlife_core::Target;
use memlife_dwarf::Symbols;
use memlife_heap::{HeapWalker, WalkerOptions};

use crate::cli::{Cli, Command, HeapOptions};

/// Runs the chosen subcommand.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Symbols(args) => symbols::run(args),
        Command::Heap(args) => heap::run(args),
        Command::Tasks(args) => tasks::run(args),
        Command::Snapshot(args) => snapshot::run(args),
        Command::Audit(args) => audit::run(*args, cli.verbose),
        Command::Serve(args) => serve::run(args),
        Command::Probes => probes::run(),
        Command::Init(args) => init::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Arena(args) => arena::run(args),
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
    set_walk(opts.walk)?;
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
        poisoning: opts
            .poisoning
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(anyhow::Error::msg)?,
    };
    let mem = target.map(|t| t.as_memory());
    Ok(memlife_heap::detect(symbols, forced, &walker_opts, mem)?)
}

/// Sets how every later heap walk reads the arena (`--walk`, default auto), after checking
/// `MEMLIFE_LINK_MODEL` so that a bad model is refused before anything runs.
pub fn set_walk(walk: Option<memlife_heap::WalkStrategy>) -> Result<()> {
    memlife_heap::model_from_env().map_err(anyhow::Error::msg)?;
    memlife_heap::set_walk_strategy(walk.unwrap_or(memlife_heap::WalkStrategy::Auto));
    Ok(())
}

/// Walks the heap of a halted target (busy detection from its pc) and what it cost on the link.
pub fn walk(
    target: &mut dyn Target,
    symbols: &Symbols,
    walker: &dyn HeapWalker,
) -> Result<(memlife_heap::HeapState, memlife_core::LinkStats)> {
    let walked = memlife_heap::walk_halted(walker, symbols, target).context("walking the heap")?;
    Ok((walked.state, walked.link))
}
