//! File-I/O requests (`Fopen,...`, `Fwrite,...`) and their replies (`Fretcode,errno`).
//!
//! QEMU started with `-semihosting-config target=gdb` forwards the firmware's semihosting calls
//! to the debugger as these requests instead of running them on the host. [`decide`] is the
//! policy: console output (writes to file descriptors 1 and 2) is kept, stdin reads end of file,
//! and everything that would touch a host file (open, rename, unlink, stat, system) is refused
//! with `EACCES`. The firmware gets an error code; it never gets a host file.

use crate::packet::{PacketError, parse_hex_u64};

/// GDB's File-I/O errno values (protocol values, not the host's).
pub mod errno {
    /// No such file or directory.
    pub const ENOENT: u32 = 2;
    /// Bad file descriptor.
    pub const EBADF: u32 = 9;
    /// Permission denied.
    pub const EACCES: u32 = 13;
    /// File exists.
    pub const EEXIST: u32 = 17;
    /// Not a directory.
    pub const ENOTDIR: u32 = 20;
    /// Is a directory.
    pub const EISDIR: u32 = 21;
    /// Invalid argument.
    pub const EINVAL: u32 = 22;
    /// Too many open files.
    pub const EMFILE: u32 = 24;
    /// File too large (the write cap is reached).
    pub const EFBIG: u32 = 27;
    /// No space left on device.
    pub const ENOSPC: u32 = 28;
    /// Illegal seek.
    pub const ESPIPE: u32 = 29;
    /// Read-only file system.
    pub const EROFS: u32 = 30;
    /// File name too long.
    pub const ENAMETOOLONG: u32 = 91;
    /// Anything else (the protocol's "unknown error").
    pub const EUNKNOWN: u32 = 9999;
}

/// A file's metadata as GDB's File-I/O `struct stat` carries it to the firmware (`stat`,
/// `fstat`): 64 bytes, every field big-endian, in the order [`FileStat::encode`] writes. The
/// fields that would only tell the firmware about the host (device, inode, owner) are zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    /// Protocol mode bits: `S_IFREG` (0o100000) or `S_IFDIR` (0o40000), and the permission
    /// bits (0o777), which have the same values as on Unix hosts.
    pub mode: u32,
    /// Size in bytes.
    pub size: u64,
    /// Preferred block size.
    pub blksize: u64,
    /// Blocks allocated.
    pub blocks: u64,
    /// Access, modification and change times, seconds since 1970 (clamped to 32 bits).
    pub times: [i64; 3],
}

impl FileStat {
    /// The protocol's `S_IFREG`.
    pub const REGULAR: u32 = 0o100_000;
    /// The protocol's `S_IFDIR`.
    pub const DIRECTORY: u32 = 0o40_000;

    /// The 64 bytes: `st_dev`, `st_ino`, `st_mode`, `st_nlink`, `st_uid`, `st_gid`, `st_rdev`
    /// (4 bytes each), `st_size`, `st_blksize`, `st_blocks` (8 each), `st_atime`, `st_mtime`,
    /// `st_ctime` (4 each).
    pub fn encode(&self) -> [u8; 64] {
        let mut out = [0u8; 64];
        out[8..12].copy_from_slice(&self.mode.to_be_bytes());
        out[12..16].copy_from_slice(&1u32.to_be_bytes()); // st_nlink: only single-named files
        out[28..36].copy_from_slice(&self.size.to_be_bytes());
        out[36..44].copy_from_slice(&self.blksize.to_be_bytes());
        out[44..52].copy_from_slice(&self.blocks.to_be_bytes());
        for (i, t) in self.times.iter().enumerate() {
            let t = u32::try_from((*t).clamp(0, i64::from(u32::MAX))).unwrap_or(0);
            out[52 + 4 * i..56 + 4 * i].copy_from_slice(&t.to_be_bytes());
        }
        out
    }
}

/// Largest console write read from the target per request; the firmware is told how much was
/// written and sends the rest again.
pub const MAX_CONSOLE_WRITE: u64 = 4096;

/// A `F` request: the call's name and its numeric arguments (`ptr/len` pairs split in two).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileIo {
    /// `open`, `write`, ...
    pub call: String,
    /// The hex arguments in order.
    pub args: Vec<u64>,
}

/// What memlife does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Read `len` bytes at `addr` as console output, then answer `len`.
    Console { addr: u64, len: u64 },
    /// Answer this return value.
    Return(u64),
    /// Answer -1 with this errno.
    Fail(u32),
    /// Answer -1 with `EACCES`, and say what was refused: host file access. `path` is the
    /// `(addr, len)` of the path argument when the call has one.
    Refuse {
        what: &'static str,
        path: Option<(u64, u64)>,
    },
}

