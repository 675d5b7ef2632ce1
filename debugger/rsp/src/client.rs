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

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use memlife_core::{BreakpointKind, LinkStats, Result, StopReason, TargetError, WatchKind};

use crate::conn::Conn;
use crate::packet::{self, Reply, from_hex, parse_hex_u64, to_hex};
use crate::stop::{self, SIGINT, StopPacket};
use crate::tdesc::{self, RegisterInfo, RegisterLayout};

/// The handshake's `qSupported` request (the features gdb for ARM announces).
pub const QSUPPORTED: &str =
    "qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+;xmlRegisters=arm";
/// Packet size assumed when the server does not say (QEMU's).
const DEFAULT_PACKET_SIZE: usize = 0x1000;
/// Memory bytes per `m` when the server gives no `PacketSize`.
const DEFAULT_MAX_READ: usize = 4096;
/// `m` requests sent before the first reply is read.
pub const PIPELINE_DEPTH: usize = 64;
/// Breakpoint kind for thumb code (the only kind a Cortex-M runs).
const THUMB_KIND: u32 = 2;

/// How to connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Bound on the TCP connect.
    pub connect_timeout: Duration,
    /// Bound on every reply (not on [`memlife_core::Control::wait_for_stop`], which has its own).
    pub read_timeout: Duration,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(5),
        }
    }
}

/// What the server said it supports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    /// `PacketSize=` (bytes of a packet's data the server accepts), if given.
    pub packet_size: Option<usize>,
    /// `qXfer:features:read+`: a target description is available.
    pub xfer_features: bool,
    /// `QStartNoAckMode+`.
    pub no_ack: bool,
    /// `vCont;c` is supported.
    pub vcont_continue: bool,
    /// `vCont;s` is supported.
    pub vcont_step: bool,
    /// `multiprocess+`: the server wants a process id with `D` (QEMU answers a bare `D` with
    /// `E22` then).
    pub multiprocess: bool,
    /// The server is QEMU's gdbstub (it answers `qqemu.sstepbits`).
    pub qemu: bool,
}

impl Features {
    /// Parses a `qSupported` reply.
    pub fn parse(reply: &[u8]) -> Features {
        let mut f = Features::default();
        for item in reply.split(|&b| b == b';') {
            match item {
                b"qXfer:features:read+" => f.xfer_features = true,
                b"QStartNoAckMode+" => f.no_ack = true,
                b"multiprocess+" => f.multiprocess = true,
                _ => {
                    if let Some(v) = item.strip_prefix(b"PacketSize=") {
                        f.packet_size = parse_hex_u64(v).ok().and_then(|v| usize::try_from(v).ok());
                    }
                }
            }
        }
        f
    }
}

/// Whether a packet is a stop reply (`S05`, `T05...`, `W00`, `X09`).
fn is_stop_reply(data: &[u8]) -> bool {
    matches!(data, [b'S' | b'T' | b'W' | b'X', a, b, ..] if a.is_ascii_hexdigit() && b.is_ascii_hexdigit())
}

/// Memory bytes per `m` request: the reply is two hex digits per byte plus `$`, `#` and the
/// checksum, and must fit the server's packet size.
pub fn max_read_size(packet_size: Option<usize>) -> usize {
    match packet_size {
        Some(ps) => (ps.saturating_sub(4) / 2).clamp(1, packet::MAX_FRAME / 2),
        None => DEFAULT_MAX_READ,
    }
}

/// Memory bytes per `M` request: `M` + address + `,` + length + `:` take at most 27 characters.
pub fn max_write_size(packet_size: Option<usize>) -> usize {
    let ps = packet_size.unwrap_or(DEFAULT_PACKET_SIZE);
    (ps.saturating_sub(4 + 27) / 2).clamp(1, packet::MAX_FRAME / 2)
}

