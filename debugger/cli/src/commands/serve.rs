//! `memlife serve`: open the target, then be a GDB server for it until told to stop.

use std::cell::RefCell;
use std::net::TcpListener;
use std::process::ExitCode;
use std::rc::Rc;

use anyhow::{Context, Result, bail};
use memlife_core::Target;
use memlife_rsp::{GdbRemote, QemuProcess};

use crate::cli::{Leave, ServeArgs};
use crate::session::Session;

pub fn run(args: ServeArgs) -> Result<ExitCode> {
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
    // QEMUs started again after the firmware ended: they outlive the connections to them.
    let restarted: Rc<RefCell<Vec<QemuProcess>>> = Rc::default();
    let (target, outcome) = memlife_server::serve_firmware(
        &listener,
        target,
        symbols,
        Some(args.elf.display().to_string()),
        restart(&args, Rc::clone(&restarted)),
    );
    session.give_back(target);
    let closed = session.close();
    drop(restarted);
    outcome?;
    closed?;
    Ok(ExitCode::SUCCESS)
}

/// How `monitor reset` brings the backend back after the firmware ended with it: a new QEMU
/// (the old one exited with the firmware), or a new connection to the GDB server, halted at the
/// reset vector. A probe keeps its connection: its own reset does.
fn restart(
    args: &ServeArgs,
    restarted: Rc<RefCell<Vec<QemuProcess>>>,
) -> Option<memlife_server::Restart> {
    let reset = args.target.reset.clone();
    if let Some(machine) = args.target.qemu.clone() {
        let elf = args.elf.clone();
        return Some(Box::new(move || {
            let qemu = QemuProcess::start(&machine, &elf, &[])
                .map_err(|e| format!("cannot start qemu-system-arm -M {machine} again: {e}"))?;
            let mut remote = qemu
                .connect()
                .map_err(|e| format!("cannot connect to the new QEMU: {e}"))?;
            remote.set_reset_command(reset.clone());
            restarted.borrow_mut().push(qemu);
            Ok(Box::new(remote) as Box<dyn Target>)
        }));
    }
    let addr = args.target.gdb.clone()?;
    Some(Box::new(move || {
        let mut remote = GdbRemote::connect(&addr)
            .map_err(|e| format!("cannot connect to the GDB server at {addr} again: {e}"))?;
        remote.set_reset_command(reset.clone());
        if let Some(c) = remote.control() {
            c.reset(true)
                .map_err(|e| format!("resetting the target: {e}"))?;
        }
        Ok(Box::new(remote) as Box<dyn Target>)
    }))
}