/// Parses the payload of an `F` request (without the leading `F`).
pub fn parse(body: &[u8]) -> Result<FileIo, PacketError> {
    let text = std::str::from_utf8(body)
        .map_err(|_| PacketError::BadHex(String::from_utf8_lossy(body).into_owned()))?;
    let mut parts = text.split(',');
    let call = parts.next().unwrap_or_default().to_string();
    if call.is_empty() || call.len() > 32 || !call.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(PacketError::BadHex(text.chars().take(32).collect()));
    }
    let mut args = Vec::new();
    for part in parts {
        for number in part.split('/') {
            if args.len() >= 8 {
                return Err(PacketError::BadHex(text.chars().take(32).collect()));
            }
            args.push(parse_hex_u64(number.as_bytes())?);
        }
    }
    Ok(FileIo { call, args })
}

/// The policy: see the module docs.
pub fn decide(io: &FileIo) -> Decision {
    let arg = |i: usize| io.args.get(i).copied();
    let console = |fd: Option<u64>| matches!(fd, Some(0..=2));
    match io.call.as_str() {
        "write" => match (arg(0), arg(1), arg(2)) {
            (Some(1 | 2), Some(addr), Some(len)) => Decision::Console {
                addr,
                len: len.min(MAX_CONSOLE_WRITE),
            },
            _ => Decision::Fail(errno::EBADF),
        },
        // stdin is empty: end of file.
        "read" if arg(0) == Some(0) => Decision::Return(0),
        "read" => Decision::Fail(errno::EBADF),
        "close" if console(arg(0)) => Decision::Return(0),
        "close" => Decision::Fail(errno::EBADF),
        "isatty" => Decision::Return(u64::from(console(arg(0)))),
        "lseek" if console(arg(0)) => Decision::Fail(errno::ESPIPE),
        "lseek" | "fstat" => Decision::Fail(errno::EBADF),
        "gettimeofday" => Decision::Fail(errno::EINVAL),
        "open" => Decision::Refuse {
            what: "open a host file",
            path: arg(0).zip(arg(1)),
        },
        "unlink" => Decision::Refuse {
            what: "delete a host file",
            path: arg(0).zip(arg(1)),
        },
        "rename" => Decision::Refuse {
            what: "rename a host file",
            path: arg(0).zip(arg(1)),
        },
        "stat" => Decision::Refuse {
            what: "look at a host file",
            path: arg(0).zip(arg(1)),
        },
        "system" => Decision::Refuse {
            what: "run a host command",
            path: arg(0).zip(arg(1)),
        },
        _ => Decision::Fail(errno::EUNKNOWN),
    }
}

/// The reply to send: `Fretcode` or `F-1,errno`.
pub fn reply(decision: &Decision, written: u64) -> Vec<u8> {
    match decision {
        Decision::Console { .. } => format!("F{written:x}"),
        Decision::Return(v) => format!("F{v:x}"),
        Decision::Fail(e) => format!("F-1,{e:x}"),
        Decision::Refuse { .. } => format!("F-1,{:x}", errno::EACCES),
    }
    .into_bytes()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The size sits where QEMU reads it for SYS_FLEN (offset 28, big-endian).
    #[test]
    fn stat_layout() {
        let st = FileStat {
            mode: FileStat::REGULAR | 0o644,
            size: 0x0102_0304_0506_0708,
            blksize: 4096,
            blocks: 8,
            times: [1, -5, 1 << 40],
        };
        let b = st.encode();
        assert_eq!(&b[8..12], &[0, 0, 0x81, 0xa4]);
        assert_eq!(&b[28..36], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&b[36..44], &4096u64.to_be_bytes());
        assert_eq!(
            &b[52..64],
            &[0, 0, 0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]
        );
        assert_eq!(&b[..8], &[0; 8]);
    }

    #[test]
    fn parses_qemu_requests() {
        let io = parse(b"open,20000100/1f,601,1b6").unwrap();
        assert_eq!(io.call, "open");
        assert_eq!(io.args, vec![0x2000_0100, 0x1f, 0x601, 0x1b6]);
        assert_eq!(
            parse(b"write,2,8000200,1d").unwrap().args,
            vec![2, 0x0800_0200, 0x1d]
        );
        assert!(parse(b"").is_err());
        assert!(parse(b"open,zz").is_err());
        assert!(parse(b"write,1,2,3,4,5,6,7,8,9").is_err());
    }

    #[test]
    fn console_is_kept_and_host_files_are_refused() {
        let write = |fd| parse(format!("write,{fd},20000000,10").as_bytes()).unwrap();
        assert_eq!(
            decide(&write(1)),
            Decision::Console {
                addr: 0x2000_0000,
                len: 16
            }
        );
        assert_eq!(decide(&write(5)), Decision::Fail(errno::EBADF));
        for call in [
            "open,20000000/4,601,1b6",
            "unlink,20000000/4",
            "system,20000000/4",
        ] {
            let d = decide(&parse(call.as_bytes()).unwrap());
            assert!(matches!(d, Decision::Refuse { .. }), "{call}");
            assert_eq!(reply(&d, 0), b"F-1,d");
        }
        assert_eq!(reply(&decide(&parse(b"isatty,1").unwrap()), 0), b"F1");
        assert_eq!(
            reply(&decide(&parse(b"read,0,20000000,10").unwrap()), 0),
            b"F0"
        );
    }
}
