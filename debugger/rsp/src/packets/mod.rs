//! One module per kind of packet the client sends: how the request is written and how its reply
//! is read, as gdbstub does it with one parser per packet. Nothing here touches a socket, so every
//! rule is unit-tested on plain bytes: one valid exchange and the ways a server can get it wrong.
//!
//! A reply is first sorted by [`Reply::parse`] (`OK`, empty, `Exx`, data); each packet then says
//! what its reply must be and turns anything else into a [`TargetError`] that names the packet.
//!
//! # Layout
//! - [`memory`]: `m` and `M`.
//! - [`registers`]: `g`, `G`, `p`, `P`.
//! - [`breakpoints`]: `Z` and `z` for breakpoints and watchpoints.
//! - [`resume`]: `c`, `s`, `vCont`, `vCont?`.
//! - [`stop`]: stop replies (`S`, `T`, `W`, `X`) and console output (`O`).
//! - [`supported`]: `qSupported` and the features it announces.
//! - [`xfer`]: `qXfer:features:read` (target descriptions).
//! - [`monitor`]: `qRcmd` (monitor commands) and their console output.
//! - [`fileio`]: File-I/O requests (the firmware's semihosting calls) and the policy for them.
//! - here: the packets without arguments: `?`, `QStartNoAckMode`, `qqemu.sstepbits`, `D`, `k`.

pub mod breakpoints;
pub mod fileio;
pub mod memory;
pub mod monitor;
pub mod registers;
pub mod resume;
pub mod stop;
pub mod supported;
pub mod xfer;

use memlife_core::{Result, TargetError};

use crate::packet::Reply;

/// A reply that must be `OK` to the request named `what`.
pub(crate) fn expect_ok(reply: Reply, what: &'static str) -> Result<()> {
    match reply {
        Reply::Ok => Ok(()),
        Reply::Unsupported => Err(TargetError::Unsupported(what)),
        Reply::Error(code) => Err(TargetError::Refused {
            request: what,
            code,
        }),
        Reply::Data(d) => Err(unexpected(what, &d)),
    }
}

/// A reply that must carry data, to the request named `what`.
pub(crate) fn expect_data(reply: Reply, what: &'static str) -> Result<Vec<u8>> {
    match reply {
        Reply::Data(d) => Ok(d),
        Reply::Ok => Err(TargetError::Protocol(format!("unexpected OK to {what}"))),
        Reply::Unsupported => Err(TargetError::Unsupported(what)),
        Reply::Error(code) => Err(TargetError::Refused {
            request: what,
            code,
        }),
    }
}

/// A reply that is not what `what` gets, quoted (the start of it) in the error.
pub(crate) fn unexpected(what: &str, data: &[u8]) -> TargetError {
    TargetError::Protocol(format!(
        "unexpected reply to {what}: {:?}",
        String::from_utf8_lossy(&data[..data.len().min(40)])
    ))
}

/// A data reply, for tests.
#[cfg(test)]
pub(crate) fn data(text: &str) -> Reply {
    Reply::Data(text.as_bytes().to_vec())
}

/// `?`: why the target is halted (answered with a stop reply).
pub const STATUS: &[u8] = b"?";
/// `QStartNoAckMode`: no `+`/`-` from here on (answered `OK`).
pub const START_NO_ACK_MODE: &[u8] = b"QStartNoAckMode";
/// `k`: kill the target (no reply is promised).
pub const KILL: &[u8] = b"k";

/// `qqemu.sstepbits`, a query only QEMU's gdbstub answers: whether the server is QEMU.
pub const QEMU_PROBE: &[u8] = b"qqemu.sstepbits";

/// Whether the reply to [`QEMU_PROBE`] comes from QEMU (`ENABLE=...`).
pub fn is_qemu(reply: &Reply) -> bool {
    matches!(reply, Reply::Data(d) if d.starts_with(b"ENABLE="))
}

/// `D` (or `D;1` when the server speaks the multiprocess extensions, which name the process;
/// QEMU's only process is 1): detach, the target runs on. Answered `OK`.
pub fn detach(multiprocess: bool) -> &'static [u8] {
    if multiprocess { b"D;1" } else { b"D" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ok_replies() {
        assert!(expect_ok(Reply::Ok, "Z0").is_ok());
        assert!(matches!(
            expect_ok(Reply::Unsupported, "Z0"),
            Err(TargetError::Unsupported("Z0"))
        ));
        assert!(matches!(
            expect_ok(Reply::Error(0x0e), "Z0"),
            Err(TargetError::Refused {
                request: "Z0",
                code: 0x0e
            })
        ));
        let err = expect_ok(Reply::Data(b"T05".to_vec()), "Z0").unwrap_err();
        assert!(err.to_string().contains("\"T05\""), "{err}");
    }

    #[test]
    fn data_replies() {
        assert_eq!(
            expect_data(Reply::Data(b"00".to_vec()), "g").ok(),
            Some(b"00".to_vec())
        );
        assert!(matches!(
            expect_data(Reply::Ok, "g"),
            Err(TargetError::Protocol(_))
        ));
        assert!(matches!(
            expect_data(Reply::Unsupported, "g"),
            Err(TargetError::Unsupported("g"))
        ));
        assert!(matches!(
            expect_data(Reply::Error(1), "g"),
            Err(TargetError::Refused { code: 1, .. })
        ));
    }

    #[test]
    fn qemu_probe_and_detach() {
        assert!(is_qemu(&Reply::Data(
            b"ENABLE=7,NOIRQ=2,NOTIMER=4".to_vec()
        )));
        assert!(!is_qemu(&Reply::Unsupported));
        assert!(!is_qemu(&Reply::Data(b"enable=7".to_vec())));
        assert!(!is_qemu(&Reply::Error(1)));
        assert_eq!(detach(true), b"D;1");
        assert_eq!(detach(false), b"D");
    }
}
