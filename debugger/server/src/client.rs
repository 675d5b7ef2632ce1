//! One gdb client's connection, guarded: its first packet must arrive whole within
//! [`HANDSHAKE_DEADLINE`] of its connecting (gdb sends `qSupported` at once), a packet must
//! arrive whole within [`PACKET_DEADLINE`] of its `$`, and a packet longer than [`MAX_PACKET`]
//! ends the session (gdbstub's fixed buffer refuses it). A client that connects and says
//! nothing, stalls mid-packet, or streams a packet without end, is dropped instead of holding
//! the server from every other client. After its first packet a client may stay silent between
//! packets as long as it likes (a user thinking at the gdb prompt).
//!
//! [`SharedConn`] shares the connection between gdbstub and a long monitor command, which looks
//! at it for the interrupt byte (0x03) or the client's leaving while gdbstub waits for the
//! command's answer.
//!
//! It also answers LLDB's `qHostInfo` and `qWatchpointSupportInfo` before gdbstub sees them:
//! gdbstub's `qHostInfo` has no `watchpoint_exceptions_received` key and it has no
//! `qWatchpointSupportInfo`, and without both LLDB reports a write watchpoint's old value as the
//! new one when the stop comes before the store. When a FreeRTOS firmware's tasks are served as
//! threads it answers `qC` (the thread that runs), which gdbstub answers only in extended mode.
//! Every other packet goes to gdbstub byte for byte, and so does every packet of a client to a
//! server that answers none of these (gdb-multiarch sends neither LLDB packet).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::time::{Duration, Instant};

use gdbstub::conn::{Connection, ConnectionExt};

use crate::guard::{ClientSignal, ClientSignals};
use crate::threads::CurrentThread;

/// The most a packet may take from `$` to its checksum.
pub const PACKET_DEADLINE: Duration = Duration::from_secs(10);
/// The most a client may take from connecting to the end of its first packet.
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(10);
/// The interrupt byte (gdb's Ctrl-C, sent outside packets).
const INTERRUPT: u8 = 0x03;
/// The largest packet accepted (and the `PacketSize` gdb is told).
pub const MAX_PACKET: usize = 4096;

/// Where the reader is in the framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    /// Between packets (acks, Ctrl-C).
    Idle,
    /// Inside `$...`, started at this instant.
    Body(Instant),
    /// After `#`: this many checksum digits still to come.
    Checksum(Instant, u8),
}

/// A client's socket: TCP, or a Unix socket (`--listen unix:PATH`).
#[derive(Debug)]
pub enum Stream {
    /// `--listen HOST:PORT`.
    Tcp(TcpStream),
    /// `--listen unix:PATH`.
    Unix(UnixStream),
}

impl Stream {
    fn set_nonblocking(&self, on: bool) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_nonblocking(on),
            Stream::Unix(s) => s.set_nonblocking(on),
        }
    }

    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
    }

    /// Says no more will be written (the peer reads an end of file after what was sent).
    pub(crate) fn shutdown_write(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(std::net::Shutdown::Write),
            Stream::Unix(s) => s.shutdown(std::net::Shutdown::Write),
        };
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => Read::read(s, buf),
            Stream::Unix(s) => Read::read(s, buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => Write::write(s, buf),
            Stream::Unix(s) => Write::write(s, buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => Write::flush(s),
            Stream::Unix(s) => Write::flush(s),
        }
    }
}

/// When a write watchpoint's stop comes, relative to the store that hit it: what LLDB must be
/// told to report the right old and new values. With `Before`, LLDB steps over the storing
/// instruction (the watchpoint disabled) before it reads the new value; gdb-multiarch always
/// does so on Arm and needs no telling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchStops {
    /// The stop comes before the store: memory still holds the old value (QEMU's gdbstub).
    Before {
        /// Hardware watchpoints to announce (LLDB consults the timing only once it has a count).
        slots: u32,
    },
    /// The stop comes after the store (a Cortex-M DWT comparator on a real core).
    After,
    /// Not known (a GDB server memlife did not start): `qHostInfo` goes to gdbstub, which
    /// says it does not support it, and LLDB keeps its own default (after).
    Unknown,
}

