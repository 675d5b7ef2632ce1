//! `qSupported`: what memlife offers and what the server announces.

use crate::packet::parse_hex_u64;

/// The request, with the features gdb for ARM announces.
pub const QSUPPORTED: &[u8] =
    b"qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+;xmlRegisters=arm";

/// What the server said it supports (`qSupported`, `vCont?` and the QEMU probe).
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
    /// Parses a `qSupported` reply: `name+`, `name-`, `name=value` separated by `;`. Unknown
    /// features are ignored; a `PacketSize` that is not hex is treated as absent.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qemu_reply() {
        let f =
            Features::parse(b"PacketSize=1000;qXfer:features:read+;vContSupported+;multiprocess+");
        assert_eq!(f.packet_size, Some(0x1000));
        assert!(f.xfer_features && f.multiprocess);
        assert!(!f.no_ack);
    }

    #[test]
    fn invalid_features_are_absent() {
        let f = Features::parse(b"PacketSize=zz;QStartNoAckMode+;qXfer:features:read-");
        assert_eq!(f.packet_size, None);
        assert!(f.no_ack && !f.xfer_features);
        assert_eq!(Features::parse(b""), Features::default());
        assert_eq!(Features::parse(b";;;"), Features::default());
        assert_eq!(Features::parse(b"PacketSize=").packet_size, None);
        assert_eq!(
            Features::parse(b"PacketSize=11112222333344445").packet_size,
            None
        );
        assert!(!Features::parse(b"QStartNoAckMode").no_ack, "no `+`");
        assert!(!Features::parse(b"xqXfer:features:read+").xfer_features);
    }
}
