//! Stop replies (`S`, `T`, `W`, `X`) and console output (`O`).
//!
//! The reply to `?`, `c`, `s` and `vCont`. This module only parses; turning a stop into a
//! [`memlife_core::StopReason`] needs the client's state (inserted breakpoints, whether it
//! stepped or interrupted) and happens there.

use memlife_core::WatchKind;

use crate::packet::{PacketError, from_hex, parse_hex_u64};

/// GDB's SIGINT: what a server reports after an interrupt.
pub const SIGINT: u8 = 2;

/// A parsed stop reply or notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopPacket {
    /// `S xx` or `T xx ...`: the core stopped with this signal.
    Stopped(Stop),
    /// `W xx`: the program exited with this status.
    Exited(u8),
    /// `X xx`: the program was terminated by this signal.
    Terminated(u8),
    /// `O hex`: console output from the target while it runs.
    Output(Vec<u8>),
    /// `F call,args`: a File-I/O request (a semihosting call the server forwards).
    FileIo(super::fileio::FileIo),
}

/// The details of an `S`/`T` stop.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stop {
    /// GDB signal number.
    pub signal: u8,
    /// `watch:`, `rwatch:` or `awatch:` with the data address.
    pub watch: Option<(WatchKind, u64)>,
    /// `swbreak:` was present.
    pub swbreak: bool,
    /// `hwbreak:` was present.
    pub hwbreak: bool,
    /// `n:r` register values (number, raw target-order bytes).
    pub registers: Vec<(u32, Vec<u8>)>,
}

fn signal(text: &[u8]) -> Result<u8, PacketError> {
    match text.get(..2) {
        // Two hex digits decode to exactly one byte.
        Some(hex) => from_hex(hex)?
            .first()
            .copied()
            .ok_or_else(|| PacketError::BadHex(String::from_utf8_lossy(text).into_owned())),
        None => Err(PacketError::BadHex(
            String::from_utf8_lossy(text).into_owned(),
        )),
    }
}

/// Whether a packet is a stop reply (`S05`, `T05...`, `W00`, `X09`) rather than the answer to a
/// request (a server may announce a stop before answering).
pub fn is_stop_reply(data: &[u8]) -> bool {
    matches!(data, [b'S' | b'T' | b'W' | b'X', a, b, ..] if a.is_ascii_hexdigit() && b.is_ascii_hexdigit())
}

/// Parses a stop reply or an `O` notification.
pub fn parse(data: &[u8]) -> Result<StopPacket, PacketError> {
    let bad = || PacketError::BadHex(String::from_utf8_lossy(&data[..data.len().min(32)]).into());
    let (&kind, rest) = data.split_first().ok_or_else(bad)?;
    match kind {
        b'S' if rest.len() == 2 => Ok(StopPacket::Stopped(Stop {
            signal: signal(rest)?,
            ..Stop::default()
        })),
        b'T' => {
            let mut stop = Stop {
                signal: signal(rest)?,
                ..Stop::default()
            };
            // `signal` read the first two bytes, so they exist.
            for pair in rest
                .get(2..)
                .unwrap_or_default()
                .split(|&b| b == b';')
                .filter(|p| !p.is_empty())
            {
                let colon = pair.iter().position(|&b| b == b':').ok_or_else(bad)?;
                let (key, value) = (&pair[..colon], &pair[colon + 1..]);
                match key {
                    b"watch" => stop.watch = Some((WatchKind::Write, parse_hex_u64(value)?)),
                    b"rwatch" => stop.watch = Some((WatchKind::Read, parse_hex_u64(value)?)),
                    b"awatch" => stop.watch = Some((WatchKind::Access, parse_hex_u64(value)?)),
                    b"swbreak" => stop.swbreak = true,
                    b"hwbreak" => stop.hwbreak = true,
                    k if k.iter().all(u8::is_ascii_hexdigit) => {
                        let n = u32::try_from(parse_hex_u64(k)?).map_err(|_| bad())?;
                        stop.registers.push((n, from_hex(value)?));
                    }
                    // thread:, core:, library:, and whatever comes later.
                    _ => {}
                }
            }
            Ok(StopPacket::Stopped(stop))
        }
        b'W' => Ok(StopPacket::Exited(signal(rest)?)),
        b'X' => Ok(StopPacket::Terminated(signal(rest)?)),
        b'O' => Ok(StopPacket::Output(from_hex(rest)?)),
        b'F' => Ok(StopPacket::FileIo(super::fileio::parse(rest)?)),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    fn stopped(data: &[u8]) -> Stop {
        match parse(data).unwrap() {
            StopPacket::Stopped(s) => s,
            other => panic!("not a stop: {other:?}"),
        }
    }

    #[test]
    fn qemu_breakpoint_and_watch() {
        let s = stopped(b"T05thread:p01.01;");
        assert_eq!(s.signal, 5);
        assert_eq!(s.watch, None);
        let s = stopped(b"T05thread:p01.01;watch:20000004;");
        assert_eq!(s.watch, Some((WatchKind::Write, 0x2000_0004)));
        let s = stopped(b"T05thread:01;rwatch:8;");
        assert_eq!(s.watch, Some((WatchKind::Read, 8)));
        let s = stopped(b"T05awatch:10;");
        assert_eq!(s.watch, Some((WatchKind::Access, 0x10)));
    }

    #[test]
    fn registers_and_flags() {
        let s = stopped(b"T050f:3c000008;0d:00000220;swbreak:;hwbreak:;core:0;");
        assert!(s.swbreak && s.hwbreak);
        assert_eq!(
            s.registers,
            vec![(15, vec![0x3c, 0, 0, 8]), (13, vec![0, 0, 2, 0x20])]
        );
    }

    #[test]
    fn short_forms() {
        assert_eq!(stopped(b"S02").signal, 2);
        assert_eq!(parse(b"W00").unwrap(), StopPacket::Exited(0));
        assert_eq!(parse(b"W01;process:1").unwrap(), StopPacket::Exited(1));
        assert_eq!(parse(b"X09").unwrap(), StopPacket::Terminated(9));
        assert_eq!(
            parse(b"O48690a").unwrap(),
            StopPacket::Output(b"Hi\n".to_vec())
        );
    }

    #[test]
    fn recognises_stop_replies() {
        assert!(is_stop_reply(b"T02thread:p01.01;"));
        assert!(is_stop_reply(b"S05"));
        assert!(is_stop_reply(b"W00"));
        assert!(!is_stop_reply(b"PacketSize=1000;qXfer:features:read+"));
        assert!(!is_stop_reply(b"T"));
        assert!(!is_stop_reply(b"Tzz"));
        assert!(!is_stop_reply(b"OK"));
    }

    #[test]
    fn invalid_stop_replies() {
        assert!(parse(b"").is_err());
        assert!(parse(b"OK").is_err());
        assert!(parse(b"S").is_err());
        assert!(parse(b"S0").is_err());
        assert!(parse(b"S0x").is_err());
        assert!(parse(b"S0505").is_err());
        assert!(parse(b"T").is_err());
        assert!(parse(b"T05watch:zz;").is_err());
        assert!(parse(b"T05garbage;").is_err());
        assert!(parse(b"T050f:3c00000;").is_err());
        assert!(parse(b"W").is_err());
        assert!(parse(b"O4").is_err());
        assert!(parse(b"Q05").is_err());
    }
}
