//! `memlife serve`: a GDB remote server over memlife's backends.
//!
//! gdb (gdb-multiarch) connects to memlife as it would to OpenOCD or QEMU; memlife forwards
//! memory, registers, run control, breakpoints and watchpoints to the backend it holds (QEMU's
//! gdbstub, OpenOCD, a probe server) and adds heap views as `monitor` commands, computed with
//! memlife's own bulk reads rather than gdb's `m` packets. Clients come and go on one listener;
//! the backend stays connected until the server ends.
//!
//! # Layout
//! - `arch`: the Cortex-M architecture gdbstub lacks (m-profile registers, target.xml).
//! - `bridge`: the gdbstub target over a `memlife_core::Target`, and the blocking event loop
//!   (short backend waits, Ctrl-C polling, transparent dump-on breakpoints).
//! - `monitor`: the `monitor` commands (`heap`, `dump`, `dump-on`, `reset`, ...).
//! - `audit`: `monitor audit FILE`, a Rhai script run on the target gdb is looking at.
//! - [`client`]: a client's connection, with a deadline on every packet and a bound on its size.
//! - [`replay`]: a session over bytes in memory (the packet path without a socket), for fuzzing
//!   and packet-level tests.
//! - [`places`]: where a client's dumps, reports and scripts may be (never outside the server's
//!   directories).
//! - [`error`]: [`ServeError`], with its causes as sources.
//! - [`heap`]: walking a halted target and writing JSON dumps atomically; the views of a heap are
//!   `memlife_heap::render`'s, as for `memlife heap`.

mod arch;
mod audit;
mod bridge;
pub mod client;
pub mod error;
pub mod heap;
mod monitor;
pub mod places;
pub mod replay;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::time::Duration;

use gdbstub::stub::{DisconnectReason, GdbStub};
use memlife_core::{StopReason, Target, interrupt};
use memlife_dwarf::Symbols;

pub use bridge::{Bridge, Restart};
pub use error::{Result, ServeError};

use crate::error::Context;

/// How often an idle server (no client) looks at the listener and the backend.
const IDLE_POLL: Duration = Duration::from_millis(50);

/// Serves gdb clients one after the other on `listener` until a client asks for
/// `monitor shutdown`, or the backend fails. Gives the backend back in any case, with gdb's
/// breakpoints removed and the core running (memlife's dump-on breakpoints stay until the caller
/// cleans up).
pub fn serve(
    listener: &TcpListener,
    target: Box<dyn Target>,
    symbols: Symbols,
) -> (Box<dyn Target>, Result<()>) {
    serve_firmware(listener, target, symbols, None, None)
}

/// [`serve`], with the firmware's path for the facts of `monitor report`, and how to start the
/// backend again when the firmware ends with it (`monitor reset` after a QEMU exit).
pub fn serve_firmware(
    listener: &TcpListener,
    target: Box<dyn Target>,
    symbols: Symbols,
    firmware: Option<String>,
    restart: Option<Restart>,
) -> (Box<dyn Target>, Result<()>) {
    serve_in(
        listener,
        target,
        symbols,
        firmware,
        restart,
        places::Places::default(),
    )
}

/// Where clients connect: a TCP port or a Unix socket.
#[derive(Debug)]
pub enum Listener {
    /// `HOST:PORT`.
    Tcp(TcpListener),
    /// A Unix socket (owner-only permissions are the caller's job).
    Unix(std::os::unix::net::UnixListener),
}

impl Listener {
    fn set_nonblocking(&self) -> std::io::Result<()> {
        match self {
            Listener::Tcp(l) => l.set_nonblocking(true),
            Listener::Unix(l) => l.set_nonblocking(true),
        }
    }

    /// The next client, blocking, and a name for it.
    fn accept(&self) -> std::io::Result<(client::Stream, String)> {
        match self {
            Listener::Tcp(l) => {
                let (s, peer) = l.accept()?;
                s.set_nonblocking(false)?;
                Ok((client::Stream::Tcp(s), peer.to_string()))
            }
            Listener::Unix(l) => {
                let (s, _) = l.accept()?;
                s.set_nonblocking(false)?;
                Ok((client::Stream::Unix(s), "on the unix socket".to_string()))
            }
        }
    }
}

/// [`serve_firmware`], with the directories clients may use.
pub fn serve_in(
    listener: &TcpListener,
    target: Box<dyn Target>,
    symbols: Symbols,
    firmware: Option<String>,
    restart: Option<Restart>,
    places: places::Places,
) -> (Box<dyn Target>, Result<()>) {
    match listener.try_clone() {
        Ok(l) => serve_on(
            &Listener::Tcp(l),
            target,
            symbols,
            firmware,
            restart,
            places,
        ),
        Err(e) => (target, Err(e).context("using the listener")),
    }
}

/// [`serve_in`] on any [`Listener`].
pub fn serve_on(
    listener: &Listener,
    target: Box<dyn Target>,
    symbols: Symbols,
    firmware: Option<String>,
    restart: Option<Restart>,
    places: places::Places,
) -> (Box<dyn Target>, Result<()>) {
    serve_watching(
        listener,
        target,
        symbols,
        firmware,
        restart,
        places,
        client::WatchStops::Unknown,
    )
}

