//! One request and its reply, and the writes held back to travel with the next one.

use memlife_core::{Result, TargetError};

use super::{GdbRemote, RunState};
use crate::packet::Reply;
use crate::packets::{expect_data, expect_ok, registers};

impl GdbRemote {
    pub(super) fn check_alive(&self) -> Result<()> {
        match &self.state {
            RunState::Exited(code) => Err(TargetError::Exited(*code)),
            RunState::Gone(why) => Err(TargetError::Gone(why.clone())),
            _ => Ok(()),
        }
    }

    pub(super) fn check_halted(&self) -> Result<()> {
        self.check_alive()?;
        if self.state == RunState::Running {
            return Err(TargetError::NotHalted);
        }
        Ok(())
    }

    /// Remembers a dead link so later calls fail the same way.
    pub(super) fn note<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(TargetError::Gone(why)) = &r {
            self.state = RunState::Gone(why.clone());
        }
        r
    }

    /// Sends a request and waits for its reply (with the read timeout). Writes held back are
    /// sent first, in the same TCP segment.
    pub(super) fn request(&mut self, data: &[u8]) -> Result<Reply> {
        self.check_deadline()?;
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

    pub(super) fn has_pending_writes(&self) -> bool {
        self.regs_dirty || !self.pending_writes.is_empty()
    }

    /// The held-back writes as packets: memory first, then the register image.
    pub(super) fn take_pending_writes(&mut self) -> Vec<Vec<u8>> {
        let mut packets = std::mem::take(&mut self.pending_writes);
        if std::mem::take(&mut self.regs_dirty)
            && let Some(g) = &self.regs_cache
        {
            packets.push(registers::write_registers(g));
        }
        packets
    }

    /// Checks the `OK` replies of `count` pipelined writes.
    pub(super) fn check_write_replies(&mut self, count: usize) -> Result<()> {
        self.check_write_replies_with(count, true)
    }

    /// As [`Self::check_write_replies`], without sending `+` for them (QEMU, target running).
    pub(super) fn check_write_replies_unacked(&mut self, count: usize) -> Result<()> {
        self.check_write_replies_with(count, false)
    }

    pub(super) fn check_write_replies_with(&mut self, count: usize, ack: bool) -> Result<()> {
        let timeout = self.timeout;
        for _ in 0..count {
            let r = self.conn.recv_with_ack(timeout, "a write reply", ack);
            let Some(reply) = self.note(r)?.map(Reply::parse) else {
                return Err(TargetError::timeout(timeout, "write reply"));
            };
            if let Err(e) = expect_ok(reply, "a held-back write") {
                // A refused register write leaves the cached image wrong.
                self.regs_cache = None;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Sends the held-back writes and `data` in one go; returns `data`'s reply.
    pub(super) fn send_with_writes(&mut self, data: &[u8]) -> Result<Reply> {
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
    pub(super) fn read_data(&mut self, what: &'static str) -> Result<Vec<u8>> {
        let timeout = self.timeout;
        let r = self.conn.recv(timeout, "a reply");
        match self.note(r)? {
            None => Err(TargetError::timeout(timeout, what)),
            Some(d) => Ok(d),
        }
    }

    /// A request whose reply must carry data.
    pub(super) fn request_data(&mut self, data: &[u8], what: &'static str) -> Result<Vec<u8>> {
        expect_data(self.request(data)?, what)
    }

    /// A request whose reply must be `OK`.
    pub(super) fn request_ok(&mut self, data: &[u8], what: &'static str) -> Result<()> {
        expect_ok(self.request(data)?, what)
    }
}
