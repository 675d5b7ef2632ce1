//! `memlife serve`: open the target, then be a GDB server for it until told to stop.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::cli::{Leave, ServeArgs};
use crate::session::Session;

pub fn run(mut args: ServeArgs) -> Result<ExitCode> {
    // A server runs as long as its user wants: only an explicit --deadline bounds it.
    args.target.no_default_deadline = true;
    if !args.listen.ip().is_loopback() && !args.allow_remote {
        bail!(
            "--listen {} is not a loopback address: anyone who reaches it can control the target; add --allow-remote to mean it",
            args.listen
        );
    }
    if let Some(chip) = &args.target.chip {
        crate::boards::require_cortex_m(chip)?;
    }
    let symbols = super::load_symbols(&args.elf)?;
    let listener = TcpListener::bind(args.listen)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let bound = listener.local_addr().context("reading the bound address")?;
    let mut session = Session::open(&args.target, &args.elf, Leave::Running)?;
    eprintln!("memlife serve: listening on {bound}");
    let target = session.lend()?;
    let places = memlife_server::places::Places {
        dump_dir: args.dump_dir.clone(),
        script_dirs: if args.script_dir.is_empty() {
            vec![PathBuf::from(".")]
        } else {
            args.script_dir.clone()
        },
    };
    let (target, outcome) = memlife_server::serve_in(
        &listener,
        target,
        symbols,
        Some(args.elf.display().to_string()),
        places,
    );
    session.give_back(target);
    let closed = session.close();
    outcome?;
    closed?;
    Ok(ExitCode::SUCCESS)
}
