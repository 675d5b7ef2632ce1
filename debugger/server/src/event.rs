//! [`ServeEvent`]: what happens to the server that its user should hear of (clients coming and
//! going, the firmware ending, a dump that failed), handed to the caller's [`EventSink`] as
//! typed values. The library prints nothing itself: `memlife serve` prints each event as a
//! `memlife serve: ...` line (its [`Display`](std::fmt::Display)); without a sink they go to
//! `tracing` at debug level.

use std::sync::Arc;

use memlife_core::StopReason;

/// Receives the server's events. Called from the server's thread and from the thread that
/// accepts clients while one is served, hence `Send + Sync`.
pub type EventSink = Arc<dyn Fn(&ServeEvent) + Send + Sync>;

/// How a client's session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Departure {
    /// gdb detached: the target runs on.
    Detached,
    /// gdb killed the session: the target stays halted.
    Killed,
    /// The connection failed or closed, or the client broke a rule (silent, stalled, too
    /// long); the words say which.
    WentAway(String),
}

/// Why a `dump-on` stopped writing dumps without a `dump-off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpOnEnd {
    /// It wrote as many dumps as one `dump-on` may (`--max-dumps`).
    Limit,
    /// The client that asked for it left.
    ClientLeft,
}

/// Something that happened to the server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServeEvent {
    /// A client's session starts.
    Connected {
        /// Who (`127.0.0.1:40000`, `on the unix socket`).
        peer: String,
    },
    /// A client arrived while another is served: it waits its turn.
    Queued {
        /// Who.
        peer: String,
    },
    /// A client arrived while the waiting line was full: told so and disconnected.
    Refused {
        /// Who.
        peer: String,
        /// How many were waiting.
        waiting: usize,
    },
    /// A new client was told at once how the firmware ended.
    Told {
        /// Who.
        peer: String,
        /// What it was told.
        message: String,
    },
    /// A client's session ended.
    Left {
        /// Who.
        peer: String,
        /// How.
        how: Departure,
    },
    /// The server waits for the next client.
    Waiting,
    /// Ctrl-C or SIGTERM to the server: it ends (after dropping `peer`, when one was served).
    ShuttingDown {
        /// The client dropped, if any.
        peer: Option<String>,
    },
    /// The firmware ended (or the backend with it); `monitor reset` starts it again.
    FirmwareEnded {
        /// How.
        how: StopReason,
    },
    /// A `dump-on` dump could not be written.
    DumpFailed {
        /// The function whose entry was reached.
        symbol: String,
        /// The path asked for.
        path: String,
        /// Why, with its causes.
        error: String,
    },
    /// A `dump-on` ended without `dump-off`.
    DumpOnEnded {
        /// Its function.
        symbol: String,
        /// Dumps written.
        written: u32,
        /// Why.
        why: DumpOnEnd,
    },
    /// The backend refused a breakpoint gdb asked for (gdb only says it cannot insert it).
    BreakpointRefused {
        /// Where.
        addr: u64,
        /// The backend's words.
        error: String,
    },
    /// The ELF has a FreeRTOS kernel: whether its tasks are served as gdb threads (told once,
    /// when the server starts).
    RtosThreads {
        /// They are.
        served: bool,
        /// How the port was recognised, or why the tasks cannot be read.
        detail: String,
    },
    /// A client wrote registers of a task that is not running: refused (gdb only says it
    /// could not write them).
    RegisterWriteRefused {
        /// The task's thread, as gdb lists it.
        thread: String,
    },
}

/// The sentence that says how the firmware ended.
pub fn ended_text(how: &StopReason) -> String {
    match how {
        StopReason::Exited(code) => format!("the firmware exited with status {code}"),
        StopReason::Terminated(sig) => format!("the firmware was terminated by signal {sig}"),
        other => format!("the target is gone ({other:?})"),
    }
}

