//! Connecting: `qSupported`, no-ack mode, the first stop (`?`), `vCont?`, the QEMU probe and the
//! target description.

use memlife_core::{Result, StopReason, TargetError};

use super::memory::max_read_size;
use super::{DEFAULT_PACKET_SIZE, GdbRemote, RunState};
use crate::packet::{self, Reply, parse_hex_u64};
use crate::stop::{self, StopPacket};
use crate::tdesc;

/// The handshake's `qSupported` request (the features gdb for ARM announces).
pub(crate) const QSUPPORTED: &str =
    "qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+;xmlRegisters=arm";

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

impl GdbRemote {
    pub(super) fn handshake(&mut self) -> Result<()> {
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

    pub(super) fn read_xfer_features(&mut self, annex: &str) -> Result<String> {
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
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn recognises_stop_replies() {
        assert!(is_stop_reply(b"T02thread:p01.01;"));
        assert!(is_stop_reply(b"S05"));
        assert!(is_stop_reply(b"W00"));
        assert!(!is_stop_reply(b"PacketSize=1000;qXfer:features:read+"));
        assert!(!is_stop_reply(b"T"));
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
