//! `memlife`: the heap lifecycle debugger for on-device ML firmware.
//!
//! The binary stays thin: parse the flags ([`cli`]), run one command ([`commands`]), and turn any
//! error into one line on stderr and exit code 2 (0 = all good, 1 = a check failed).
//!
//! # Layout
//! - [`cli`]: the clap definitions (the command line the README documents).
//! - [`boards`]: real boards through probe-rs (cargo feature `probe`, on by default), the only
//!   code that differs without it.
//! - [`probe_choice`]: `--probe`, a USB probe or the virtual probe over QEMU (`qemu[:MACHINE]`).
//! - `virtual_board`: `--probe qemu`, QEMU behind memlife's virtual SWD probe (feature `probe`).
//! - [`session`]: opening a target (`--gdb`, `--qemu`, `--snapshot`) and cleaning up after it.
//! - [`runto`]: running to the N-th entry of a function with a timeout.
//! - [`outputs`]: the audit's output files: stale ones replaced at the start, each written on
//!   its own at the end.
//! - [`progress`]: the audit's progress spinner or plain lines.
//! - [`wide`]: `memlife audit` over a list of targets (`[[matrix]]`, several `--config`s).
//! - [`commands`]: one module per subcommand (`serve` runs the GDB server of `memlife-server`).

mod boards;
// The doc comments of the clap arguments are `--help`'s text, where `[diff]` names a
// memlife.toml table, not a Rust item.
#[allow(rustdoc::broken_intra_doc_links)]
mod cli;
mod commands;
mod exit_status;
mod outputs;
mod probe_choice;
mod progress;
mod runto;
mod session;
#[cfg(feature = "probe")]
mod virtual_board;
mod wide;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use exit_status::EXIT_INTERRUPTED;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    init_tracing(args.verbose);
    install_interrupt_handler();
    let result = commands::run(args);
    if memlife_core::interrupt::requested() {
        // Whatever the command made of it, the user stopped the run: say so, shell-style.
        if let Err(err) = &result {
            let _ = writeln!(std::io::stderr(), "error: {err:#}");
        }
        let _ = writeln!(
            std::io::stderr(),
            "memlife: interrupted; breakpoints removed and the target released as asked"
        );
        return ExitCode::from(EXIT_INTERRUPTED);
    }
    match result {
        Ok(code) => code,
        Err(err) => {
            // A closed pipe (`memlife heap | head`) is not an error worth a message.
            if err
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            let text = format!("{err:#}");
            let _ = writeln!(
                std::io::stderr(),
                "error: {}",
                memlife_core::text::printable(&text)
            );
            ExitCode::from(2)
        }
    }
}

/// The first Ctrl-C (or SIGTERM) asks the running command to stop: waits on the target end,
/// the script aborts, and the normal cleanup runs (breakpoints removed, reports written, the
/// target resumed or left as asked). A second one exits at once; a QEMU memlife started dies
/// with it through its parent-death signal.
fn install_interrupt_handler() {
    let result = ctrlc::set_handler(|| {
        if memlife_core::interrupt::requested() {
            let _ = writeln!(std::io::stderr(), "memlife: interrupted again; exiting now");
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
        let _ = writeln!(
            std::io::stderr(),
            "memlife: interrupted; cleaning up (press Ctrl-C again to exit at once)"
        );
        memlife_core::interrupt::request();
    });
    if let Err(e) = result {
        tracing::warn!("no Ctrl-C handler: {e}");
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