impl WatchStops {
    /// memlife's own answer to an LLDB packet `body`, or `None` to leave it to gdbstub.
    fn answer(self, body: &[u8]) -> Option<String> {
        let (when, slots) = match self {
            WatchStops::Before { slots } => ("before", Some(slots)),
            // After the store is LLDB's own default: it then reads the new value at the stop.
            WatchStops::After => ("after", None),
            WatchStops::Unknown => return None,
        };
        match body {
            // No triple: LLDB takes the architecture from the ELF, as it does without qHostInfo.
            b"qHostInfo" => Some(format!(
                "endian:little;ptrsize:4;watchpoint_exceptions_received:{when};"
            )),
            b"qWatchpointSupportInfo" | b"qWatchpointSupportInfo:" => {
                slots.map(|n| format!("num:{n};"))
            }
            _ => None,
        }
    }
}

/// A client's stream with the mid-packet deadline.
#[derive(Debug)]
pub struct ClientConn {
    stream: Stream,
    frame: Frame,
    /// A byte `peek` took off the socket, for the next `read`.
    peeked: Option<u8>,
    /// A whole packet read ahead (to see whether memlife answers it), for gdbstub byte by byte.
    pending: VecDeque<u8>,
    /// What memlife tells LLDB about watchpoint stops.
    watch_stops: WatchStops,
    /// The client asked for no-ack mode (gdbstub always grants it): no `+` either way.
    no_ack: bool,
    /// memlife's last reply in ack mode, until the client acks it: the client's `+` for it is
    /// not gdbstub's, and a `-` asks memlife, not gdbstub, to send it again.
    unacked: Option<Vec<u8>>,
    /// When the client connected (the handshake deadline counts from there).
    connected: Instant,
    /// The client sent a whole packet: no handshake deadline any more.
    greeted: bool,
    /// The thread that runs, when threads are served (`qC`).
    threads: Option<CurrentThread>,
    /// The client offered `multiprocess+`: thread ids go out as `p1.TID`, as gdbstub writes them.
    multiprocess: bool,
}

impl ClientConn {
    /// Wraps a stream accepted just now; every packet goes to gdbstub.
    pub fn new(stream: Stream) -> Self {
        Self::with_watch_stops(stream, WatchStops::Unknown, Instant::now())
    }

    /// Wraps a stream accepted at `connected`, answering LLDB's watchpoint questions with
    /// `watch_stops`.
    pub fn with_watch_stops(stream: Stream, watch_stops: WatchStops, connected: Instant) -> Self {
        ClientConn {
            stream,
            frame: Frame::Idle,
            peeked: None,
            pending: VecDeque::new(),
            watch_stops,
            no_ack: false,
            unacked: None,
            connected,
            greeted: false,
            threads: None,
            multiprocess: false,
        }
    }

    /// Answers `qC` with the thread that runs (a FreeRTOS firmware's tasks served as threads).
    pub(crate) fn answer_threads(&mut self, current: CurrentThread) {
        self.threads = Some(current);
    }

    /// Whether memlife answers some packets itself (else every byte goes to gdbstub as read).
    fn answers_any(&self) -> bool {
        self.watch_stops != WatchStops::Unknown || self.threads.is_some()
    }

    /// The next byte from the client (or the one `peek` kept), tracked for the deadline.
    fn next_byte(&mut self) -> std::io::Result<u8> {
        if let Some(b) = self.peeked.take() {
            self.track(b);
            return Ok(b);
        }
        self.stream.set_nonblocking(false)?;
        let timeout = self.read_timeout()?;
        self.stream.set_read_timeout(timeout)?;
        let mut buf = [0u8];
        match Read::read_exact(&mut self.stream, &mut buf) {
            Ok(()) => {
                self.track(buf[0]);
                Ok(buf[0])
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                Err(self.too_slow())
            }
            Err(e) => Err(e),
        }
    }

    /// The error for a read that timed out: silent since connecting, or stalled in a packet.
    fn too_slow(&self) -> std::io::Error {
        if self.frame == Frame::Idle && !self.greeted {
            silent()
        } else {
            stalled()
        }
    }

