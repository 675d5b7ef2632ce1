//! `m addr,len` reads memory, `M addr,len:hex` writes it.

use memlife_core::{Result, TargetError};

use super::unexpected;
use crate::packet::{Reply, from_hex, to_hex};

/// `m`: read `len` bytes at `addr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadMemory {
    /// First address.
    pub addr: u64,
    /// Bytes asked for (at most what a reply of the server's packet size carries).
    pub len: usize,
}

impl ReadMemory {
    /// The request.
    pub fn encode(&self) -> Vec<u8> {
        format!("m{:x},{:x}", self.addr, self.len).into_bytes()
    }

    /// The bytes of the reply: hex, at least one byte and at most `len` (a server may answer
    /// with fewer, up to where its memory ends). An error code is memory the target will not
    /// read; no bytes, `OK` or more bytes than asked is a broken server.
    pub fn parse_reply(&self, reply: Reply) -> Result<Vec<u8>> {
        let unmapped = TargetError::Unmapped {
            addr: self.addr,
            len: self.len,
        };
        match reply {
            Reply::Data(d) => {
                let bytes = from_hex(&d)?;
                if bytes.len() > self.len {
                    return Err(TargetError::Protocol(format!(
                        "m{:x},{:x} returned {} bytes",
                        self.addr,
                        self.len,
                        bytes.len()
                    )));
                }
                Ok(bytes)
            }
            Reply::Error(_) => Err(unmapped),
            Reply::Unsupported | Reply::Ok => Err(TargetError::Protocol(format!(
                "no data for m{:x},{:x}",
                self.addr, self.len
            ))),
        }
    }
}

/// `M`: write `data` at `addr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteMemory<'a> {
    /// First address.
    pub addr: u64,
    /// The bytes.
    pub data: &'a [u8],
}

/// What `M`, its address (16 hex digits at most), `,`, its length (8 at most: a write never
/// reaches 4 GiB) and `:` take in a packet besides the data.
pub const WRITE_OVERHEAD: usize = 1 + 16 + 1 + 8 + 1;

impl WriteMemory<'_> {
    /// The request.
    pub fn encode(&self) -> Vec<u8> {
        format!(
            "M{:x},{:x}:{}",
            self.addr,
            self.data.len(),
            to_hex(self.data)
        )
        .into_bytes()
    }

    /// `OK`; an error code means the memory cannot be written.
    pub fn parse_reply(&self, reply: Reply) -> Result<()> {
        match reply {
            Reply::Ok => Ok(()),
            Reply::Error(_) => Err(TargetError::Unmapped {
                addr: self.addr,
                len: self.data.len(),
            }),
            Reply::Unsupported => Err(TargetError::Unsupported("memory writes")),
            Reply::Data(d) => Err(unexpected("M", &d)),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::packets::data;

    const READ: ReadMemory = ReadMemory {
        addr: 0x2000_0000,
        len: 4,
    };

    #[test]
    fn read_memory() {
        assert_eq!(READ.encode(), b"m20000000,4");
        assert_eq!(
            READ.parse_reply(data("78563412")).unwrap(),
            [0x78, 0x56, 0x34, 0x12]
        );
        assert_eq!(
            READ.parse_reply(data("7856")).unwrap(),
            [0x78, 0x56],
            "short reads pass"
        );
    }

    #[test]
    fn invalid_read_memory_error_code_is_unmapped() {
        let err = READ.parse_reply(Reply::Error(0x0e)).unwrap_err();
        assert!(
            matches!(
                err,
                TargetError::Unmapped {
                    addr: 0x2000_0000,
                    len: 4
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn invalid_read_memory_no_data() {
        assert!(matches!(
            READ.parse_reply(Reply::Unsupported),
            Err(TargetError::Protocol(_))
        ));
    }

    #[test]
    fn invalid_read_memory_too_many_bytes() {
        assert!(matches!(
            READ.parse_reply(data("0102030405")),
            Err(TargetError::Protocol(_))
        ));
    }

    #[test]
    fn invalid_read_memory_bad_hex() {
        for bad in ["0", "zz", "123", "12 4"] {
            assert!(
                matches!(READ.parse_reply(data(bad)), Err(TargetError::Protocol(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn invalid_read_memory_ok() {
        assert!(matches!(
            READ.parse_reply(Reply::Ok),
            Err(TargetError::Protocol(_))
        ));
    }

    #[test]
    fn write_memory() {
        let w = WriteMemory {
            addr: 0x2000_0010,
            data: &[0xde, 0xad],
        };
        assert_eq!(w.encode(), b"M20000010,2:dead");
        assert!(w.parse_reply(Reply::Ok).is_ok());
        assert!(matches!(
            w.parse_reply(Reply::Error(1)),
            Err(TargetError::Unmapped {
                addr: 0x2000_0010,
                len: 2
            })
        ));
        assert!(matches!(
            w.parse_reply(Reply::Unsupported),
            Err(TargetError::Unsupported(_))
        ));
        assert!(matches!(
            w.parse_reply(data("00")),
            Err(TargetError::Protocol(_))
        ));
        let data = vec![0u8; 0x1234];
        let longest = WriteMemory {
            addr: u64::MAX,
            data: &data,
        };
        assert!(longest.encode().len() <= WRITE_OVERHEAD + 2 * data.len());
    }
}
