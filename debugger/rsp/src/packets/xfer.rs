//! `qXfer:features:read:ANNEX:OFFSET,LENGTH` reads a target description (`target.xml` and what it
//! includes) a chunk at a time.

use memlife_core::{Result, TargetError};

use super::unexpected;
use crate::packet::Reply;

/// One chunk of an annex.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XferFeatures<'a> {
    /// `target.xml` or a file it includes.
    pub annex: &'a str,
    /// Where in the annex.
    pub offset: usize,
    /// How many bytes at most.
    pub len: usize,
}

/// A chunk and whether more follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The bytes.
    pub data: Vec<u8>,
    /// `l`: this was the last chunk.
    pub last: bool,
}

impl XferFeatures<'_> {
    /// The request.
    pub fn encode(&self) -> Vec<u8> {
        format!(
            "qXfer:features:read:{}:{:x},{:x}",
            self.annex, self.offset, self.len
        )
        .into_bytes()
    }

    /// `m` + data (more to come) or `l` + data (the end). An `m` without data would make the
    /// reader ask forever, so it is an error.
    pub fn parse_reply(&self, reply: Reply) -> Result<Chunk> {
        let d = match reply {
            Reply::Data(d) => d,
            Reply::Unsupported => return Err(TargetError::Unsupported("qXfer:features:read")),
            Reply::Error(code) => {
                return Err(TargetError::Refused {
                    request: "qXfer:features:read",
                    code,
                });
            }
            Reply::Ok => return Err(unexpected("qXfer:features:read", b"OK")),
        };
        match d.split_first() {
            Some((b'l', rest)) => Ok(Chunk {
                data: rest.to_vec(),
                last: true,
            }),
            Some((b'm', rest)) if !rest.is_empty() => Ok(Chunk {
                data: rest.to_vec(),
                last: false,
            }),
            _ => Err(TargetError::Protocol(format!(
                "unexpected qXfer reply for {}",
                self.annex
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const REQ: XferFeatures<'static> = XferFeatures {
        annex: "target.xml",
        offset: 0x7fb,
        len: 0xffb,
    };

    #[test]
    fn chunks() {
        assert_eq!(REQ.encode(), b"qXfer:features:read:target.xml:7fb,ffb");
        let more = REQ.parse_reply(Reply::Data(b"m<target>".to_vec())).unwrap();
        assert_eq!((more.data.as_slice(), more.last), (&b"<target>"[..], false));
        let last = REQ.parse_reply(Reply::Data(b"l".to_vec())).unwrap();
        assert_eq!((last.data.len(), last.last), (0, true));
    }

    #[test]
    fn invalid_xfer_replies() {
        assert!(matches!(
            REQ.parse_reply(Reply::Data(b"m".to_vec())),
            Err(TargetError::Protocol(_))
        ));
        assert!(matches!(
            REQ.parse_reply(Reply::Data(b"x<target>".to_vec())),
            Err(TargetError::Protocol(_))
        ));
        assert!(matches!(
            REQ.parse_reply(Reply::Unsupported),
            Err(TargetError::Unsupported(_))
        ));
        assert!(matches!(
            REQ.parse_reply(Reply::Error(0)),
            Err(TargetError::Refused { .. })
        ));
        assert!(matches!(
            REQ.parse_reply(Reply::Ok),
            Err(TargetError::Protocol(_))
        ));
    }
}
