//! One module per subcommand, plus what they share: loading the ELF, choosing the walker,
//! walking a halted target (`shared`), and memlife's environment variables (`environment`, the
//! one place they are read).

pub mod arena;
mod audit;
pub mod diff;
mod environment;
mod heap;
mod init;
mod probes;
mod serve;
mod shared;
mod snapshot;
mod symbols;
mod tasks;

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{Cli, Command};
pub use shared::{load_symbols, walk, walker};

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
