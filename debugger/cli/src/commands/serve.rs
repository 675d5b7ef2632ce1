//! `memlife serve`: open the target, then be a GDB server for it until told to stop.

use std::cell::RefCell;
use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;

use anyhow::{Context, Result, bail};
use memlife_core::{Target, TargetError};
use memlife_rsp::{GdbRemote, QemuProcess};
use memlife_server::client::WatchStops;
use memlife_server::{Listener, ServeError, ServeEvent, ServeOptions};

use crate::cli::{Leave, ServeArgs};
use crate::session::Session;

pub fn run(mut args: ServeArgs) -> Result<ExitCode> {
    // A server runs as long as its user wants: only an explicit --deadline bounds it.
    args.target.no_default_deadline = true;
    if let Some(chip) = &args.target.chip {
        crate::boards::require_cortex_m(chip)?;
    }
    let symbols = super::load_symbols(&args.elf)?;
    let env = super::environment::read()?;
    let (listener, bound, socket) = match args.listen.strip_prefix("unix:") {
        Some(path) => {
            let path = PathBuf::from(path);
            let l = bind_unix(&path)?;
            (l, format!("unix:{}", path.display()), Some(path))
        }
        None => {
            let addr: SocketAddr = args.listen.parse().with_context(|| {
                format!("--listen {}: give HOST:PORT or unix:PATH", args.listen)
            })?;
            if !addr.ip().is_loopback() && !args.allow_remote {
                bail!(
                    "--listen {addr} is not a loopback address: anyone who reaches it can control the target; add --allow-remote to mean it"
                );
            }
            let l = TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))?;
            let bound = l.local_addr().context("reading the bound address")?;
            (Listener::Tcp(l), bound.to_string(), None)
        }
    };
    // The socket file goes when the server ends, whatever happens next (if it is still ours).
    let _socket = socket.map(OurSocket::new).transpose()?;
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
    // QEMUs started again after the firmware ended: they outlive the connections to them.
    let restarted: Rc<RefCell<Vec<QemuProcess>>> = Rc::default();
    let options = ServeOptions {
        firmware: Some(args.elf.clone()),
        restart: restart(&args, Rc::clone(&restarted)),
        // `monitor audit` starts again only a QEMU serve started, as `memlife audit` does.
        started_backend: args.target.qemu.is_some() || behind_virtual_probe(&args),
        places,
        watch_stops: watch_stops(&args),
        max_dumps: args.max_dumps,
        audit_deadline: std::time::Duration::try_from_secs_f64(args.audit_deadline)
            .context("--audit-deadline")?,
        events: Some(std::sync::Arc::new(print_event)),
        // The same walk choices as `memlife heap`, for `monitor heap` and `monitor audit` alike.
        link: super::environment::link(args.walk, &env),
        tuning: env.tuning,
        threads: !args.no_threads,
    };
    let served = memlife_server::serve(&listener, target, symbols, options);
    session.give_back(served.target);
    let closed = session.close();
    drop(restarted);
    served.outcome?;
    closed?;
    Ok(ExitCode::SUCCESS)
}

/// A server event as the `memlife serve: ...` line users and scripts read on stderr.
fn print_event(event: &ServeEvent) {
    let line = format!("memlife serve: {event}");
    eprintln!("{}", memlife_core::text::printable(&line));
}

