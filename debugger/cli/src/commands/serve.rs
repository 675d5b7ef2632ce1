//! `memlife serve`: open the target, then be a GDB server for it until told to stop.

use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use memlife_server::Listener;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::cli::{Leave, ServeArgs};
use crate::session::Session;

pub fn run(mut args: ServeArgs) -> Result<ExitCode> {
    // A server runs as long as its user wants: only an explicit --deadline bounds it.
    args.target.no_default_deadline = true;
    if let Some(chip) = &args.target.chip {
        crate::boards::require_cortex_m(chip)?;
    }
    let symbols = super::load_symbols(&args.elf)?;
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
    // The socket file goes when the server ends, whatever happens next.
    let _socket = socket.map(RemoveOnDrop);
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
    let (target, outcome) = memlife_server::serve_on(
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

/// Removes the socket file when dropped.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
