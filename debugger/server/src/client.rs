//! One gdb client's connection, guarded: a packet must arrive whole within [`PACKET_DEADLINE`]
//! of its `$`, and a packet longer than [`MAX_PACKET`] ends the session (gdbstub's fixed
//! buffer refuses it). A client that stalls mid-packet, or streams a packet without end, is
//! dropped instead of holding the server from every other client. Between packets a client may
//! stay silent as long as it likes (a user thinking at the gdb prompt).

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use gdbstub::conn::{Connection, ConnectionExt};

/// The most a packet may take from `$` to its checksum.
pub const PACKET_DEADLINE: Duration = Duration::from_secs(10);
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

    fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
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

/// A client's stream with the mid-packet deadline.
#[derive(Debug)]
pub struct ClientConn {
    stream: Stream,
    frame: Frame,
    /// A byte `peek` took off the socket, for the next `read`.
    peeked: Option<u8>,
}

impl ClientConn {
    /// Wraps an accepted stream.
    pub fn new(stream: Stream) -> Self {
        ClientConn {
            stream,
            frame: Frame::Idle,
            peeked: None,
        }
    }

    fn track(&mut self, byte: u8) {
        self.frame = match (self.frame, byte) {
            (Frame::Idle, b'$') => Frame::Body(Instant::now()),
            (Frame::Idle, _) => Frame::Idle,
            (Frame::Body(t), b'#') => Frame::Checksum(t, 2),
            (Frame::Body(t), _) => Frame::Body(t),
            (Frame::Checksum(_, 1), _) => Frame::Idle,
            (Frame::Checksum(t, n), _) => Frame::Checksum(t, n.saturating_sub(1)),
        };
    }

    /// How long the next byte may take: without bound between packets, the rest of the
    /// deadline inside one.
    fn read_timeout(&self) -> std::io::Result<Option<Duration>> {
        let started = match self.frame {
            Frame::Idle => return Ok(None),
            Frame::Body(t) | Frame::Checksum(t, _) => t,
        };
        let left = PACKET_DEADLINE.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Err(stalled());
        }
        Ok(Some(left))
    }
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
                Err(stalled())
            }
            Err(e) => Err(e),
        }
    }

    fn peek(&mut self) -> Result<Option<u8>, Self::Error> {
        // A running target: the event loop looks for gdb's bytes between short waits. The byte
        // is taken off the socket and kept for `read` (Unix sockets have no stable peek).
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
}
