//! Answering the firmware's semihosting calls, which QEMU forwards as File-I/O requests while
//! the core runs (see [`crate::packets::fileio`] for the policy). The core is stopped inside
//! the call until the reply goes out, so memory can be read with plain `m` requests.
//!
//! With a [`SemihostingDir`] set, file calls are answered from that directory first (see
//! `semihosting_dir` for the confinement); everything else follows the policy.

use memlife_core::Result;

use super::GdbRemote;
use crate::SemihostingDir;
use crate::packets::fileio::{self, Decision, FileIo, errno};
use crate::packets::memory::{ReadMemory, WriteMemory};
use crate::semihosting_dir::{Denied, MAX_PATH, OUTSIDE};

/// Longest path shown when saying what was refused.
const MAX_PATH_SHOWN: u64 = 256;

impl GdbRemote {
    /// Lets the firmware's semihosting calls use files under `dir` (and nowhere else); `None`
    /// refuses every host file access again.
    pub fn set_semihosting_dir(&mut self, dir: Option<SemihostingDir>) {
        self.semihosting_dir = dir;
    }

    /// The directory the firmware may use, if any.
    pub fn semihosting_dir(&self) -> Option<&SemihostingDir> {
        self.semihosting_dir.as_ref()
    }

    /// Answers one File-I/O request; the core runs on once the reply is sent.
    pub(super) fn answer_file_io(&mut self, io: FileIo) -> Result<()> {
        if let Some(answer) = self.answer_in_dir(&io)? {
            let reply = match answer {
                Ok(v) => format!("F{v:x}"),
                Err(denied) => format!("F-1,{:x}", denied.errno),
            };
            let timeout = self.timeout;
            let r = self.conn.send(reply.as_bytes(), timeout);
            return self.note(r);
        }
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
                    let allowed = match &self.semihosting_dir {
                        Some(d) => format!(
                            "memlife serves only open, read, write, seek, close, remove, rename, stat \
                             and fstat under {}",
                            d.root().display()
                        ),
                        None => "memlife gives firmware no access to host files".to_string(),
                    };
                    tracing::warn!(
                        "refused the firmware's semihosting request to {what}{shown}: {allowed} \
                         (the firmware got an error code; further refusals are not reported)"
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

    /// Answers a file call from the semihosting directory: `None` when there is no directory or
    /// the call is not one it serves (the policy answers then).
    #[cfg(unix)]
    fn answer_in_dir(&mut self, io: &FileIo) -> Result<Option<std::result::Result<u64, Denied>>> {
        let Some(dir) = self.semihosting_dir.as_ref() else {
            return Ok(None);
        };
        let arg = |i: usize| io.args.get(i).copied().unwrap_or(0);
        let ours = dir.owns(arg(0));
        let answer = match io.call.as_str() {
            "open" | "unlink" => {
                let len = arg(1);
                if len > MAX_PATH + 1 {
                    Err(Denied {
                        errno: errno::ENAMETOOLONG,
                        outside: false,
                    })
                } else {
                    let path = self.read_during_call(arg(0), len)?;
                    let dir = self.semihosting_dir.as_mut().map(|d| {
                        if io.call == "open" {
                            d.open_file(&path, arg(2), arg(3))
                        } else {
                            d.remove(&path).map(|()| 0)
                        }
                    });
                    let Some(answer) = dir else {
                        return Ok(None);
                    };
                    if let Err(Denied { outside: true, .. }) = answer {
                        self.say_refused(OUTSIDE, &path);
                    }
                    answer
                }
            }
            "read" if ours => {
                let len = usize::try_from(arg(2).min(fileio::MAX_CONSOLE_WRITE)).unwrap_or(0);
                let Some(d) = self.semihosting_dir.as_mut() else {
                    return Ok(None);
                };
                match d.read(arg(0), len) {
                    Ok(bytes) => {
                        self.write_during_call(arg(1), &bytes)?;
                        Ok(bytes.len() as u64)
                    }
                    Err(e) => Err(e),
                }
            }
            "write" if ours => {
                let allowance = dir.write_allowance();
                let len = arg(2).min(fileio::MAX_CONSOLE_WRITE).min(allowance.max(1));
                let bytes = self.read_during_call(arg(1), len)?;
                let Some(d) = self.semihosting_dir.as_mut() else {
                    return Ok(None);
                };
                let answer = d.write(arg(0), &bytes);
                if answer.is_err() && allowance == 0 && !self.semihosting_refused {
                    self.semihosting_refused = true;
                    tracing::warn!(
                        "the firmware reached the semihosting write cap ({} bytes): further \
                         writes get an error",
                        d.max_write()
                    );
                }
                answer
            }
            "lseek" if ours => match self.semihosting_dir.as_mut() {
                Some(d) => d.seek(arg(0), arg(1), arg(2)),
                None => return Ok(None),
            },
            "close" if ours => match self.semihosting_dir.as_mut() {
                Some(d) => d.close(arg(0)).map(|()| 0),
                None => return Ok(None),
            },
            "isatty" if ours => Ok(0),
            "stat" => {
                let Some(path) = self.path_arg(arg(0), arg(1))? else {
                    return Ok(Some(Err(Denied {
                        errno: errno::ENAMETOOLONG,
                        outside: false,
                    })));
                };
                let Some(answer) = self.semihosting_dir.as_ref().map(|d| d.stat_path(&path)) else {
                    return Ok(None);
                };
                match answer {
                    Ok(st) => {
                        self.write_during_call(arg(2), &st.encode())?;
                        Ok(0)
                    }
                    Err(denied) => {
                        if denied.outside {
                            self.say_refused(OUTSIDE, &path);
                        }
                        Err(denied)
                    }
                }
            }
            "fstat" if ours => {
                let Some(answer) = self.semihosting_dir.as_ref().map(|d| d.fstat(arg(0))) else {
                    return Ok(None);
                };
                match answer {
                    Ok(st) => {
                        self.write_during_call(arg(1), &st.encode())?;
                        // The protocol's success is 0, but QEMU 7.2 turns SYS_FLEN (its only
                        // use of fstat) into EOVERFLOW unless the return code equals st_size;
                        // later QEMUs read st_size alone, so the size suits both.
                        Ok(st.size)
                    }
                    Err(denied) => Err(denied),
                }
            }
            "rename" => {
                let (Some(from), Some(to)) = (
                    self.path_arg(arg(0), arg(1))?,
                    self.path_arg(arg(2), arg(3))?,
                ) else {
                    return Ok(Some(Err(Denied {
                        errno: errno::ENAMETOOLONG,
                        outside: false,
                    })));
                };
                let Some(answer) = self.semihosting_dir.as_mut().map(|d| d.rename(&from, &to))
                else {
                    return Ok(None);
                };
                if let Err(Denied { outside: true, .. }) = answer {
                    let mut both = from.strip_suffix(b"\0").unwrap_or(&from).to_vec();
                    both.extend_from_slice(b" -> ");
                    both.extend_from_slice(&to);
                    self.say_refused(OUTSIDE, &both);
                }
                answer.map(|()| 0)
            }
            _ => return Ok(None),
        };
        Ok(Some(answer))
    }

    /// A path argument `ptr/len` (the length counts the NUL), or `None` when it is longer than
    /// any path the directory serves.
    #[cfg(unix)]
    fn path_arg(&mut self, addr: u64, len: u64) -> Result<Option<Vec<u8>>> {
        if len > MAX_PATH + 1 {
            return Ok(None);
        }
        self.read_during_call(addr, len).map(Some)
    }

    #[cfg(not(unix))]
    fn answer_in_dir(&mut self, _io: &FileIo) -> Result<Option<std::result::Result<u64, Denied>>> {
        Ok(None)
    }

    /// Says once that a path leading out of the semihosting directory was refused.
    #[cfg(unix)]
    fn say_refused(&mut self, what: &str, path: &[u8]) {
        let shown = &path[..path.len().min(MAX_PATH_SHOWN as usize)];
        let text = String::from_utf8_lossy(shown);
        let text = text.trim_end_matches('\0');
        if !self.semihosting_refused {
            self.semihosting_refused = true;
            let root = self
                .semihosting_dir
                .as_ref()
                .map(|d| d.root().display().to_string())
                .unwrap_or_default();
            tracing::warn!(
                "refused the firmware's semihosting request to {what} {root}: {text:?} (absolute \
                 paths, `..` and symbolic links are not followed; the firmware got an error \
                 code; further refusals are not reported)"
            );
        } else {
            tracing::debug!("refused semihosting path {text:?}");
        }
    }

    /// Writes target memory while the core waits in a File-I/O call (a `read` into its buffer).
    #[cfg(unix)]
    fn write_during_call(&mut self, addr: u64, bytes: &[u8]) -> Result<()> {
        let max = super::memory::max_write_size(self.features.packet_size).max(1);
        for (i, chunk) in bytes.chunks(max).enumerate() {
            let write = WriteMemory {
                addr: addr.wrapping_add((i * max) as u64),
                data: chunk,
            };
            let reply = self.request(&write.encode())?;
            write.parse_reply(reply)?;
        }
        Ok(())
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