impl std::fmt::Display for ServeEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeEvent::Connected { peer } => write!(f, "gdb client {peer} connected"),
            ServeEvent::Queued { peer } => {
                write!(f, "gdb client {peer} waits: another client is being served")
            }
            ServeEvent::Refused { peer, waiting } => write!(
                f,
                "refused gdb client {peer}: another client is being served and {waiting} are waiting"
            ),
            ServeEvent::Told { peer, message } => {
                write!(f, "told gdb client {peer}: {}", message.trim_end())
            }
            ServeEvent::Left { peer, how } => match how {
                Departure::Detached => write!(f, "gdb client {peer} detached; the target runs on"),
                Departure::Killed => write!(
                    f,
                    "gdb client {peer} killed the session; the target stays halted"
                ),
                Departure::WentAway(why) => {
                    write!(f, "gdb client {peer} went away ({why}); the target runs on")
                }
            },
            ServeEvent::Waiting => f.write_str("waiting for the next gdb client"),
            ServeEvent::ShuttingDown { peer: None } => f.write_str("interrupted; shutting down"),
            ServeEvent::ShuttingDown { peer: Some(peer) } => {
                write!(f, "interrupted; gdb client {peer} dropped, shutting down")
            }
            ServeEvent::FirmwareEnded { how } => write!(
                f,
                "{}; the next gdb client can start it again with `monitor reset`",
                ended_text(how)
            ),
            ServeEvent::DumpFailed {
                symbol,
                path,
                error,
            } => write!(f, "dump at {symbol} to {path} failed: {error}"),
            ServeEvent::DumpOnEnded {
                symbol,
                written,
                why,
            } => write!(
                f,
                "no more dumps at {symbol} ({written} written): {}",
                match why {
                    DumpOnEnd::Limit => "as many as one dump-on writes (--max-dumps)",
                    DumpOnEnd::ClientLeft => "the gdb client that asked for them left",
                }
            ),
            ServeEvent::BreakpointRefused { addr, error } => {
                write!(f, "breakpoint at {addr:#010x} refused: {error}")
            }
            ServeEvent::RtosThreads {
                served: true,
                detail,
            } => write!(f, "FreeRTOS tasks are served as gdb threads ({detail})"),
            ServeEvent::RtosThreads {
                served: false,
                detail,
            } => write!(
                f,
                "FreeRTOS found, but its tasks are not served as threads: {detail}"
            ),
            ServeEvent::RegisterWriteRefused { thread } => write!(
                f,
                "register write to {thread} refused: the task is not running, its registers \
                 are the copy its port saved on its stack (write that memory to change them)"
            ),
        }
    }
}

/// Hands `event` to `sink`, or to `tracing` without one. What a peer or the firmware chose
/// (a peer's name is the OS's; paths and symbols are checked before use) is printed escaped by
/// the caller's terminal code, not here.
pub(crate) fn emit(sink: Option<&EventSink>, event: ServeEvent) {
    match sink {
        Some(sink) => sink(&event),
        None => tracing::debug!("{event}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words users and scripts read on stderr stay as they were.
    #[test]
    fn events_read_as_the_server_always_said_them() {
        let peer = || "127.0.0.1:5".to_string();
        assert_eq!(
            ServeEvent::Connected { peer: peer() }.to_string(),
            "gdb client 127.0.0.1:5 connected"
        );
        assert_eq!(
            ServeEvent::Left {
                peer: peer(),
                how: Departure::Detached
            }
            .to_string(),
            "gdb client 127.0.0.1:5 detached; the target runs on"
        );
        assert_eq!(
            ServeEvent::FirmwareEnded {
                how: StopReason::Exited(0)
            }
            .to_string(),
            "the firmware exited with status 0; the next gdb client can start it again with `monitor reset`"
        );
        assert_eq!(
            ServeEvent::Left {
                peer: peer(),
                how: Departure::WentAway("eof".into())
            }
            .to_string(),
            "gdb client 127.0.0.1:5 went away (eof); the target runs on"
        );
    }
}
