//! Connecting: `qSupported`, no-ack mode, the first stop (`?`), `vCont?`, the QEMU probe and the
//! target description.

use memlife_core::{Result, StopReason, TargetError};

use super::memory::max_read_size;
use super::{DEFAULT_PACKET_SIZE, GdbRemote, RunState};
use crate::packet::Reply;
use crate::packets::resume::{VCONT_QUERY, parse_vcont_actions};
use crate::packets::stop::{self, StopPacket, is_stop_reply};
use crate::packets::supported::{Features, QSUPPORTED};
use crate::packets::xfer::XferFeatures;
use crate::packets::{self as req, QEMU_PROBE, START_NO_ACK_MODE, STATUS};
use crate::tdesc;

/// The most bytes a target description may have, all files together (QEMU's Cortex-M one has
/// about 3 KiB).
pub(super) const MAX_TDESC_BYTES: usize = 256 * 1024;
/// The most `qXfer:features:read` requests one handshake makes.
pub(super) const MAX_XFER_REQUESTS: u32 = 512;

impl GdbRemote {
    pub(super) fn handshake(&mut self) -> Result<()> {
        let mut reply = self.request_data(QSUPPORTED, "qSupported")?;
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
            if self.request(START_NO_ACK_MODE)? == Reply::Ok {
                self.conn.ack = false;
            } else {
                tracing::debug!("server offered QStartNoAckMode but refused it");
            }
        }
        self.stats.max_read = max_read_size(self.features.packet_size) as u64;
        let first = self.request_data(STATUS, "?")?;
        match stop::parse(&first)? {
            StopPacket::Stopped(_) => {
                self.state = RunState::Halted;
                self.last_stop = Some(StopReason::Halted);
            }
            StopPacket::Exited(code) => self.state = RunState::Exited(i32::from(code)),
            StopPacket::Terminated(sig) => {
                self.state = RunState::Gone(format!("the program was terminated by signal {sig}"));
            }
            StopPacket::Output(_) | StopPacket::FileIo(_) => {
                return Err(TargetError::Protocol(
                    "console output or a File-I/O request as the reply to '?'".into(),
                ));
            }
        }
        let vcont = parse_vcont_actions(self.request(VCONT_QUERY)?).unwrap_or_else(|e| {
            tracing::debug!(error = %e, "not using vCont");
            Default::default()
        });
        self.features.vcont_continue = vcont.continue_;
        self.features.vcont_step = vcont.step;
        // QEMU answers its own query; in system emulation it never waits for the `+` of a
        // reply, so register writes can travel with the continue (see `send_run`).
        self.features.qemu = req::is_qemu(&self.request(QEMU_PROBE)?);
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

    /// Fetches one file of the target description (`target.xml` or one it includes).
    pub(super) fn read_xfer_features(&mut self, annex: &str) -> Result<String> {
        let chunk = self
            .features
            .packet_size
            .unwrap_or(DEFAULT_PACKET_SIZE)
            .saturating_sub(5)
            .max(64);
        let mut out = Vec::new();
        loop {
            // Bounded in bytes and in requests (over all the description's files), so a server
            // that serves one byte per request, or none, cannot keep the handshake going.
            self.xfer_requests += 1;
            if self.xfer_requests > MAX_XFER_REQUESTS {
                return Err(TargetError::Protocol(format!(
                    "the target description took more than {MAX_XFER_REQUESTS} requests (at {annex}, offset {})",
                    out.len()
                )));
            }
            let xfer = XferFeatures {
                annex,
                offset: out.len(),
                len: chunk,
            };
            let reply = self.request(&xfer.encode())?;
            let part = xfer.parse_reply(reply)?;
            out.extend_from_slice(&part.data);
            self.xfer_bytes = self.xfer_bytes.saturating_add(part.data.len());
            if self.xfer_bytes > MAX_TDESC_BYTES {
                return Err(TargetError::Protocol(format!(
                    "the target description is larger than {MAX_TDESC_BYTES} bytes (at {annex})"
                )));
            }
            if part.last {
                break;
            }
        }
        String::from_utf8(out).map_err(|_| TargetError::Protocol(format!("{annex} is not UTF-8")))
    }
}
