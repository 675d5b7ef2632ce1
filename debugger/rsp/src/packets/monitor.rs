//! `qRcmd,HEX` runs a monitor command. The server may send console output as `O HEX` packets
//! before the final reply, which is `OK`, the output itself as hex, or an error code.

use memlife_core::{Result, TargetError};

use crate::packet::{Reply, from_hex, to_hex};

/// A monitor command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Monitor<'a> {
    /// The command as a user types it after `monitor`.
    pub command: &'a str,
}

/// One packet received after a `qRcmd`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MonitorReply {
    /// `O HEX`: console output; more follows.
    Output(Vec<u8>),
    /// The final reply, with its output (empty for `OK`).
    Done(Vec<u8>),
}

impl Monitor<'_> {
    /// The request.
    pub fn encode(&self) -> Vec<u8> {
        format!("qRcmd,{}", to_hex(self.command.as_bytes())).into_bytes()
    }

    /// One packet of the answer.
    pub fn parse_reply(&self, data: Vec<u8>) -> Result<MonitorReply> {
        if let [b'O', hex @ ..] = data.as_slice()
            && !hex.is_empty()
            && data != b"OK"
        {
            return Ok(MonitorReply::Output(from_hex(hex)?));
        }
        match Reply::parse(data) {
            Reply::Ok => Ok(MonitorReply::Done(Vec::new())),
            Reply::Unsupported => Err(TargetError::Unsupported("monitor commands")),
            Reply::Error(code) => Err(TargetError::Refused {
                request: "qRcmd",
                code,
            }),
            Reply::Data(d) => Ok(MonitorReply::Done(from_hex(&d)?)),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const RESET: Monitor<'static> = Monitor {
        command: "reset halt",
    };

    #[test]
    fn output_then_ok() {
        assert_eq!(RESET.encode(), b"qRcmd,72657365742068616c74");
        assert_eq!(
            RESET.parse_reply(b"O48690a".to_vec()).unwrap(),
            MonitorReply::Output(b"Hi\n".to_vec())
        );
        assert_eq!(
            RESET.parse_reply(b"OK".to_vec()).unwrap(),
            MonitorReply::Done(Vec::new())
        );
        assert_eq!(
            RESET.parse_reply(b"6f6b0a".to_vec()).unwrap(),
            MonitorReply::Done(b"ok\n".to_vec())
        );
    }

    #[test]
    fn invalid_monitor_replies() {
        assert!(matches!(
            RESET.parse_reply(Vec::new()),
            Err(TargetError::Unsupported(_))
        ));
        assert!(matches!(
            RESET.parse_reply(b"E01".to_vec()),
            Err(TargetError::Refused {
                request: "qRcmd",
                code: 1
            })
        ));
        for bad in [&b"O4"[..], b"Ozz", b"abc", b"not hex"] {
            assert!(
                matches!(
                    RESET.parse_reply(bad.to_vec()),
                    Err(TargetError::Protocol(_))
                ),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
