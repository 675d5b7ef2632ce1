//! Answering the firmware's semihosting calls, which QEMU forwards as File-I/O requests while
//! the core runs (see [`crate::packets::fileio`] for the policy). The core is stopped inside
//! the call until the reply goes out, so memory can be read with plain `m` requests.

use memlife_core::Result;

use super::GdbRemote;
use crate::packets::fileio::{self, Decision, FileIo};
use crate::packets::memory::ReadMemory;

/// Longest path shown when saying what was refused.
const MAX_PATH_SHOWN: u64 = 256;

impl GdbRemote {
    /// Answers one File-I/O request; the core runs on once the reply is sent.
    pub(super) fn answer_file_io(&mut self, io: FileIo) -> Result<()> {
        let decision = fileio::decide(&io);
        let mut written = 0;
        match &decision {
            Decision::Console { addr, len } => {
                let bytes = self.read_during_call(*addr, *len)?;
                written = bytes.len() as u64;
                tracing::info!(target: "memlife_rsp::console", "{}", String::from_utf8_lossy(&bytes));
            }
            Decision::Refuse { what, path } => {
                let shown = match path {
                    Some((addr, len)) => {
                        let bytes = self
                            .read_during_call(*addr, (*len).min(MAX_PATH_SHOWN))
                            .unwrap_or_default();
                        let text = String::from_utf8_lossy(&bytes);
                        format!(" {:?}", text.trim_end_matches('\0'))
                    }
                    None => String::new(),
                };
                if !self.semihosting_refused {
                    self.semihosting_refused = true;
                    tracing::warn!(
                        "refused the firmware's semihosting request to {what}{shown}: memlife gives \
                         firmware no access to host files (the firmware got an error code; further \
                         refusals are not reported)"
                    );
                } else {
                    tracing::debug!("refused semihosting request to {what}{shown}");
                }
            }
            Decision::Return(_) | Decision::Fail(_) => {}
        }
        let reply = fileio::reply(&decision, written);
        let timeout = self.timeout;
        let r = self.conn.send(&reply, timeout);
        self.note(r)
    }

    /// Reads target memory while the core waits in a File-I/O call (the client still counts it
    /// as running, so [`GdbRemote::read_memory`] would refuse).
    fn read_during_call(&mut self, addr: u64, len: u64) -> Result<Vec<u8>> {
        let len = usize::try_from(len.min(fileio::MAX_CONSOLE_WRITE)).unwrap_or(0);
        let mut out = Vec::with_capacity(len);
        let max = self.max_read();
        while out.len() < len {
            let read = ReadMemory {
                addr: addr.wrapping_add(out.len() as u64),
                len: max.min(len - out.len()),
            };
            let reply = self.request(&read.encode())?;
            out.extend(read.parse_reply(reply)?);
        }
        Ok(out)
    }
}
