//! `memlife`: the heap lifecycle debugger for on-device ML firmware.
//!
//! The binary stays thin: parse the flags ([`cli`]), run one command ([`commands`]), and turn any
//! error into one line on stderr and exit code 2 (0 = all good, 1 = a check failed).
//!
//! # Layout
//! - [`cli`]: the clap definitions (the contract of DESIGN.md §3).
//! - [`session`]: opening a target (`--gdb`, `--qemu`, `--snapshot`) and cleaning up after it.
//! - [`runto`]: running to the N-th entry of a function with a timeout.
//! - [`render`]: text tables and JSON for heap states (from `memlife-server`, shared with
//!   `memlife serve`'s monitor commands).
//! - [`progress`]: the audit's progress spinner or plain lines.
//! - [`commands`]: one module per subcommand (`serve` runs the GDB server of `memlife-server`).

mod cli;
mod commands;
mod progress;
mod render;
mod runto;
mod session;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    init_tracing(args.verbose);
    match commands::run(args) {
        Ok(code) => code,
        Err(err) => {
            // A closed pipe (`memlife heap | head`) is not an error worth a message.
            if err
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            let _ = writeln!(std::io::stderr(), "error: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn init_tracing(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    // probe-rs warns about every USB driver that finds no device; memlife's own message says
    // what was looked for, so those warnings only show with -v.
    let level = if verbose == 0 {
        format!("{level},probe_rs=error")
    } else {
        level.to_string()
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("MEMLIFE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
