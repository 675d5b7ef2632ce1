//! The byte stream under the client: framing, acknowledgements and deadlines on a socket.
//!
//! Every read has a deadline, so a peer that stops talking (or talks garbage forever) costs at
//! most the timeout. Bytes read past a frame stay buffered, so a wait that times out in the
//! middle of a stop reply loses nothing. A closed socket is remembered and reported as
//! [`TargetError::Gone`] from then on.
//!
//! Pipelined requests whose replies were not read (the user interrupted a long read) are owed:
//! the next send first reads and drops them, for at most [`SETTLE_BUDGET`], so that no reply is
//! ever taken for another request's. A server too slow for that loses the connection.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use memlife_core::limits::Deadline;
use memlife_core::{Result, TargetError};

use crate::packet::{self, MAX_FRAME};

/// How often a packet is sent again after a `-` before giving up.
const MAX_RETRIES: usize = 3;

/// How long the replies owed to interrupted requests are waited for, in all, before the
/// connection is dropped instead (see the module docs).
pub(crate) const SETTLE_BUDGET: Duration = Duration::from_secs(2);

/// A framed, acknowledged packet stream.
#[derive(Debug)]
pub(crate) struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    /// Acknowledgements are on until `QStartNoAckMode` succeeds.
    pub(crate) ack: bool,
    closed: bool,
    /// Replies to requests already sent that nobody will read (see the module docs).
    owed: usize,
}

impl Conn {
    pub(crate) fn new(stream: TcpStream) -> Self {
        Conn {
            stream,
            buf: Vec::new(),
            ack: true,
            closed: false,
            owed: 0,
        }
    }

    /// Notes `n` replies to requests already sent that will not be read: the next send drops
    /// them first.
    pub(crate) fn owe(&mut self, n: usize) {
        self.owed += n;
    }