    /// Reads the rest of a packet whose `$` was just read. Returns every byte read; the packet
    /// is whole when the framing is idle again. Stops early past [`MAX_PACKET`] (gdbstub then
    /// refuses what it gets, as before).
    fn read_packet(&mut self) -> std::io::Result<Vec<u8>> {
        let mut raw = vec![b'$'];
        while self.frame != Frame::Idle && raw.len() <= MAX_PACKET + 3 {
            raw.push(self.next_byte()?);
        }
        Ok(raw)
    }

    /// memlife's reply to a whole packet `raw` (`$body#cc`), when it is one memlife answers and
    /// its checksum is right (a bad one goes to gdbstub, which asks for it again).
    fn own_reply(&mut self, raw: &[u8]) -> Option<String> {
        if self.frame != Frame::Idle || raw.len() < 4 || raw[raw.len() - 3] != b'#' {
            return None;
        }
        let body = &raw[1..raw.len() - 3];
        let sum = std::str::from_utf8(&raw[raw.len() - 2..])
            .ok()
            .and_then(|h| u8::from_str_radix(h, 16).ok())?;
        if body.iter().fold(0u8, |a, &b| a.wrapping_add(b)) != sum {
            return None;
        }
        if body.starts_with(b"qSupported") {
            self.multiprocess = body
                .split(|&b| b == b';' || b == b':')
                .any(|f| f == b"multiprocess+");
        }
        if body == b"qC" {
            let tid = self.threads.as_ref()?.get()?;
            let pid = if self.multiprocess { "p1." } else { "" };
            return Some(format!("QC{pid}{:x}", tid.get()));
        }
        self.watch_stops.answer(body)
    }

    fn track(&mut self, byte: u8) {
        self.frame = match (self.frame, byte) {
            (Frame::Idle, b'$') => Frame::Body(Instant::now()),
            (Frame::Idle, _) => Frame::Idle,
            (Frame::Body(t), b'#') => Frame::Checksum(t, 2),
            (Frame::Body(t), _) => Frame::Body(t),
            (Frame::Checksum(_, 1), _) => {
                self.greeted = true;
                Frame::Idle
            }
            (Frame::Checksum(t, n), _) => Frame::Checksum(t, n.saturating_sub(1)),
        };
    }

    /// How long the next byte may take: the rest of the handshake before the first packet,
    /// without bound between packets after it, the rest of the deadline inside one.
    fn read_timeout(&self) -> std::io::Result<Option<Duration>> {
        let started = match self.frame {
            Frame::Idle if self.greeted => return Ok(None),
            Frame::Idle => {
                // A client that waited its turn may have sent its first packet long ago: what
                // is already there is read, however late.
                let left = HANDSHAKE_DEADLINE.saturating_sub(self.connected.elapsed());
                return Ok(Some(left.max(Duration::from_millis(1))));
            }
            Frame::Body(t) | Frame::Checksum(t, _) => t,
        };
        let left = PACKET_DEADLINE.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Err(stalled());
        }
        Ok(Some(left))
    }
}

/// `$body#cc`.
fn frame_reply(body: &str) -> Vec<u8> {
    let sum = body.bytes().fold(0u8, |a, b| a.wrapping_add(b));
    format!("${body}#{sum:02x}").into_bytes()
}

fn silent() -> std::io::Error {
    std::io::Error::new(
        ErrorKind::TimedOut,
        format!(
            "the client sent no packet within {}s of connecting",
            HANDSHAKE_DEADLINE.as_secs()
        ),
    )
}

fn stalled() -> std::io::Error {
    std::io::Error::new(
        ErrorKind::TimedOut,
        format!(
            "the client sent part of a packet and not the rest within {}s",
            PACKET_DEADLINE.as_secs()
        ),
    )
}

impl Connection for ClientConn {
    type Error = std::io::Error;

    fn write(&mut self, byte: u8) -> Result<(), Self::Error> {
        Write::write_all(&mut self.stream, &[byte])
    }

    fn write_all(&mut self, buf: &[u8]) -> Result<(), Self::Error> {
        Write::write_all(&mut self.stream, buf)
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        Write::flush(&mut self.stream)
    }

    fn on_session_start(&mut self) -> Result<(), Self::Error> {
        match &self.stream {
            Stream::Tcp(s) => s.set_nodelay(true),
            Stream::Unix(_) => Ok(()),
        }
    }
}