/// Splits `[addr, addr + len)` into requests of at most `max` bytes.
pub fn split_range(addr: u64, len: usize, max: usize) -> impl Iterator<Item = (u64, usize)> {
    let max = max.max(1);
    (0..len)
        .step_by(max)
        .map(move |off| (addr.wrapping_add(off as u64), max.min(len - off)))
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
        };
        client.handshake()?;
        Ok(client)
    }

    fn handshake(&mut self) -> Result<()> {
        let mut reply = self.request_data(QSUPPORTED.as_bytes(), "qSupported")?;
        // QEMU stops the machine when a client connects and may announce that stop (`T02...`)
        // before answering anything, e.g. after an earlier client detached from a running
        // target. A stop reply is never an answer to qSupported: skip it (at most a few).
        for _ in 0..4 {
            if !is_stop_reply(&reply) {
                break;
            }
            tracing::debug!("skipping an unsolicited stop reply during the handshake");
            reply = self.read_data("qSupported")?;
        }
        self.features = Features::parse(&reply);
        if self.features.no_ack {
            if self.request(b"QStartNoAckMode")? == Reply::Ok {
                self.conn.ack = false;
            } else {
                tracing::debug!("server offered QStartNoAckMode but refused it");
            }
        }
        self.stats.max_read = max_read_size(self.features.packet_size) as u64;
        let first = self.request_data(b"?", "?")?;
        match stop::parse(&first)? {
            StopPacket::Stopped(_) => {
                self.state = RunState::Halted;
                self.last_stop = Some(StopReason::Halted);
            }
            StopPacket::Exited(code) => self.state = RunState::Exited(i32::from(code)),
            StopPacket::Terminated(sig) => {
                self.state = RunState::Gone(format!("the program was terminated by signal {sig}"));
            }
            StopPacket::Output(_) => {
                return Err(TargetError::Protocol(
                    "console output as the reply to '?'".into(),
                ));
            }
        }
        if let Reply::Data(d) = self.request(b"vCont?")? {
            for action in d.split(|&b| b == b';').skip(1) {
                match action {
                    b"c" => self.features.vcont_continue = true,
                    b"s" => self.features.vcont_step = true,
                    _ => {}
                }
            }
        }
        // QEMU answers its own query; in system emulation it never waits for the `+` of a
        // reply, so register writes can travel with the continue (see `send_run`).
        if let Reply::Data(d) = self.request(b"qqemu.sstepbits")? {
            self.features.qemu = d.starts_with(b"ENABLE=");
        }
        if self.features.xfer_features {
            let layout = tdesc::load(|annex| self.read_xfer_features(annex))?;
            if layout.by_number(15).is_some() {
                self.layout = layout;
                self.has_tdesc = true;
            } else {
                tracing::warn!("target description has no register 15; assuming the ARM layout");
            }
        }
        tracing::debug!(addr = %self.addr, features = ?self.features, "connected");
        Ok(())
    }

    fn read_xfer_features(&mut self, annex: &str) -> Result<String> {
        let chunk = self
            .features
            .packet_size
            .unwrap_or(DEFAULT_PACKET_SIZE)
            .saturating_sub(5)
            .max(64);
        let mut out = Vec::new();
        loop {
            if out.len() > packet::MAX_FRAME {
                return Err(TargetError::Protocol(format!("{annex} is too large")));
            }
            let req = format!("qXfer:features:read:{annex}:{:x},{chunk:x}", out.len());
            let data = self.request_data(req.as_bytes(), "qXfer:features:read")?;
            let (&kind, rest) = data
                .split_first()
                .ok_or_else(|| TargetError::Protocol("empty qXfer reply".into()))?;
            out.extend_from_slice(rest);
            match kind {
                b'l' => break,
                b'm' if !rest.is_empty() => {}
                _ => {
                    return Err(TargetError::Protocol(format!(
                        "unexpected qXfer reply for {annex}"
                    )));
                }
            }
        }
        String::from_utf8(out).map_err(|_| TargetError::Protocol(format!("{annex} is not UTF-8")))
    }

    // ---------------------------------------------------------------- requests

    fn check_alive(&self) -> Result<()> {
        match &self.state {
            RunState::Exited(code) => Err(TargetError::Exited(*code)),
            RunState::Gone(why) => Err(TargetError::Gone(why.clone())),
            _ => Ok(()),
        }
    }

    fn check_halted(&self) -> Result<()> {
        self.check_alive()?;
        if self.state == RunState::Running {
            return Err(TargetError::NotHalted);
        }
        Ok(())
    }

    /// Remembers a dead link so later calls fail the same way.
    fn note<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(TargetError::Gone(why)) = &r {
            self.state = RunState::Gone(why.clone());
        }
        r
    }

    /// Sends a request and waits for its reply (with the read timeout). Writes held back are
    /// sent first, in the same TCP segment.
    fn request(&mut self, data: &[u8]) -> Result<Reply> {
        if self.has_pending_writes() {
            let replies = self.send_with_writes(data)?;
            return Ok(replies);
        }
        let timeout = self.timeout;
        let r = self.conn.send(data, timeout);
        self.note(r)?;
        let r = self.conn.recv(timeout, "a reply");
        match self.note(r)? {
            None => Err(TargetError::timeout(timeout, "reply")),
            Some(d) => Ok(Reply::parse(d)),
        }
    }

    fn has_pending_writes(&self) -> bool {
        self.regs_dirty || !self.pending_writes.is_empty()
    }

    /// The held-back writes as packets: memory first, then the register image.
    fn take_pending_writes(&mut self) -> Vec<Vec<u8>> {
        let mut packets = std::mem::take(&mut self.pending_writes);
        if std::mem::take(&mut self.regs_dirty) {
            if let Some(g) = &self.regs_cache {
                packets.push(format!("G{}", to_hex(g)).into_bytes());
            }
        }
        packets
    }

    /// Checks the `OK` replies of `count` pipelined writes.
    fn check_write_replies(&mut self, count: usize) -> Result<()> {
        self.check_write_replies_with(count, true)
    }

    /// As [`Self::check_write_replies`], without sending `+` for them (QEMU, target running).
    fn check_write_replies_unacked(&mut self, count: usize) -> Result<()> {
        self.check_write_replies_with(count, false)
    }

    fn check_write_replies_with(&mut self, count: usize, ack: bool) -> Result<()> {
        let timeout = self.timeout;
        for _ in 0..count {
            let r = self.conn.recv_with_ack(timeout, "a write reply", ack);
            match self.note(r)?.map(Reply::parse) {
                Some(Reply::Ok) => {}
                Some(Reply::Error(code)) => {
                    self.regs_cache = None;
                    return Err(TargetError::Refused {
                        request: "a held-back write",
                        code,
                    });
                }
                Some(other) => {
                    return Err(TargetError::Protocol(format!(
                        "unexpected reply to a write: {other:?}"
                    )));
                }
                None => return Err(TargetError::timeout(timeout, "write reply")),
            }
        }
        Ok(())
    }

    /// Sends the held-back writes and `data` in one go; returns `data`'s reply.
    fn send_with_writes(&mut self, data: &[u8]) -> Result<Reply> {
        let mut packets = self.take_pending_writes();
        let writes = packets.len();
        packets.push(data.to_vec());
        let r = self.conn.send_many(&packets);
        self.note(r)?;
        self.check_write_replies(writes)?;
        let timeout = self.timeout;
        let r = self.conn.recv(timeout, "a reply");
        match self.note(r)? {
            None => Err(TargetError::timeout(timeout, "reply")),
            Some(d) => Ok(Reply::parse(d)),
        }
    }

    /// Reads one more packet (after a request whose reply was not the answer), as data.
    fn read_data(&mut self, what: &'static str) -> Result<Vec<u8>> {
        let timeout = self.timeout;
        let r = self.conn.recv(timeout, "a reply");
        match self.note(r)? {
            None => Err(TargetError::timeout(timeout, what)),
            Some(d) => Ok(d),
        }
    }

    /// A request whose reply must carry data.
    fn request_data(&mut self, data: &[u8], what: &'static str) -> Result<Vec<u8>> {
        match self.request(data)? {
            Reply::Data(d) => Ok(d),
            Reply::Ok => Err(TargetError::Protocol(format!("unexpected OK to {what}"))),
            Reply::Unsupported => Err(TargetError::Unsupported(what)),
            Reply::Error(code) => Err(TargetError::Refused {
                request: what,
                code,
            }),
        }
    }

    /// A request whose reply must be `OK`.
    fn request_ok(&mut self, data: &[u8], what: &'static str) -> Result<()> {
        match self.request(data)? {
            Reply::Ok => Ok(()),
            Reply::Unsupported => Err(TargetError::Unsupported(what)),
            Reply::Error(code) => Err(TargetError::Refused {
                request: what,
                code,
            }),
            Reply::Data(_) => Err(TargetError::Protocol(format!("unexpected reply to {what}"))),
        }
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

    /// Memory bytes per `m` request.
    pub fn max_read(&self) -> usize {
        max_read_size(self.features.packet_size)
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
        let req = format!("qRcmd,{}", to_hex(cmd.as_bytes()));
        let timeout = self.timeout;
        let r = self.conn.send(req.as_bytes(), timeout);
        self.note(r)?;
        let mut output = Vec::new();
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let r = self.conn.recv(left, "monitor output");
            let Some(d) = self.note(r)? else {
                return Err(TargetError::timeout(timeout, "monitor command"));
            };
            if d.len() > 1 && d[0] == b'O' && d != b"OK" {
                output.extend_from_slice(&from_hex(&d[1..])?);
                continue;
            }
            match Reply::parse(d) {
                Reply::Ok => break,
                Reply::Unsupported => return Err(TargetError::Unsupported("monitor commands")),
                Reply::Error(code) => {
                    return Err(TargetError::Refused {
                        request: "qRcmd",
                        code,
                    });
                }
                Reply::Data(d) => {
                    output.extend_from_slice(&from_hex(&d)?);
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
        // With multiprocess extensions the process must be named; QEMU's only process is 1.
        let packet: &[u8] = if self.features().multiprocess {
            b"D;1"
        } else {
            b"D"
        };
        let r = self.request_ok(packet, "detach");
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
        let r = self.conn.send(b"k", timeout);
        self.state = RunState::Gone("killed".into());
        match r {
            // The server may close the socket before acking.
            Ok(()) | Err(TargetError::Gone(_) | TargetError::Timeout { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    // ---------------------------------------------------------------- memory

    /// Reads several ranges with every `m` request sent before the first reply is read (in
    /// batches of [`PIPELINE_DEPTH`]): a 96 KiB arena costs one round trip instead of 48.
    pub(crate) fn read_memory_ranges(&mut self, ranges: &[(u64, usize)]) -> Result<Vec<Vec<u8>>> {
        self.check_halted()?;
        let max = self.max_read();
        let mut chunks: Vec<(usize, u64, usize)> = Vec::new();
        for (i, &(addr, len)) in ranges.iter().enumerate() {
            chunks.extend(split_range(addr, len, max).map(|(a, n)| (i, a, n)));
        }
        let mut out: Vec<Vec<u8>> = ranges
            .iter()
            .map(|&(_, len)| Vec::with_capacity(len))
            .collect();
        let mut first_error = None;
        for batch in chunks.chunks(PIPELINE_DEPTH) {
            let mut packets = self.take_pending_writes();
            let writes = packets.len();
            packets.extend(
                batch
                    .iter()
                    .map(|&(_, a, n)| format!("m{a:x},{n:x}").into_bytes()),
            );
            let r = self.conn.send_many(&packets);
            self.note(r)?;
            self.check_write_replies(writes)?;
            // Every reply is read, errors or not, so the stream stays in step.
            for &(i, a, n) in batch {
                self.stats.reads += 1;
                let timeout = self.timeout;
                let r = self.conn.recv(timeout, "a memory reply");
                let reply = match self.note(r)? {
                    Some(d) => Reply::parse(d),
                    None => return Err(TargetError::timeout(timeout, "memory reply")),
                };
                let result = match reply {
                    Reply::Data(d) => match from_hex(&d) {
                        Ok(bytes) if bytes.len() == n => Ok(bytes),
                        Ok(bytes) if !bytes.is_empty() && bytes.len() < n => Ok(bytes),
                        Ok(_) => Err(TargetError::Unmapped { addr: a, len: n }),
                        Err(e) => Err(e.into()),
                    },
                    Reply::Error(_) => Err(TargetError::Unmapped { addr: a, len: n }),
                    Reply::Unsupported | Reply::Ok => {
                        Err(TargetError::Protocol(format!("no data for m{a:x},{n:x}")))
                    }
                };
                match result {
                    Ok(bytes) => {
                        self.stats.bytes += bytes.len() as u64;
                        out[i].extend_from_slice(&bytes);
                    }
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        // A server may answer with fewer bytes than asked: fetch the rest one by one.
        for (i, &(addr, len)) in ranges.iter().enumerate() {
            let have = out[i].len();
            if have < len {
                let mut rest = vec![0u8; len - have];
                self.read_memory_sequential(addr + have as u64, &mut rest)?;
                out[i].extend_from_slice(&rest);
            }
        }
        Ok(out)
    }

    pub(crate) fn read_memory(&mut self, addr: u64, buf: &mut [u8]) -> Result<()> {
        if buf.len() > self.max_read() {
            let mut v = self.read_memory_ranges(&[(addr, buf.len())])?;
            let data = v.pop().unwrap_or_default();
            buf.copy_from_slice(&data);
            return Ok(());
        }
        self.read_memory_sequential(addr, buf)
    }

    fn read_memory_sequential(&mut self, addr: u64, buf: &mut [u8]) -> Result<()> {
        self.check_halted()?;
        let max = self.max_read();
        let mut done = 0;
        while done < buf.len() {
            let a = addr.wrapping_add(done as u64);
            let n = max.min(buf.len() - done);
            let req = format!("m{a:x},{n:x}");
            self.stats.reads += 1;
            let bytes = match self.request(req.as_bytes())? {
                Reply::Data(d) => from_hex(&d)?,
                Reply::Error(_) => return Err(TargetError::Unmapped { addr: a, len: n }),
                Reply::Unsupported | Reply::Ok => {
                    return Err(TargetError::Protocol(format!("no data for m{a:x},{n:x}")));
                }
            };
            if bytes.is_empty() {
                return Err(TargetError::Unmapped { addr: a, len: n });
            }
            if bytes.len() > n {
                return Err(TargetError::Protocol(format!(
                    "m{a:x},{n:x} returned {} bytes",
                    bytes.len()
                )));
            }
            // A short read is allowed: the rest is asked for again (and then usually fails).
            buf[done..done + bytes.len()].copy_from_slice(&bytes);
            done += bytes.len();
            self.stats.bytes += bytes.len() as u64;
        }
        Ok(())
    }

    pub(crate) fn write_memory(&mut self, addr: u64, data: &[u8]) -> Result<()> {
        self.check_halted()?;
        if !data.is_empty()
            && data.len() <= max_write_size(self.features.packet_size)
            && data.len() <= 64
        {
            // A small write (an emulated push) is held back and sent with the next request or
            // run command; an error surfaces there.
            self.pending_writes
                .push(format!("M{addr:x},{:x}:{}", data.len(), to_hex(data)).into_bytes());
            return Ok(());
        }
        for (a, n) in split_range(addr, data.len(), max_write_size(self.features.packet_size)) {
            let off = a.wrapping_sub(addr) as usize;
            let req = format!("M{a:x},{n:x}:{}", to_hex(&data[off..off + n]));
            match self.request(req.as_bytes())? {
                Reply::Ok => {}
                Reply::Error(_) => return Err(TargetError::Unmapped { addr: a, len: n }),
                Reply::Unsupported => return Err(TargetError::Unsupported("memory writes")),
                Reply::Data(_) => {
                    return Err(TargetError::Protocol("unexpected reply to M".into()));
                }
            }
        }
        // Memory-mapped registers may have changed.
        self.regs_cache = None;
        Ok(())
    }

    // ---------------------------------------------------------------- registers

    fn g_packet(&mut self) -> Result<&[u8]> {
        self.check_halted()?;
        if self.regs_cache.is_none() {
            let d = self.request_data(b"g", "g")?;
            self.regs_cache = Some(from_hex(&d)?);
        }
        Ok(self.regs_cache.as_deref().unwrap_or_default())
    }

    fn decode_le(bytes: &[u8]) -> u64 {
        bytes
            .iter()
            .take(8)
            .rev()
            .fold(0u64, |acc, &b| acc << 8 | u64::from(b))
    }

    pub(crate) fn read_reg_info(&mut self, info: &RegisterInfo) -> Result<u64> {
        let (offset, size) = (info.offset, info.size());
        let g = self.g_packet()?;
        if let Some(bytes) = g.get(offset..offset + size) {
            return Ok(Self::decode_le(bytes));
        }
        if !self.has_tdesc {
            return Err(TargetError::Unsupported(
                "this register without a target description",
            ));
        }
        let req = format!("p{:x}", info.regnum);
        let d = self.request_data(req.as_bytes(), "p")?;
        Ok(Self::decode_le(&from_hex(&d)?))
    }

    pub(crate) fn register_info(&self, regnum: u16) -> Result<RegisterInfo> {
        self.layout
            .by_number(u32::from(regnum))
            .cloned()
            .ok_or(TargetError::Unsupported("this register number"))
    }

    pub(crate) fn write_reg_info(&mut self, info: &RegisterInfo, value: u64) -> Result<()> {
        self.check_halted()?;
        let size = info.size();
        let bytes: Vec<u8> = (0..size)
            .map(|i| if i < 8 { (value >> (8 * i)) as u8 } else { 0 })
            .collect();
        // A register inside the `g` image is changed there and sent as one `G` with the next
        // request or run command: several writes at a stop cost no round trip of their own.
        if self.has_tdesc || self.regs_cache.is_some() {
            self.g_packet()?;
            if let Some(slot) = self
                .regs_cache
                .as_mut()
                .and_then(|g| g.get_mut(info.offset..info.offset + size))
            {
                slot.copy_from_slice(&bytes);
                self.regs_dirty = true;
                return Ok(());
            }
        }
        let req = format!("P{:x}={}", info.regnum, to_hex(&bytes));
        let r = self.request(req.as_bytes())?;
        self.regs_cache = None;
        match r {
            Reply::Ok => Ok(()),
            Reply::Error(code) => Err(TargetError::Refused { request: "P", code }),
            Reply::Data(_) => Err(TargetError::Protocol("unexpected reply to P".into())),
            Reply::Unsupported => {
                // No P: rewrite the whole g block.
                let mut g = self.g_packet()?.to_vec();
                let slot = g
                    .get_mut(info.offset..info.offset + size)
                    .ok_or(TargetError::Unsupported("writing this register"))?;
                slot.copy_from_slice(&bytes);
                let req = format!("G{}", to_hex(&g));
                self.regs_cache = None;
                self.request_ok(req.as_bytes(), "G")
            }
        }
    }

    pub(crate) fn all_registers(&mut self) -> Result<Vec<(String, u64)>> {
        let regs: Vec<RegisterInfo> = self
            .layout
            .registers()
            .iter()
            .filter(|r| r.bitsize <= 64)
            .cloned()
            .collect();
        let mut out = Vec::with_capacity(regs.len());
        for r in regs {
            match self.read_reg_info(&r) {
                Ok(v) => out.push((r.name.clone(), v)),
                Err(e @ (TargetError::Unsupported(_) | TargetError::Refused { .. })) => {
                    tracing::debug!(register = r.name, error = %e, "skipping register");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    pub(crate) fn pc(&mut self) -> Result<u64> {
        let info = self.register_info(15)?;
        self.read_reg_info(&info)
    }

    // ---------------------------------------------------------------- breakpoints

    fn z_packet(insert: bool, ty: u8, addr: u64, kind: u64) -> String {
        format!("{}{ty},{addr:x},{kind:x}", if insert { 'Z' } else { 'z' })
    }

    fn send_z(
        &mut self,
        insert: bool,
        ty: u8,
        addr: u64,
        kind: u64,
        what: &'static str,
    ) -> Result<()> {
        self.check_halted()?;
        let req = Self::z_packet(insert, ty, addr, kind);
        self.request_ok(req.as_bytes(), what)
    }

    pub(crate) fn insert_breakpoint(&mut self, addr: u64, kind: BreakpointKind) -> Result<()> {
        let (ty, what) = match kind {
            BreakpointKind::Software => (0, "software breakpoints"),
            BreakpointKind::Hardware => (1, "hardware breakpoints"),
        };
        if !self.breakpoints.contains(&(addr, kind.into())) {
            self.send_z(true, ty, addr, u64::from(THUMB_KIND), what)?;
            self.breakpoints.insert((addr, kind.into()));
        }
        Ok(())
    }

    pub(crate) fn delete_breakpoint(&mut self, addr: u64, kind: BreakpointKind) -> Result<()> {
        let ty = match kind {
            BreakpointKind::Software => 0,
            BreakpointKind::Hardware => 1,
        };
        if self.breakpoints.contains(&(addr, kind.into())) {
            self.send_z(
                false,
                ty,
                addr,
                u64::from(THUMB_KIND),
                "removing breakpoints",
            )?;
            self.breakpoints.remove(&(addr, kind.into()));
        }
        Ok(())
    }

    pub(crate) fn breakpoint_list(&self) -> Vec<(u64, BreakpointKind)> {
        self.breakpoints
            .iter()
            .map(|&(a, k)| (a, k.into()))
            .collect()
    }

    fn watch_type(kind: WatchKind) -> u8 {
        match kind {
            WatchKind::Write => 2,
            WatchKind::Read => 3,
            WatchKind::Access => 4,
        }
    }

    pub(crate) fn insert_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> Result<()> {
        if !self.watchpoints.contains(&(addr, len, kind)) {
            self.send_z(true, Self::watch_type(kind), addr, len, "watchpoints")?;
            self.watchpoints.push((addr, len, kind));
        }
        Ok(())
    }

    pub(crate) fn delete_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> Result<()> {
        if let Some(i) = self
            .watchpoints
            .iter()
            .position(|w| *w == (addr, len, kind))
        {
            self.send_z(
                false,
                Self::watch_type(kind),
                addr,
                len,
                "removing watchpoints",
            )?;
            self.watchpoints.remove(i);
        }
        Ok(())
    }

    // ---------------------------------------------------------------- run control

    pub(crate) fn halted(&self) -> bool {
        self.state == RunState::Halted
    }

    /// Sends continue or step without any stepping-off logic.
    fn send_run(&mut self, step: bool) -> Result<()> {
        let cmd: &[u8] = match (step, self.features.vcont_step, self.features.vcont_continue) {
            (true, true, _) => b"vCont;s",
            (true, false, _) => b"s",
            (false, _, true) => b"vCont;c",
            (false, _, false) => b"c",
        };
        let timeout = self.timeout;
        if self.has_pending_writes() && self.features.qemu && !self.conn.ack_pending_allowed() {
            // QEMU (system emulation) does not wait for the `+` of its replies, and any byte it
            // receives while running stops it: the writes and the run command go out in one
            // segment and the write replies are read without acknowledging them.
            let mut packets = self.take_pending_writes();
            let writes = packets.len();
            packets.push(cmd.to_vec());
            let r = self.conn.send_many(&packets);
            self.note(r)?;
            // The target runs from here, whatever the write replies say.
            self.regs_cache = None;
            self.state = RunState::Running;
            self.pending = if step {
                Pending::Step
            } else {
                Pending::Continue
            };
            return self.check_write_replies_unacked(writes);
        }
        if self.has_pending_writes() {
            // The writes go out together, but not with the run command: in ack mode the `+`
            // we owe for their replies would reach the server after the continue, and QEMU takes
            // any byte it receives while running as an interrupt.
            let packets = self.take_pending_writes();
            let writes = packets.len();
            let r = self.conn.send_many(&packets);
            self.note(r)?;
            self.check_write_replies(writes)?;
        }
        let r = self.conn.send(cmd, timeout);
        self.note(r)?;
        self.regs_cache = None;
        self.state = RunState::Running;
        self.pending = if step {
            Pending::Step
        } else {
            Pending::Continue
        };
        Ok(())
    }

    /// One instruction with the breakpoints at the pc (and, after a watchpoint hit, the
    /// watchpoints) taken out, so the step is not reported as a new hit.
    fn raw_step(&mut self) -> Result<StopReason> {
        let pc = self.pc()?;
        let at_pc: Vec<(u64, BreakpointKind)> = self
            .breakpoint_list()
            .into_iter()
            .filter(|&(a, _)| a == pc)
            .collect();
        // Most servers (QEMU included) step over their own breakpoint at the pc, which saves
        // two packets and, on QEMU, two flushes of its translation cache per stop. Learn on the
        // first step whether this one does; if not, lift the breakpoint as gdb does.
        if !at_pc.is_empty() && self.step_keeps_breakpoints != Some(false) {
            let reason = self.step_once(&[])?;
            if self.step_keeps_breakpoints.is_none() && self.halted() {
                let moved = self.pc()? != pc;
                self.step_keeps_breakpoints = Some(moved);
                if !moved {
                    tracing::debug!("the server does not step over its breakpoints: lifting them");
                    return self.step_once(&at_pc);
                }
            }
            return Ok(reason);
        }
        self.step_once(&at_pc)
    }

    /// One `s`, with `lift` breakpoints (and, after a watchpoint stop, the watchpoints) removed
    /// for the step and put back afterwards.
    fn step_once(&mut self, lift: &[(u64, BreakpointKind)]) -> Result<StopReason> {
        let lift_watch = matches!(self.last_stop, Some(StopReason::Watchpoint { .. }));
        let watches = if lift_watch {
            self.watchpoints.clone()
        } else {
            Vec::new()
        };
        for &(a, k) in lift {
            self.delete_breakpoint(a, k)?;
        }
        for &(a, l, k) in &watches {
            self.delete_watchpoint(a, l, k)?;
        }
        self.send_run(true)?;
        let timeout = self.timeout;
        let reason = self
            .wait_stop(timeout)?
            .ok_or(TargetError::timeout(timeout, "single step"))?;
        if self.halted() {
            for &(a, k) in lift {
                self.insert_breakpoint(a, k)?;
            }
            for &(a, l, k) in &watches {
                self.insert_watchpoint(a, l, k)?;
            }
        }
        Ok(reason)
    }

    pub(crate) fn do_step(&mut self) -> Result<StopReason> {
        self.check_halted()?;
        self.early_stop = None;
        self.raw_step()
    }

    pub(crate) fn do_resume(&mut self) -> Result<()> {
        self.check_alive()?;
        if self.state == RunState::Running {
            return Ok(());
        }
        let pc = self.pc()?;
        let on_bp = self.breakpoints.iter().any(|&(a, _)| a == pc);
        let after_watch = matches!(self.last_stop, Some(StopReason::Watchpoint { .. }));
        if on_bp || after_watch {
            let reason = self.raw_step()?;
            if reason != StopReason::Step {
                // The step itself stopped somewhere meaningful: report it instead of running.
                self.early_stop = Some(reason);
                return Ok(());
            }
        }
        self.send_run(false)
    }

    fn interrupt_and_wait(&mut self) -> Result<StopReason> {
        let r = self.conn.interrupt();
        self.note(r)?;
        self.pending = Pending::Interrupt;
        let timeout = self.timeout;
        self.wait_stop(timeout)?
            .ok_or(TargetError::timeout(timeout, "halt"))
    }

    pub(crate) fn do_halt(&mut self) -> Result<StopReason> {
        if let Some(early) = self.early_stop.take() {
            return Ok(early);
        }
        self.check_alive()?;
        if self.state == RunState::Halted {
            return Ok(self.last_stop.unwrap_or(StopReason::Halted));
        }
        self.interrupt_and_wait()
    }

    pub(crate) fn do_reset(&mut self, halt: bool) -> Result<()> {
        self.check_alive()?;
        if self.state == RunState::Running {
            self.interrupt_and_wait()?;
        }
        self.early_stop = None;
        self.monitor("system_reset")?;
        self.regs_cache = None;
        self.last_stop = Some(StopReason::Halted);
        if !halt {
            self.do_resume()?;
        }
        Ok(())
    }

    pub(crate) fn do_wait(&mut self, timeout: Duration) -> Result<Option<StopReason>> {
        // A stop seen while stepping off is reported even when it was the program's end.
        if let Some(early) = self.early_stop.take() {
            return Ok(Some(early));
        }
        self.check_alive()?;
        if self.state == RunState::Halted {
            return Ok(self.last_stop);
        }
        self.wait_stop(timeout)
    }

    /// Reads stop replies until one arrives or `timeout` passes.
    fn wait_stop(&mut self, timeout: Duration) -> Result<Option<StopReason>> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let r = self.conn.recv(left, "a stop reply");
            let Some(data) = self.note(r)? else {
                return Ok(None);
            };
            let parsed = stop::parse(&data).map_err(|e| {
                TargetError::Protocol(format!(
                    "bad stop reply {:?}: {e}",
                    String::from_utf8_lossy(&data[..data.len().min(40)])
                ))
            })?;
            let reason = match parsed {
                StopPacket::Output(text) => {
                    tracing::info!(target: "memlife_rsp::console", "{}", String::from_utf8_lossy(&text));
                    continue;
                }
                StopPacket::Exited(code) => {
                    self.state = RunState::Exited(i32::from(code));
                    StopReason::Exited(i32::from(code))
                }
                StopPacket::Terminated(sig) => {
                    self.state =
                        RunState::Gone(format!("the program was terminated by signal {sig}"));
                    StopReason::Terminated(sig)
                }
                StopPacket::Stopped(s) => {
                    self.state = RunState::Halted;
                    self.regs_cache = None;
                    if let Some((kind, addr)) = s.watch {
                        StopReason::Watchpoint { addr, kind }
                    } else if self.pending == Pending::Step {
                        StopReason::Step
                    } else if s.signal == SIGINT && self.pending == Pending::Interrupt {
                        StopReason::Halted
                    } else {
                        let pc = match s.registers.iter().find(|(n, _)| *n == 15) {
                            Some((_, bytes)) => Self::decode_le(bytes),
                            None => self.pc()?,
                        };
                        if self.breakpoints.iter().any(|&(a, _)| a == pc) || s.swbreak || s.hwbreak
                        {
                            StopReason::Breakpoint(pc)
                        } else if self.pending == Pending::Interrupt {
                            StopReason::Halted
                        } else {
                            StopReason::Signal(s.signal)
                        }
                    }
                }
            };
            self.last_stop = Some(reason);
            return Ok(Some(reason));
        }
    }
}

#[cfg(test)]
mod tests {

    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn recognises_stop_replies() {
        assert!(super::is_stop_reply(b"T02thread:p01.01;"));
        assert!(super::is_stop_reply(b"S05"));
        assert!(super::is_stop_reply(b"W00"));
        assert!(!super::is_stop_reply(
            b"PacketSize=1000;qXfer:features:read+"
        ));
        assert!(!super::is_stop_reply(b"T"));
    }

    #[test]
    fn read_size_from_packet_size() {
        // QEMU 7.2: PacketSize=1000 (hex) → 2046 bytes per m.
        assert_eq!(max_read_size(Some(0x1000)), 2046);
        assert_eq!(max_read_size(Some(0x4000)), 8190);
        assert_eq!(max_read_size(None), 4096);
        assert_eq!(max_read_size(Some(3)), 1);
    }

    #[test]
    fn splits_ranges() {
        let parts: Vec<_> = split_range(0x2000_0000, 4096, 2046).collect();
        assert_eq!(
            parts,
            vec![(0x2000_0000, 2046), (0x2000_07fe, 2046), (0x2000_0ffc, 4)]
        );
        assert_eq!(split_range(0, 0, 10).count(), 0);
        assert_eq!(split_range(0, 10, 10).count(), 1);
        assert_eq!(split_range(0, 11, 10).count(), 2);
    }

    #[test]
    fn parses_qsupported() {
        let f =
            Features::parse(b"PacketSize=1000;qXfer:features:read+;vContSupported+;multiprocess+");
        assert_eq!(f.packet_size, Some(0x1000));
        assert!(f.xfer_features);
        assert!(!f.no_ack);
        let f = Features::parse(b"PacketSize=zz;QStartNoAckMode+;qXfer:features:read-");
        assert_eq!(f.packet_size, None);
        assert!(f.no_ack && !f.xfer_features);
    }
}