    /// Reads and drops the owed replies, within [`SETTLE_BUDGET`]; a server that does not send
    /// them in time loses the connection, so that no later request takes one for its own.
    fn settle(&mut self) -> Result<()> {
        let deadline = Deadline::after(SETTLE_BUDGET);
        while self.owed > 0 {
            match self.recv(
                deadline.left_or_max(),
                "a reply owed to an interrupted request",
            )? {
                Some(_) => self.owed -= 1,
                None => {
                    let owed = std::mem::take(&mut self.owed);
                    self.closed = true;
                    let _ = self.stream.shutdown(std::net::Shutdown::Both);
                    return Err(TargetError::Gone(format!(
                        "the connection was dropped: the server still owed {owed} replies to \
                         reads the user interrupted, and a later request could have taken one \
                         for its own"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Reads more bytes into the buffer; `Ok(false)` when the deadline passed first.
    /// Without a deadline (a timeout the clock cannot hold) it waits as long as it takes.
    fn fill(&mut self, deadline: Deadline, what: &'static str) -> Result<bool> {
        if self.closed {
            return Err(TargetError::Gone("the server closed the connection".into()));
        }
        if deadline.passed() {
            return Ok(false);
        }
        // A zero timeout means "block forever" to the OS: never pass one.
        let wait = deadline.left().map(|w| w.max(Duration::from_millis(1)));
        self.stream
            .set_read_timeout(wait)
            .map_err(|e| TargetError::transport("setting the socket timeout", e))?;
        let mut chunk = [0u8; 8192];
        match self.stream.read(&mut chunk) {
            Ok(0) => {
                self.closed = true;
                tracing::debug!(what, "server closed the connection");
                Err(TargetError::Gone(format!(
                    "the server closed the connection while waiting for {what}"
                )))
            }
            Ok(n) => {
                if self.buf.len() + n > MAX_FRAME * 2 {
                    return Err(TargetError::Protocol(format!(
                        "the server sent more than {MAX_FRAME} bytes without a complete packet"
                    )));
                }
                self.buf.extend_from_slice(&chunk[..n]);
                Ok(true)
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Ok(false),
            Err(e) if e.kind() == ErrorKind::Interrupted => Ok(true),
            Err(e) => {
                self.closed = true;
                Err(TargetError::transport(format!("reading {what}"), e))
            }
        }
    }

    fn write_raw(&mut self, bytes: &[u8]) -> Result<()> {
        if self.closed {
            return Err(TargetError::Gone("the server closed the connection".into()));
        }
        self.stream.write_all(bytes).map_err(|e| {
            self.closed = true;
            TargetError::transport("sending to the server", e)
        })
    }

    /// Sends packets back to back without waiting for acknowledgements: the caller reads one
    /// reply per packet afterwards (acks are skipped as noise by [`Conn::recv`]). Used to put
    /// register and memory writes in the same TCP segment as the command after them.
    pub(crate) fn send_many(&mut self, packets: &[Vec<u8>]) -> Result<()> {
        self.settle()?;
        let mut bytes = Vec::new();
        for p in packets {
            tracing::trace!(packet = %String::from_utf8_lossy(p), "->>");
            bytes.extend_from_slice(&packet::encode(p));
        }
        self.write_raw(&bytes)
    }

    /// Sends the interrupt byte (no framing, no ack).
    pub(crate) fn interrupt(&mut self) -> Result<()> {
        self.settle()?;
        self.write_raw(&[packet::INTERRUPT])
    }

    /// Sends a packet and, in ack mode, waits for `+`, resending on `-`.
    pub(crate) fn send(&mut self, data: &[u8], timeout: Duration) -> Result<()> {
        self.settle()?;
        let frame = packet::encode(data);
        tracing::trace!(packet = %String::from_utf8_lossy(data), "->");
        for _ in 0..=MAX_RETRIES {
            self.write_raw(&frame)?;
            if !self.ack {
                return Ok(());
            }
            let deadline = Deadline::after(timeout);
            loop {
                match self.buf.first() {
                    Some(b'+') => {
                        self.buf.remove(0);
                        return Ok(());
                    }
                    Some(b'-') => {
                        self.buf.remove(0);
                        tracing::debug!("server asked for a retransmission");
                        break;
                    }
                    // A reply without an ack: lenient servers do this; take it as acked.
                    Some(b'$') => return Ok(()),
                    Some(_) => {
                        self.buf.remove(0);
                    }
                    None => {
                        if !self.fill(deadline, "an acknowledgement")? {
                            return Err(TargetError::timeout(timeout, "acknowledgement"));
                        }
                    }
                }
            }
        }
        Err(TargetError::Protocol(format!(
            "the server rejected a packet {} times",
            MAX_RETRIES + 1
        )))
    }

    /// Whether this link runs without acknowledgements (then nothing is owed after a reply).
    pub(crate) fn ack_pending_allowed(&self) -> bool {
        !self.ack
    }

    /// Receives one packet. `Ok(None)` when `timeout` passes first; a partial frame stays
    /// buffered for the next call.
    pub(crate) fn recv(
        &mut self,
        timeout: Duration,
        what: &'static str,
    ) -> Result<Option<Vec<u8>>> {
        self.recv_with_ack(timeout, what, true)
    }

    /// [`Conn::recv`], optionally without acknowledging the packet (for a server that does not
    /// wait for acknowledgements while its target runs).
    pub(crate) fn recv_with_ack(
        &mut self,
        timeout: Duration,
        what: &'static str,
        send_ack: bool,
    ) -> Result<Option<Vec<u8>>> {
        let deadline = Deadline::after(timeout);
        let mut rejected = 0;
        loop {
            // Drop noise before the frame (stray acks, garbage).
            match self.buf.iter().position(|&b| b == b'$') {
                Some(start) => {
                    self.buf.drain(..start);
                }
                None => self.buf.clear(),
            }
            if let Some((_, end)) = packet::find_frame(&self.buf) {
                let frame: Vec<u8> = self.buf.drain(..end).collect();
                match packet::decode_frame(&frame) {
                    Ok(data) => {
                        if self.ack && send_ack {
                            self.write_raw(b"+")?;
                        }
                        tracing::trace!(packet = %String::from_utf8_lossy(&data), "<-");
                        return Ok(Some(data));
                    }
                    Err(e) if self.ack && rejected < MAX_RETRIES => {
                        rejected += 1;
                        tracing::debug!(error = %e, "bad packet, asking for a retransmission");
                        self.write_raw(b"-")?;
                    }
                    Err(e) => return Err(e.into()),
                }
            } else if self.buf.len() > MAX_FRAME {
                return Err(packet::PacketError::TooLong.into());
            } else if !self.fill(deadline, what)? {
                return Ok(None);
            }
        }
    }
}
