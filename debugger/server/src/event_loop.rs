//! The blocking event loop gdbstub runs the [`Bridge`] with: the backend runs on its own (QEMU,
//! a probe), so waiting for a stop is a series of short waits on the backend with a look at the
//! client's connection in between (gdb's Ctrl-C arrives as data).

use std::time::Duration;

use gdbstub::conn::ConnectionExt;
use gdbstub::stub::run_blocking::{BlockingEventLoop, Event, WaitForStopReasonError};
use memlife_core::{StopReason, TargetError, interrupt};

use crate::bridge::{Bridge, StopReport};
use crate::client::SharedConn;
use crate::error::{Capability, Context, ServeError};

/// How long one wait on the backend lasts before the connection is polled for Ctrl-C.
const POLL: Duration = Duration::from_millis(10);

/// What the wait gives gdbstub, or why it failed.
type Waited = Result<Event<StopReport>, WaitForStopReasonError<ServeError, std::io::Error>>;

/// The blocking event loop.
pub enum EventLoop {}

impl EventLoop {
    /// The stop a replay ([`crate::replay`]) reports the moment gdb waits for one: the one
    /// already known (a single step, the firmware's end), else one the backend has at once (a
    /// fake target's scripted stop, memlife's dump-on stops handled on the way), else the
    /// target halted now.
    pub(crate) fn stop_now(target: &mut Bridge) -> Option<StopReport> {
        if let Some(stop) = target.pending.take() {
            return Some(target.translate(stop));
        }
        // Bounded: a backend whose every stop is memlife's own must not keep a replay here.
        for _ in 0..64 {
            if target.ended.is_some() || !target.is_running() {
                break;
            }
            match wait_on_backend(target, Duration::ZERO) {
                Ok(Backend::Stopped(stop)) => return Some(stop),
                Ok(Backend::Continued) => {}
                Ok(Backend::Quiet) | Err(_) => break,
            }
        }
        <EventLoop as BlockingEventLoop>::on_interrupt(target)
            .ok()
            .flatten()
    }
}

/// The client's next byte, if one came.
fn client_byte(conn: &mut SharedConn) -> Result<Option<u8>, std::io::Error> {
    if conn.peek()?.is_some() {
        return conn.read().map(Some);
    }
    Ok(None)
}

impl BlockingEventLoop for EventLoop {
    type Target = Bridge;
    type Connection = SharedConn;
    type StopReason = StopReport;

    fn wait_for_stop_reason(target: &mut Bridge, conn: &mut SharedConn) -> Waited {
        loop {
            if let Some(stop) = target.pending.take() {
                return Ok(Event::TargetStopped(target.translate(stop)));
            }
            if target.ended.is_none() {
                if let Backend::Stopped(stop) = wait_on_backend(target, POLL)? {
                    return Ok(Event::TargetStopped(stop));
                }
            } else {
                // Not running (resume did not start it): only the connection can say something.
                std::thread::sleep(POLL);
            }
            if let Some(byte) = client_byte(conn).map_err(WaitForStopReasonError::Connection)? {
                return Ok(Event::IncomingData(byte));
            }
        }
    }

    fn on_interrupt(target: &mut Bridge) -> Result<Option<StopReport>, ServeError> {
        target.stepping = false;
        if let Some(how) = &target.ended {
            return Ok(Some(target.translate(*how)));
        }
        let Some(c) = target.target.control() else {
            return Ok(Some(target.translate(StopReason::Halted)));
        };
        let reason = if c.is_halted() {
            StopReason::Halted
        } else {
            c.halt().context("halting the target")?
        };
        Ok(Some(target.translate(reason)))
    }
}

/// What one short wait on the running backend saw.
enum Backend {
    /// No stop.
    Quiet,
    /// One of memlife's own stops (dump-on), handled and continued.
    Continued,
    /// A stop gdb must hear of.
    Stopped(StopReport),
}

/// One short wait (`wait`) on the running backend.
fn wait_on_backend(
    target: &mut Bridge,
    wait: Duration,
) -> Result<Backend, WaitForStopReasonError<ServeError, std::io::Error>> {
    // Ctrl-C in memlife's own terminal ends the session (gdb's Ctrl-C arrives as data).
    if interrupt::requested() {
        return Err(WaitForStopReasonError::Target(ServeError::Target {
            context: "waiting for the target to stop".into(),
            source: TargetError::Interrupted,
        }));
    }
    let stop = target
        .target
        .control()
        .ok_or(ServeError::Lacks(Capability::RunControl))
        .and_then(|c| {
            c.wait_for_stop(wait)
                .context("waiting for the target to stop")
        })
        .map_err(WaitForStopReasonError::Target)?;
    match stop {
        None => Ok(Backend::Quiet),
        Some(reason @ (StopReason::Exited(_) | StopReason::Terminated(_))) => {
            target.firmware_ended(reason);
            Ok(Backend::Stopped(target.translate(reason)))
        }
        Some(reason) => match target.on_backend_stop(reason) {
            Ok(Some(report)) => Ok(Backend::Stopped(report)),
            Ok(None) => Ok(Backend::Continued),
            Err(e) => Err(WaitForStopReasonError::Target(ServeError::Target {
                context: "continuing after a dump".into(),
                source: e,
            })),
        },
    }
}
