//! The server's loop: clients one after the other from the [`Lobby`], each a gdbstub session
//! over the [`Bridge`]; between clients, the backend's stops are watched for the firmware's end.

use std::rc::Rc;
use std::time::Duration;

use gdbstub::stub::{DisconnectReason, GdbStub};
use memlife_core::{StopReason, interrupt};

use crate::bridge::Bridge;
use crate::client::{self, ClientConn, SharedConn};
use crate::error::{Context, Result, ServeError};
use crate::event::{Departure, ServeEvent};
use crate::lobby::{Arrival, Listener, Lobby};

/// How often an idle server (no client) looks at the backend and the interrupt flag.
const IDLE_POLL: Duration = Duration::from_millis(50);

/// What the server does after a session.
enum Next {
    /// Serve the next client.
    Serve,
    /// End the server (shutdown asked, or interrupted).
    End,
}

/// Serves clients until one asks for `monitor shutdown`, the server is interrupted, or the
/// backend fails.
pub(crate) fn serve_clients(listener: &Listener, bridge: &mut Bridge) -> Result<()> {
    let lobby = Lobby::open(listener, bridge.events())?;
    loop {
        let Some(arrival) = lobby.next(IDLE_POLL)? else {
            if interrupt::requested() {
                bridge.notify(ServeEvent::ShuttingDown { peer: None });
                return Ok(());
            }
            idle(bridge)?;
            continue;
        };
        lobby.set_busy(true);
        let next = session(bridge, arrival);
        lobby.set_busy(false);
        match next? {
            Next::End => return Ok(()),
            Next::Serve => bridge.notify(ServeEvent::Waiting),
        }
    }
}

/// One client's gdb session.
fn session(bridge: &mut Bridge, arrival: Arrival) -> Result<Next> {
    let peer = arrival.peer;
    bridge.notify(ServeEvent::Connected { peer: peer.clone() });
    bridge.on_attach();
    if let Some(message) = bridge.ended_message() {
        bridge.notify(ServeEvent::Told {
            peer: peer.clone(),
            message,
        });
    }
    // A fixed buffer: a packet longer than it ends the session instead of growing memory.
    let mut buffer = vec![0u8; client::MAX_PACKET];
    let mut client = ClientConn::with_watch_stops(arrival.stream, bridge.watch_stops, arrival.at);
    if let Some(current) = bridge.current_thread() {
        client.answer_threads(current);
    }
    let conn = SharedConn::new(client);
    bridge.client = Some(Rc::new(conn.clone()));
    let stub = GdbStub::builder(conn)
        .with_packet_buffer(&mut buffer)
        .build()
        .map_err(ServeError::Session)?;
    let left = |how| ServeEvent::Left {
        peer: peer.clone(),
        how,
    };
    match stub.run_blocking::<crate::event_loop::EventLoop>(bridge) {
        Ok(DisconnectReason::Disconnect) => {
            bridge.notify(left(Departure::Detached));
            bridge.on_detach(true);
        }
        Ok(DisconnectReason::Kill) => {
            bridge.notify(left(Departure::Killed));
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
            bridge.notify(ServeEvent::ShuttingDown { peer: Some(peer) });
            bridge.on_detach(true);
            return Ok(Next::End);
        }
        Err(e) if e.is_target_error() => {
            let e = e.into_target_error();
            bridge.on_detach(true);
            return Err(e.unwrap_or(ServeError::Unexplained));
        }
        Err(e) => {
            bridge.notify(left(Departure::WentAway(e.to_string())));
            bridge.on_detach(true);
        }
    }
    Ok(if bridge.shutdown {
        Next::End
    } else {
        Next::Serve
    })
}

/// No client: keep the backend's stops handled, and notice the firmware's end.
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
    match stop {
        Some(reason @ (StopReason::Exited(_) | StopReason::Terminated(_))) => {
            bridge.firmware_ended(reason);
        }
        // With no client, a stop that is not memlife's own stays for the next client to see.
        Some(reason) => {
            bridge
                .on_backend_stop(reason)
                .context("continuing after a stop")?;
        }
        None => {}
    }
    Ok(())
}