/// A new Unix socket at `path` that only its owner may connect to. An existing file is never
/// replaced (it may be someone else's); connecting needs write permission on the socket, which
/// the default umask already withholds from others until the mode is set to 0600.
fn bind_unix(path: &Path) -> Result<Listener> {
    if std::fs::symlink_metadata(path).is_ok() {
        bail!(
            "--listen unix:{}: the path exists; remove it first (memlife does not replace files)",
            path.display()
        );
    }
    let l = UnixListener::bind(path)
        .with_context(|| format!("cannot listen on unix:{}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("making unix:{} owner-only", path.display()))?;
    Ok(Listener::Unix(l))
}

/// When the backend's write-watchpoint stops come, for LLDB (which must step over the store
/// itself when they come first). Measured: QEMU's gdbstub stops before the store, with memory
/// still old, and memlife's virtual probe passes QEMU's watchpoints on; a real Cortex-M's DWT
/// halts after the storing instruction. A GDB server memlife did not start is not guessed at.
/// The count announced is a Cortex-M4's four DWT comparators (the virtual probe's `NUMCOMP`;
/// QEMU's own gdbstub has no fixed limit).
fn watch_stops(args: &ServeArgs) -> WatchStops {
    use crate::probe_choice::ProbeChoice;
    const SLOTS: u32 = 4;
    if args.target.qemu.is_some() {
        return WatchStops::Before { slots: SLOTS };
    }
    if args.target.chip.is_some() {
        return match args.target.probe.probe {
            Some(ProbeChoice::Qemu { .. }) => WatchStops::Before { slots: SLOTS },
            _ => WatchStops::After,
        };
    }
    WatchStops::Unknown
}

/// The socket file this server created, known by device and inode: removed when dropped, but
/// only while that path is still this socket (whoever replaced it keeps their file).
struct OurSocket {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl OurSocket {
    fn new(path: PathBuf) -> Result<OurSocket> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(&path)
            .with_context(|| format!("reading unix:{}", path.display()))?;
        Ok(OurSocket {
            dev: meta.dev(),
            ino: meta.ino(),
            path,
        })
    }

    fn still_ours(&self) -> bool {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| m.file_type().is_socket() && m.dev() == self.dev && m.ino() == self.ino)
    }
}

impl Drop for OurSocket {
    fn drop(&mut self) {
        if self.still_ours() {
            let _ = std::fs::remove_file(&self.path);
        } else {
            eprintln!(
                "memlife serve: unix:{} is no longer memlife's socket (replaced or removed); left as it is",
                memlife_core::text::printable(&self.path.display().to_string())
            );
        }
    }
}

/// How `monitor reset` brings the backend back after the firmware ended with it: a new QEMU
/// (the old one exited with the firmware; behind the virtual probe too), or a new connection to
/// the GDB server, halted at the reset vector. A USB probe keeps its connection: its own reset
/// does.
fn restart(
    args: &ServeArgs,
    restarted: Rc<RefCell<Vec<QemuProcess>>>,
) -> Option<memlife_server::Restart> {
    let reset = args.target.reset.clone();
    if behind_virtual_probe(args)
        && let Some(chip) = args.target.chip.clone()
    {
        // A fresh QEMU behind a fresh virtual probe, attached as at the start.
        let (probe, elf) = (args.target.probe.clone(), args.elf.clone());
        return Some(Box::new(move || {
            let (target, qemu) = crate::boards::open(&chip, &probe, &elf).map_err(|e| {
                ServeError::Command(format!(
                    "cannot start the QEMU behind the virtual probe again: {e:#}"
                ))
            })?;
            restarted.borrow_mut().extend(qemu);
            Ok(target)
        }));
    }
    if let Some(machine) = args.target.qemu.clone() {
        let elf = args.elf.clone();
        return Some(Box::new(move || {
            let qemu = QemuProcess::start(&machine, &elf, &[]).map_err(|source| {
                failed(
                    format!("cannot start qemu-system-arm -M {machine} again"),
                    source,
                )
            })?;
            let mut remote = qemu
                .connect()
                .map_err(|source| failed("cannot connect to the new QEMU".into(), source))?;
            remote.set_reset_command(reset.clone());
            restarted.borrow_mut().push(qemu);
            Ok(Box::new(remote) as Box<dyn Target>)
        }));
    }
    let addr = args.target.gdb.clone()?;
    Some(Box::new(move || {
        let mut remote = GdbRemote::connect(&addr).map_err(|source| {
            failed(
                format!("cannot connect to the GDB server at {addr} again"),
                source,
            )
        })?;
        remote.set_reset_command(reset.clone());
        if let Some(c) = remote.control() {
            c.reset(true)
                .map_err(|source| failed("resetting the target".into(), source))?;
        }
        Ok(Box::new(remote) as Box<dyn Target>)
    }))
}

/// `--chip ... --probe qemu`: serve started the QEMU behind memlife's virtual probe.
fn behind_virtual_probe(args: &ServeArgs) -> bool {
    args.target.chip.is_some()
        && matches!(
            args.target.probe.probe,
            Some(crate::probe_choice::ProbeChoice::Qemu { .. })
        )
}

/// A restart that failed while doing `context`.
fn failed(context: String, source: TargetError) -> ServeError {
    ServeError::Target { context, source }
}
