//! Where clients arrive: the [`Listener`], and a thread that accepts every client as it comes
//! so that the server can serve one while the next waits its turn in a line of at most
//! [`MAX_WAITING`]. A client that arrives when the line is full is refused with a reason gdb
//! prints (`E.` reply to its first packet) and disconnected. Each waiting client keeps the
//! instant it connected: the handshake deadline counts from there, so a silent client that
//! waited its turn is dropped as soon as it is served.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::client::Stream;
use crate::error::{Context, Result};
use crate::event::{EventSink, ServeEvent};

/// The most clients that wait while one is served.
pub const MAX_WAITING: usize = 4;

/// How often the accepting thread looks at the listener.
const ACCEPT_POLL: Duration = Duration::from_millis(20);

/// How long a refused client is given to read its refusal before the socket closes.
const REFUSAL_LINGER: Duration = Duration::from_millis(500);

/// Where clients connect: a TCP port or a Unix socket.
#[derive(Debug)]
pub enum Listener {
    /// `HOST:PORT`.
    Tcp(TcpListener),
    /// A Unix socket (owner-only permissions are the caller's job).
    Unix(UnixListener),
}

impl From<TcpListener> for Listener {
    fn from(l: TcpListener) -> Self {
        Listener::Tcp(l)
    }
}

impl Listener {
    fn try_clone(&self) -> std::io::Result<Listener> {
        Ok(match self {
            Listener::Tcp(l) => Listener::Tcp(l.try_clone()?),
            Listener::Unix(l) => Listener::Unix(l.try_clone()?),
        })
    }

    fn set_nonblocking(&self) -> std::io::Result<()> {
        match self {
            Listener::Tcp(l) => l.set_nonblocking(true),
            Listener::Unix(l) => l.set_nonblocking(true),
        }
    }

    /// The next client, if one is there, and a name for it.
    fn accept(&self) -> std::io::Result<(Stream, String)> {
        match self {
            Listener::Tcp(l) => {
                let (s, peer) = l.accept()?;
                s.set_nonblocking(false)?;
                Ok((Stream::Tcp(s), peer.to_string()))
            }
            Listener::Unix(l) => {
                let (s, _) = l.accept()?;
                s.set_nonblocking(false)?;
                Ok((Stream::Unix(s), "on the unix socket".to_string()))
            }
        }
    }
}

/// A client that connected, and when.
#[derive(Debug)]
pub struct Arrival {
    /// Its socket.
    pub stream: Stream,
    /// Its name in messages.
    pub peer: String,
    /// When it was accepted.
    pub at: Instant,
}

/// The accepting thread and the line of clients it fills; ending it (drop) stops the thread
/// and closes the connections of those still waiting.
pub struct Lobby {
    line: Receiver<std::io::Result<Arrival>>,
    stop: Arc<AtomicBool>,
    /// A client is being served (so one that arrives waits).
    busy: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Lobby {
    /// Starts accepting on `listener` (a clone of it: the caller's stays as it was).
    pub fn open(listener: &Listener, events: Option<EventSink>) -> Result<Lobby> {
        let listener = listener.try_clone().context("using the listener")?;
        listener
            .set_nonblocking()
            .context("configuring the listener")?;
        let (tx, line) = std::sync::mpsc::sync_channel(MAX_WAITING);
        let stop = Arc::new(AtomicBool::new(false));
        let busy = Arc::new(AtomicBool::new(false));
        let door = Door {
            line: tx,
            stop: Arc::clone(&stop),
            busy: Arc::clone(&busy),
            events,
        };
        let thread = std::thread::Builder::new()
            .name("memlife-serve-accept".into())
            .spawn(move || door.accept_loop(&listener))
            .context("starting the thread that accepts clients")?;
        Ok(Lobby {
            line,
            stop,
            busy,
            thread: Some(thread),
        })
    }

    /// Says whether a client is being served now.
    pub fn set_busy(&self, busy: bool) {
        self.busy.store(busy, Ordering::SeqCst);
    }

    /// The next client in line, waiting at most `wait`.
    pub fn next(&self, wait: Duration) -> Result<Option<Arrival>> {
        match self.line.recv_timeout(wait) {
            Ok(Ok(arrival)) => Ok(Some(arrival)),
            Ok(Err(e)) => Err(e).context("accepting a gdb client"),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(std::io::Error::other(
                "the thread that accepts clients ended",
            ))
            .context("accepting a gdb client"),
        }
    }
}

impl Drop for Lobby {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The accepting thread's side of the lobby.
struct Door {
    line: SyncSender<std::io::Result<Arrival>>,
    stop: Arc<AtomicBool>,
    busy: Arc<AtomicBool>,
    events: Option<EventSink>,
}

impl Door {
    fn accept_loop(&self, listener: &Listener) {
        while !self.stop.load(Ordering::SeqCst) {
            let (stream, peer) = match listener.accept() {
                Ok(c) => c,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                    std::thread::sleep(ACCEPT_POLL);
                    continue;
                }
                // A peer that reset the connection before it was accepted: nothing to serve.
                Err(e) if e.kind() == ErrorKind::ConnectionAborted => continue,
                Err(e) => {
                    // The server ends with this error once it reads it.
                    let _ = self.line.send(Err(e));
                    return;
                }
            };
            let arrival = Arrival {
                stream,
                peer: peer.clone(),
                at: Instant::now(),
            };
            match self.line.try_send(Ok(arrival)) {
                Ok(()) if self.busy.load(Ordering::SeqCst) => {
                    crate::event::emit(self.events.as_ref(), ServeEvent::Queued { peer });
                }
                Ok(()) => {}
                Err(TrySendError::Full(Ok(arrival))) => {
                    crate::event::emit(
                        self.events.as_ref(),
                        ServeEvent::Refused {
                            peer,
                            waiting: MAX_WAITING,
                        },
                    );
                    refuse(arrival.stream);
                }
                Err(TrySendError::Full(Err(_)) | TrySendError::Disconnected(_)) => return,
            }
        }
    }
}

/// Tells a client the server is busy, as an error reply to its first packet, and closes.
fn refuse(mut stream: Stream) {
    let body = format!(
        "E.memlife serve is busy: another gdb client is being served and {MAX_WAITING} are waiting; try again later"
    );
    let sum = body.bytes().fold(0u8, |a, b| a.wrapping_add(b));
    let _ = stream.write_all(format!("${body}#{sum:02x}").as_bytes());
    let _ = stream.flush();
    // Read what the client sent before closing: closing with unread bytes resets the
    // connection, and the reset can discard the refusal before the client reads it.
    stream.shutdown_write();
    let _ = stream.set_read_timeout(Some(REFUSAL_LINGER));
    let started = Instant::now();
    let mut sink = [0u8; 512];
    while started.elapsed() < REFUSAL_LINGER {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
}