/// [`serve_on`], telling LLDB clients when the backend's watchpoint stops come.
pub fn serve_watching(
    listener: &Listener,
    target: Box<dyn Target>,
    symbols: Symbols,
    firmware: Option<String>,
    restart: Option<Restart>,
    places: places::Places,
    watch_stops: client::WatchStops,
) -> (Box<dyn Target>, Result<()>) {
    let mut bridge = Bridge::new(target, symbols);
    bridge.watch_stops = watch_stops;
    bridge.firmware = firmware;
    bridge.places = places;
    bridge.restart = restart;
    serve_bridge(listener, bridge)
}

/// Serves gdb clients over a [`Bridge`] set up by the caller (its public fields: the firmware,
/// the directories, the restart, the watchpoint stops, the walk choices) until a client asks
/// for `monitor shutdown`, or the backend fails; gives the backend back in any case.
pub fn serve_bridge(listener: &Listener, mut bridge: Bridge) -> (Box<dyn Target>, Result<()>) {
    let outcome = serve_clients(listener, &mut bridge);
    (bridge.into_target(), outcome)
}

fn serve_clients(listener: &Listener, bridge: &mut Bridge) -> Result<()> {
    listener
        .set_nonblocking()
        .context("configuring the listener")?;
    loop {
        let (stream, peer) = match listener.accept() {
            Ok(c) => c,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                if interrupt::requested() {
                    eprintln!("memlife serve: interrupted; shutting down");
                    return Ok(());
                }
                idle(bridge)?;
                continue;
            }
            Err(e) => return Err(e).context("accepting a gdb client"),
        };
        eprintln!("memlife serve: gdb client {peer} connected");
        bridge.on_attach();
        if let Some(msg) = bridge.ended_message() {
            eprintln!("memlife serve: told gdb client {peer}: {}", msg.trim_end());
        }
        // A fixed buffer: a packet longer than it ends the session instead of growing memory.
        let mut buffer = vec![0u8; client::MAX_PACKET];
        let conn = client::ClientConn::with_watch_stops(stream, bridge.watch_stops);
        let stub = match GdbStub::builder(conn)
            .with_packet_buffer(&mut buffer)
            .build()
        {
            Ok(stub) => stub,
            Err(e) => {
                return Err(ServeError::Command(format!(
                    "starting the gdb session: {e}"
                )));
            }
        };
        match stub.run_blocking::<bridge::EventLoop>(bridge) {
            Ok(DisconnectReason::Disconnect) => {
                eprintln!("memlife serve: gdb client {peer} detached; the target runs on");
                bridge.on_detach(true);
            }
            Ok(DisconnectReason::Kill) => {
                eprintln!(
                    "memlife serve: gdb client {peer} killed the session; the target stays halted"
                );
                bridge.on_detach(false);
            }
            Ok(DisconnectReason::TargetExited(code)) => {
                if bridge.ended.is_none() {
                    bridge.firmware_ended(StopReason::Exited(i32::from(code)));
                }
                bridge.on_detach(false);
            }
            Ok(DisconnectReason::TargetTerminated(sig)) => {
                if bridge.ended.is_none() {
                    bridge.firmware_ended(StopReason::Terminated(sig.0));
                }
                bridge.on_detach(false);
            }
            Err(_) if interrupt::requested() => {
                eprintln!("memlife serve: interrupted; gdb client {peer} dropped, shutting down");
                bridge.on_detach(true);
                return Ok(());
            }
            Err(e) if e.is_target_error() => {
                let e = e.into_target_error();
                bridge.on_detach(true);
                return Err(e.unwrap_or_else(|| {
                    ServeError::Command("the target failed without saying why".into())
                }));
            }
            Err(e) => {
                eprintln!("memlife serve: gdb client {peer} went away ({e}); the target runs on");
                bridge.on_detach(true);
            }
        }
        if bridge.shutdown {
            return Ok(());
        }
        eprintln!("memlife serve: waiting for the next gdb client");
    }
}

/// No client: keep the backend's stops handled (dump-on breakpoints continue on their own).
fn idle(bridge: &mut Bridge) -> Result<()> {
    if !bridge.is_running() {
        std::thread::sleep(IDLE_POLL);
        return Ok(());
    }
    let stop = match bridge.target.control() {
        Some(c) => match c.wait_for_stop(IDLE_POLL) {
            Ok(stop) => stop,
            // The firmware ended and took the backend with it (QEMU exits with it): wait for a
            // client to `monitor reset` it rather than end the server.
            Err(e) if e.kind() == memlife_core::ErrorKind::Gone => {
                bridge.firmware_ended(match e {
                    memlife_core::TargetError::Exited(code) => StopReason::Exited(code),
                    _ => StopReason::Terminated(9),
                });
                return Ok(());
            }
            Err(e) => return Err(e).context("waiting on the target"),
        },
        None => None,
    };
    if let Some(reason @ (StopReason::Exited(_) | StopReason::Terminated(_))) = stop {
        bridge.firmware_ended(reason);
        return Ok(());
    }
    if let Some(reason) = stop {
        // With no client, a stop that is not memlife's own stays for the next client to see.
        bridge
            .on_backend_stop(reason)
            .context("continuing after a dump")?;
    }
    Ok(())
}
