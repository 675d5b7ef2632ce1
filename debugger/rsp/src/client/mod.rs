//! [`GdbRemote`]: a client for any GDB remote server, over TCP.
//!
//! Decisions:
//! - All-stop mode only. While the core runs, the only thing sent is the interrupt byte; every
//!   other request answers [`TargetError::NotHalted`].
//! - The target description is read during the handshake, before any `p`: QEMU 7.2 ignores `p`
//!   until it was read. Without one, the ARM layout is assumed ([`RegisterLayout::arm_fallback`]).
//! - Registers are little-endian (every Cortex-M is).
//! - Continuing or stepping from an inserted breakpoint first removes it, steps, and puts it
//!   back, as gdb does: QEMU would stop at once otherwise. After a watchpoint hit the step runs
//!   with the watchpoints removed, for the same reason (QEMU reports before the store).
//! - After `W`/`X`, a detach, a kill or a closed socket, every call fails cleanly with
//!   [`TargetError::Exited`] or [`TargetError::Gone`].
//!
//! # Layout
//! - `handshake`: connecting: `qSupported`, no-ack mode, `?`, `vCont?`, the target description.
//! - `requests`: one request and its reply; writes held back and sent with the next request.
//! - `memory`: `m` reads (pipelined, split to the packet size) and `M` writes.
//! - `registers`: the `g` image, `p`/`P`, the register layout.
//! - `breakpoints`: `Z`/`z` breakpoints and watchpoints.
//! - `run`: continue, step (off a breakpoint), interrupt, reset, waiting for stop replies.
//! - `reset`: which monitor command resets the target, by the server memlife talks to.
//! - `semihosting`: answering the firmware's semihosting calls (File-I/O requests).

mod breakpoints;
mod handshake;
mod memory;
mod registers;
mod requests;
pub(crate) mod reset;
mod run;
mod semihosting;

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use memlife_core::limits::Deadline;
use memlife_core::{BreakpointKind, LinkStats, Result, StopReason, TargetError, WatchKind};

use crate::conn::Conn;
use crate::packets::{self, monitor::Monitor, monitor::MonitorReply};
use crate::tdesc::RegisterLayout;

pub use crate::packets::supported::Features;

/// Packet size assumed when the server does not say (QEMU's).
const DEFAULT_PACKET_SIZE: usize = 0x1000;

/// How to connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Bound on the TCP connect.
    pub connect_timeout: Duration,
    /// Bound on every reply (not on [`memlife_core::Control::wait_for_stop`], which has its own).
    pub read_timeout: Duration,
    /// Bound on everything: the handshake and every later request fail with a timeout once
    /// this instant has passed (`None`: no bound beyond each reply's).
    pub deadline: Option<Instant>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(5),
            deadline: None,
        }
    }
}

/// What the core is doing, as far as the client knows.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RunState {
    Halted,
    Running,
    Exited(i32),
    Gone(String),
}

/// Why the core was last set running, to name the stop it reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Continue,
    Step,
    Interrupt,
}

/// A GDB remote server, connected.
#[derive(Debug)]
pub struct GdbRemote {
    conn: Conn,
    addr: String,
    timeout: Duration,
    features: Features,
    layout: RegisterLayout,
    has_tdesc: bool,
    state: RunState,
    pending: Pending,
    last_stop: Option<StopReason>,
    /// A stop that happened while stepping off a breakpoint, reported by the next wait.
    early_stop: Option<StopReason>,
    breakpoints: BTreeSet<(u64, BpKey)>,
    watchpoints: Vec<(u64, u64, WatchKind)>,
    regs_cache: Option<Vec<u8>>,
    /// Whether `s` at an inserted breakpoint advances (learned on the first such step).
    step_keeps_breakpoints: Option<bool>,
    /// The cached `g` image was changed by register writes not yet sent.
    regs_dirty: bool,
    /// Memory writes not yet sent (`M` packets), in order.
    pending_writes: Vec<Vec<u8>>,
    stats: LinkStats,
    /// The monitor command that resets the target: configured, or found at the first reset.
    reset_command: Option<String>,
    /// A semihosting request for host file access was refused (and said so) already.
    semihosting_refused: bool,
    /// The directory the firmware's semihosting calls may use (`--semihosting-dir`).
    semihosting_dir: Option<crate::SemihostingDir>,
    /// `qXfer:features:read` requests and bytes so far (bounded, see `handshake`).
    xfer_requests: u32,
    xfer_bytes: usize,
    /// The stderr of the QEMU this client talks to, when memlife started it.
    pub(crate) server_log: Option<std::sync::Arc<std::sync::Mutex<Vec<u8>>>>,
    /// When the whole command must be over (see [`ConnectOptions::deadline`]), and how long
    /// that was from when it was set.
    deadline: Option<(Instant, Duration)>,
}

/// `BreakpointKind` has no `Ord`; this mirrors it for the set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum BpKey {
    Software,
    Hardware,
}

impl From<BreakpointKind> for BpKey {
    fn from(k: BreakpointKind) -> Self {
        match k {
            BreakpointKind::Software => BpKey::Software,
            BreakpointKind::Hardware => BpKey::Hardware,
        }
    }
}

impl From<BpKey> for BreakpointKind {
    fn from(k: BpKey) -> Self {
        match k {
            BpKey::Software => BreakpointKind::Software,
            BpKey::Hardware => BreakpointKind::Hardware,
        }
    }
}