impl ConnectionExt for ClientConn {
    fn read(&mut self) -> Result<u8, Self::Error> {
        loop {
            if let Some(b) = self.pending.pop_front() {
                return Ok(b);
            }
            let b = self.next_byte()?;
            if let Some(reply) = self.unacked.take() {
                match b {
                    b'+' => continue,
                    b'-' => {
                        Write::write_all(&mut self.stream, &reply)?;
                        self.unacked = Some(reply);
                        continue;
                    }
                    _ => {}
                }
            }
            if b != b'$' || !self.answers_any() {
                return Ok(b);
            }
            let raw = self.read_packet()?;
            if let Some(reply) = self.own_reply(&raw) {
                let reply = frame_reply(&reply);
                if !self.no_ack {
                    Write::write_all(&mut self.stream, b"+")?;
                }
                Write::write_all(&mut self.stream, &reply)?;
                Write::flush(&mut self.stream)?;
                if !self.no_ack {
                    self.unacked = Some(reply);
                }
                continue;
            }
            if raw.starts_with(b"$QStartNoAckMode#") {
                self.no_ack = true;
            }
            self.pending.extend(raw);
        }
    }

    fn peek(&mut self) -> Result<Option<u8>, Self::Error> {
        // A running target: the event loop looks for gdb's bytes between short waits. The byte
        // is taken off the socket and kept for `read` (Unix sockets have no stable peek).
        if let Some(&b) = self.pending.front() {
            return Ok(Some(b));
        }
        if self.peeked.is_some() {
            return Ok(self.peeked);
        }
        self.read_timeout()?;
        self.stream.set_nonblocking(true)?;
        let mut buf = [0u8];
        match Read::read(&mut self.stream, &mut buf) {
            Ok(0) => Err(std::io::Error::new(
                ErrorKind::UnexpectedEof,
                "the client closed the connection",
            )),
            Ok(_) => {
                self.peeked = Some(buf[0]);
                Ok(self.peeked)
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl ClientConn {
    /// What the client said while a command runs: the interrupt byte (taken off the
    /// connection, so gdbstub never sees it), nothing (other bytes stay for gdbstub), or that
    /// it is gone.
    fn signal(&mut self) -> ClientSignal {
        match ConnectionExt::peek(self) {
            Ok(Some(INTERRUPT)) => match ConnectionExt::read(self) {
                Ok(_) => ClientSignal::Interrupt,
                Err(_) => ClientSignal::Gone,
            },
            Ok(_) => ClientSignal::Quiet,
            Err(_) => ClientSignal::Gone,
        }
    }
}

/// A [`ClientConn`] shared between gdbstub, which reads and writes packets through it, and the
/// bridge, which looks at it for an interrupt while a long monitor command runs (gdbstub is
/// then waiting for the command's answer and reads nothing).
#[derive(Debug, Clone)]
pub struct SharedConn(Rc<RefCell<ClientConn>>);

impl SharedConn {
    /// Shares `conn`.
    pub fn new(conn: ClientConn) -> Self {
        SharedConn(Rc::new(RefCell::new(conn)))
    }

    fn with<T>(&self, f: impl FnOnce(&mut ClientConn) -> std::io::Result<T>) -> std::io::Result<T> {
        // Each call borrows for its own length only; a borrow still held would be a bug here,
        // answered as an I/O error rather than a panic.
        let mut conn = self
            .0
            .try_borrow_mut()
            .map_err(|_| std::io::Error::other("the client connection is in use"))?;
        f(&mut conn)
    }
}

impl Connection for SharedConn {
    type Error = std::io::Error;

    fn write(&mut self, byte: u8) -> Result<(), Self::Error> {
        self.with(|c| Connection::write(c, byte))
    }

    fn write_all(&mut self, buf: &[u8]) -> Result<(), Self::Error> {
        self.with(|c| Connection::write_all(c, buf))
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        self.with(Connection::flush)
    }

    fn on_session_start(&mut self) -> Result<(), Self::Error> {
        self.with(Connection::on_session_start)
    }
}

impl ConnectionExt for SharedConn {
    fn read(&mut self) -> Result<u8, Self::Error> {
        self.with(ConnectionExt::read)
    }

    fn peek(&mut self) -> Result<Option<u8>, Self::Error> {
        self.with(ConnectionExt::peek)
    }
}

impl ClientSignals for SharedConn {
    fn poll(&self) -> ClientSignal {
        self.with(|c| Ok(c.signal())).unwrap_or(ClientSignal::Quiet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_is_tracked_across_acks_packets_and_checksums() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let _client = TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
        let (stream, _) = listener.accept().unwrap_or_else(|e| panic!("{e}"));
        let mut c = ClientConn::new(Stream::Tcp(stream));
        for &b in b"+$m0,4#fd" {
            c.track(b);
        }
        assert_eq!(c.frame, Frame::Idle);
        c.track(b'$');
        assert!(matches!(c.frame, Frame::Body(_)));
        assert!(c.read_timeout().unwrap_or_else(|e| panic!("{e}")).is_some());
    }

    /// A connection over loopback with `stops`, and the client's end.
    fn pair(stops: WatchStops) -> (ClientConn, TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let client = TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
        let (stream, _) = listener.accept().unwrap_or_else(|e| panic!("{e}"));
        (
            ClientConn::with_watch_stops(Stream::Tcp(stream), stops, Instant::now()),
            client,
        )
    }

    /// What gdbstub would read: `n` bytes through `ConnectionExt::read`.
    fn take(c: &mut ClientConn, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| ConnectionExt::read(c).unwrap_or_else(|e| panic!("{e}")))
            .collect()
    }

    /// What memlife wrote back to the client, up to `n` bytes.
    fn replies(client: &mut TcpStream, n: usize) -> String {
        let mut buf = vec![0u8; n];
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap_or_else(|e| panic!("{e}"));
        client
            .read_exact(&mut buf)
            .unwrap_or_else(|e| panic!("{e}"));
        String::from_utf8_lossy(&buf).into_owned()
    }

    /// A client that connected and said nothing for the handshake time is dropped at once;
    /// one that sent its first packet before that is read however late it is served.
    #[test]
    fn the_first_packet_must_come_within_the_handshake() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let long_ago = Instant::now()
            .checked_sub(HANDSHAKE_DEADLINE + Duration::from_secs(1))
            .unwrap_or_else(|| panic!("a clock too young"));
        let _silent = TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
        let (stream, _) = listener.accept().unwrap_or_else(|e| panic!("{e}"));
        let mut c =
            ClientConn::with_watch_stops(Stream::Tcp(stream), WatchStops::Unknown, long_ago);
        let started = Instant::now();
        let e = ConnectionExt::read(&mut c).map(|_| ()).unwrap_err();
        assert!(
            e.to_string()
                .contains("sent no packet within 10s of connecting"),
            "{e}"
        );
        assert!(started.elapsed() < Duration::from_secs(1));
        let mut early = TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
        Write::write_all(&mut early, b"+$?#3f").unwrap_or_else(|e| panic!("{e}"));
        let (stream, _) = listener.accept().unwrap_or_else(|e| panic!("{e}"));
        let mut c =
            ClientConn::with_watch_stops(Stream::Tcp(stream), WatchStops::Unknown, long_ago);
        assert_eq!(take(&mut c, 6), b"+$?#3f");
        // Greeted: between packets it may now be silent without bound.
        assert_eq!(c.read_timeout().unwrap_or_else(|e| panic!("{e}")), None);
    }

    /// While a command runs, the interrupt byte is taken off the connection; other bytes stay
    /// for gdbstub; a closed connection is the client gone.
    #[test]
    fn an_interrupt_is_seen_while_a_command_runs() {
        let (c, mut client) = pair(WatchStops::Unknown);
        let shared = SharedConn::new(c);
        assert_eq!(shared.poll(), ClientSignal::Quiet);
        Write::write_all(&mut client, b"\x03").unwrap_or_else(|e| panic!("{e}"));
        let mut seen = ClientSignal::Quiet;
        for _ in 0..100 {
            seen = shared.poll();
            if seen != ClientSignal::Quiet {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(seen, ClientSignal::Interrupt);
        Write::write_all(&mut client, b"+").unwrap_or_else(|e| panic!("{e}"));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(shared.poll(), ClientSignal::Quiet);
        let mut gdbstub_side = shared.clone();
        assert_eq!(
            ConnectionExt::read(&mut gdbstub_side).unwrap_or_else(|e| panic!("{e}")),
            b'+'
        );
        drop(client);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(shared.poll(), ClientSignal::Gone);
    }

    #[test]
    fn lldb_host_info_is_answered_and_everything_else_passes_through() {
        let (mut c, mut client) = pair(WatchStops::Before { slots: 4 });
        // Ack mode: memlife acks and answers qHostInfo, eats the client's ack of its answer,
        // and hands gdbstub the next packet whole and unchanged.
        Write::write_all(&mut client, b"$qHostInfo#9b+$m0,4#fd").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(take(&mut c, 8), b"$m0,4#fd");
        let host = "endian:little;ptrsize:4;watchpoint_exceptions_received:before;";
        let sum = host.bytes().fold(0u8, |a, b| a.wrapping_add(b));
        let expected = format!("+${host}#{sum:02x}");
        assert_eq!(replies(&mut client, expected.len()), expected);
        // No-ack mode (gdbstub grants it): the watchpoint count, with no `+` around it; a bad
        // checksum goes to gdbstub, which asks again.
        Write::write_all(
            &mut client,
            b"$QStartNoAckMode#b0$qWatchpointSupportInfo:#55$qHostInfo#00",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(take(&mut c, 19), b"$QStartNoAckMode#b0");
        assert_eq!(take(&mut c, 13), b"$qHostInfo#00");
        assert_eq!(replies(&mut client, 10), "$num:4;#f9");
    }

    fn packet(body: &str) -> Vec<u8> {
        frame_reply(body)
    }

    /// With threads served, `qC` names the thread that runs, as `p1.TID` once the client offered
    /// `multiprocess+` (gdb), plain otherwise (the first client's packets pass through whole);
    /// before the thread is known, and without threads, `qC` goes to gdbstub.
    #[test]
    fn qc_names_the_thread_that_runs() {
        let (mut c, mut client) = pair(WatchStops::Unknown);
        let current = CurrentThread::default();
        c.answer_threads(current.clone());
        Write::write_all(&mut client, &packet("QStartNoAckMode")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(take(&mut c, 19), packet("QStartNoAckMode"));
        Write::write_all(&mut client, &packet("qC")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(take(&mut c, 6), packet("qC"), "not known yet");
        current.set(std::num::NonZeroUsize::new(0x2000_1318));
        Write::write_all(&mut client, &packet("qC")).unwrap_or_else(|e| panic!("{e}"));
        let supported = packet("qSupported:multiprocess+;swbreak+");
        Write::write_all(&mut client, &supported).unwrap_or_else(|e| panic!("{e}"));
        Write::write_all(&mut client, &packet("qC")).unwrap_or_else(|e| panic!("{e}"));
        Write::write_all(&mut client, &packet("g")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(take(&mut c, supported.len()), supported);
        assert_eq!(take(&mut c, 5), packet("g"));
        let plain = packet("QC20001318");
        let multi = packet("QCp1.20001318");
        let both = replies(&mut client, plain.len() + multi.len());
        assert_eq!(
            both.as_bytes(),
            [plain, multi].concat(),
            "no-ack mode: the replies alone"
        );

        let (mut c, mut client) = pair(WatchStops::Unknown);
        Write::write_all(&mut client, &packet("qC")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            take(&mut c, 6),
            packet("qC"),
            "no threads: gdbstub's answer"
        );
    }

    #[test]
    fn an_unknown_backend_leaves_lldb_packets_to_gdbstub() {
        let (mut c, mut client) = pair(WatchStops::Unknown);
        Write::write_all(&mut client, b"$qHostInfo#9b").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(take(&mut c, 13), b"$qHostInfo#9b");
        // After the store is LLDB's default: no count, so LLDB never steps over the store.
        assert_eq!(WatchStops::After.answer(b"qWatchpointSupportInfo:"), None);
        assert!(
            WatchStops::After
                .answer(b"qHostInfo")
                .is_some_and(|a| a.contains("watchpoint_exceptions_received:after;"))
        );
    }
}
