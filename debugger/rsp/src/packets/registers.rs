//! `g` reads every register, `G` writes them all, `p n` reads one, `P n=value` writes one. Values
//! are in target byte order, as hex.

use memlife_core::Result;

use super::{expect_data, expect_ok, unexpected};
use crate::packet::{Reply, from_hex, to_hex};

/// `g`: every register the server puts in its `g` image.
pub const READ_REGISTERS: &[u8] = b"g";

/// The bytes of a `g` reply (not empty: a core has registers).
pub fn parse_read_registers(reply: Reply) -> Result<Vec<u8>> {
    let image = from_hex(&expect_data(reply, "g")?)?;
    if image.is_empty() {
        return Err(unexpected("g", b""));
    }
    Ok(image)
}

/// `G`: the whole register image.
pub fn write_registers(image: &[u8]) -> Vec<u8> {
    format!("G{}", to_hex(image)).into_bytes()
}

/// The reply to `G`: `OK`.
pub fn parse_write_registers(reply: Reply) -> Result<()> {
    expect_ok(reply, "G")
}

/// `p`: one register by its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadRegister {
    /// GDB register number.
    pub regnum: u32,
}

impl ReadRegister {
    /// The request.
    pub fn encode(&self) -> Vec<u8> {
        format!("p{:x}", self.regnum).into_bytes()
    }

    /// The register's bytes (at least one).
    pub fn parse_reply(&self, reply: Reply) -> Result<Vec<u8>> {
        let bytes = from_hex(&expect_data(reply, "p")?)?;
        if bytes.is_empty() {
            return Err(unexpected("p", b""));
        }
        Ok(bytes)
    }
}

/// `P`: one register by its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteRegister<'a> {
    /// GDB register number.
    pub regnum: u32,
    /// The value in target byte order.
    pub value: &'a [u8],
}

/// What a server did with a `P`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// `OK`.
    Done,
    /// The empty reply: the server has no `P` (write the whole `g` image with `G` instead).
    NoSinglePacket,
}

impl WriteRegister<'_> {
    /// The request.
    pub fn encode(&self) -> Vec<u8> {
        format!("P{:x}={}", self.regnum, to_hex(self.value)).into_bytes()
    }

    /// `OK`, or the empty reply of a server without `P`.
    pub fn parse_reply(&self, reply: Reply) -> Result<Written> {
        match reply {
            Reply::Unsupported => Ok(Written::NoSinglePacket),
            other => expect_ok(other, "P").map(|()| Written::Done),
        }
    }
}

/// A little-endian register value (the first 8 bytes: wider registers are not read as numbers).
pub fn decode_le(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .take(8)
        .rev()
        .fold(0u64, |acc, &b| acc << 8 | u64::from(b))
}

/// `value` as `size` little-endian bytes (zero above the 8th).
pub fn encode_le(value: u64, size: usize) -> Vec<u8> {
    (0..size)
        .map(|i| if i < 8 { (value >> (8 * i)) as u8 } else { 0 })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use memlife_core::TargetError;

    use super::*;
    use crate::packets::data;

    #[test]
    fn read_all_registers() {
        assert_eq!(READ_REGISTERS, b"g");
        assert_eq!(
            parse_read_registers(data("3c000008")).unwrap(),
            [0x3c, 0, 0, 8]
        );
    }

    #[test]
    fn invalid_read_all_registers() {
        assert!(matches!(
            parse_read_registers(data("3c0")),
            Err(TargetError::Protocol(_))
        ));
        assert!(matches!(
            parse_read_registers(data("xx")),
            Err(TargetError::Protocol(_))
        ));
        assert!(matches!(
            parse_read_registers(Reply::Ok),
            Err(TargetError::Protocol(_))
        ));
        assert!(matches!(
            parse_read_registers(Reply::Error(1)),
            Err(TargetError::Refused { request: "g", .. })
        ));
        assert!(matches!(
            parse_read_registers(Reply::Unsupported),
            Err(TargetError::Unsupported("g"))
        ));
    }

    #[test]
    fn write_all_registers() {
        assert_eq!(write_registers(&[1, 0xff]), b"G01ff");
        assert!(parse_write_registers(Reply::Ok).is_ok());
        assert!(parse_write_registers(Reply::Error(0x16)).is_err());
        assert!(parse_write_registers(data("OKAY")).is_err());
    }

    #[test]
    fn one_register() {
        let p = ReadRegister { regnum: 25 };
        assert_eq!(p.encode(), b"p19");
        assert_eq!(
            decode_le(&p.parse_reply(data("00000041")).unwrap()),
            0x4100_0000
        );
        assert!(matches!(
            p.parse_reply(Reply::Unsupported),
            Err(TargetError::Unsupported("p"))
        ));
        assert!(matches!(
            p.parse_reply(Reply::Error(0)),
            Err(TargetError::Refused { .. })
        ));
        assert!(matches!(
            p.parse_reply(data("0")),
            Err(TargetError::Protocol(_))
        ));
        assert!(matches!(
            p.parse_reply(Reply::Ok),
            Err(TargetError::Protocol(_))
        ));
    }

    #[test]
    fn write_one_register() {
        let value = encode_le(0x0800_0101, 4);
        let w = WriteRegister {
            regnum: 15,
            value: &value,
        };
        assert_eq!(w.encode(), b"Pf=01010008");
        assert_eq!(w.parse_reply(Reply::Ok).unwrap(), Written::Done);
        assert_eq!(
            w.parse_reply(Reply::Unsupported).unwrap(),
            Written::NoSinglePacket
        );
        assert!(matches!(
            w.parse_reply(Reply::Error(1)),
            Err(TargetError::Refused { .. })
        ));
        assert!(matches!(
            w.parse_reply(data("01")),
            Err(TargetError::Protocol(_))
        ));
    }

    #[test]
    fn little_endian_values() {
        assert_eq!(decode_le(&[0x78, 0x56, 0x34, 0x12]), 0x1234_5678);
        assert_eq!(
            decode_le(&[1; 12]),
            0x0101_0101_0101_0101,
            "only 8 bytes count"
        );
        assert_eq!(decode_le(&[]), 0);
        assert_eq!(encode_le(0x1234, 4), [0x34, 0x12, 0, 0]);
        assert_eq!(encode_le(u64::MAX, 10)[8..], [0, 0]);
    }
}