impl GdbRemote {
    /// Connects to `HOST:PORT` with default timeouts (5 s) and runs the handshake.
    pub fn connect(addr: &str) -> Result<GdbRemote> {
        Self::connect_with(addr, ConnectOptions::default())
    }

    /// Connects with explicit timeouts and runs the handshake.
    pub fn connect_with(addr: &str, options: ConnectOptions) -> Result<GdbRemote> {
        let addrs: Vec<SocketAddr> = addr
            .to_socket_addrs()
            .map_err(|e| TargetError::transport(format!("resolving {addr}"), e))?
            .collect();
        let mut last = None;
        let mut stream = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, options.connect_timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let stream = match (stream, last) {
            (Some(s), _) => s,
            (None, Some(e)) => {
                return Err(TargetError::transport(format!("connecting to {addr}"), e));
            }
            (None, None) => {
                return Err(TargetError::transport(
                    format!("resolving {addr}"),
                    std::io::Error::new(std::io::ErrorKind::NotFound, "no address"),
                ));
            }
        };
        // Latency dominates: one request, one reply, no batching.
        stream
            .set_nodelay(true)
            .map_err(|e| TargetError::transport("configuring the socket", e))?;
        let mut client = GdbRemote {
            conn: Conn::new(stream),
            addr: addr.to_string(),
            timeout: options.read_timeout,
            features: Features::default(),
            layout: RegisterLayout::arm_fallback(),
            has_tdesc: false,
            state: RunState::Halted,
            pending: Pending::Continue,
            last_stop: None,
            early_stop: None,
            breakpoints: BTreeSet::new(),
            watchpoints: Vec::new(),
            regs_cache: None,
            step_keeps_breakpoints: None,
            regs_dirty: false,
            pending_writes: Vec::new(),
            stats: LinkStats::default(),
            reset_command: None,
            semihosting_refused: false,
            semihosting_dir: None,
            xfer_requests: 0,
            xfer_bytes: 0,
            server_log: None,
            deadline: options
                .deadline
                .map(|d| (d, d.saturating_duration_since(Instant::now()))),
        };
        client.handshake()?;
        Ok(client)
    }

    // ---------------------------------------------------------------- inherent API

    /// The address connected to (`HOST:PORT`).
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// What the server said it supports.
    pub fn features(&self) -> &Features {
        &self.features
    }

    /// The register layout in use (from the target description or the ARM fallback).
    pub fn layout(&self) -> &RegisterLayout {
        &self.layout
    }

    /// Whether the server gave a target description.
    pub fn has_target_description(&self) -> bool {
        self.has_tdesc
    }

    /// Sets (or lifts) the bound on the whole session, see [`ConnectOptions::deadline`].
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline.map(|d| (d, d.saturating_duration_since(Instant::now())));
    }

    /// Fails once the deadline has passed.
    pub(crate) fn check_deadline(&self) -> Result<()> {
        match self.deadline {
            Some((d, after)) if Instant::now() >= d => Err(TargetError::Timeout {
                after,
                waiting_for: "the whole command, --deadline",
            }),
            _ => Ok(()),
        }
    }

    /// `timeout`, shortened so it ends by the deadline.
    pub(crate) fn until_deadline(&self, timeout: Duration) -> Duration {
        match self.deadline {
            Some((d, _)) => timeout.min(d.saturating_duration_since(Instant::now())),
            None => timeout,
        }
    }

    /// Changes the bound on every reply.
    pub fn set_read_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Link cost so far.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// Runs a monitor command (`qRcmd`) and returns its console output.
    pub fn monitor(&mut self, cmd: &str) -> Result<String> {
        self.check_halted()?;
        let request = Monitor { command: cmd };
        let timeout = self.timeout;
        let r = self.conn.send(&request.encode(), timeout);
        self.note(r)?;
        let mut output = Vec::new();
        let deadline = Deadline::after(timeout);
        loop {
            let left = deadline.left_or_max();
            let r = self.conn.recv(left, "monitor output");
            let Some(d) = self.note(r)? else {
                return Err(TargetError::timeout(timeout, "monitor command"));
            };
            match request.parse_reply(d)? {
                MonitorReply::Output(text) => output.extend_from_slice(&text),
                MonitorReply::Done(text) => {
                    output.extend_from_slice(&text);
                    break;
                }
            }
        }
        self.regs_cache = None;
        Ok(String::from_utf8_lossy(&output).into_owned())
    }

    /// Detaches (`D`); the target keeps running, the client is done.
    pub fn detach(&mut self) -> Result<()> {
        self.check_alive()?;
        if self.state == RunState::Running {
            self.interrupt_and_wait()?;
        }
        let r = self.request_ok(packets::detach(self.features.multiprocess), "detach");
        self.state = RunState::Gone("detached".into());
        r
    }

    /// Kills the target (`k`); no reply is expected.
    pub fn kill(&mut self) -> Result<()> {
        self.check_alive()?;
        if self.state == RunState::Running {
            // Best effort: the server may ignore packets while running.
            let _ = self.interrupt_and_wait();
        }
        let timeout = self.timeout;
        let r = self.conn.send(packets::KILL, timeout);
        self.state = RunState::Gone("killed".into());
        match r {
            // The server may close the socket before acking.
            Ok(()) | Err(TargetError::Gone(_) | TargetError::Timeout { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
