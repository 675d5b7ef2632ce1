//! Packet framing: `$data#cs`, escaping, run-length decoding, replies and hex helpers.
//!
//! Parsing never touches the socket: [`find_frame`] locates a complete frame in a byte buffer and
//! [`decode_frame`] checks and unpacks it, so every rule is unit-tested on plain bytes. Escaping
//! is applied to everything we send (`$ # } *` become `}` and the byte xor 0x20), which is what
//! binary packets need and is harmless for text ones, since text commands never contain them.

use memlife_core::TargetError;

/// Escape byte: the next byte is xor 0x20.
pub const ESCAPE: u8 = b'}';
/// Run-length marker: repeat the previous byte `count - 29` more times.
pub const RLE: u8 = b'*';
/// The out-of-band interrupt byte (Ctrl-C).
pub const INTERRUPT: u8 = 0x03;
/// Largest frame we accept, so a broken peer cannot make us buffer without bound.
pub const MAX_FRAME: usize = 1 << 20;

/// A framing error: the bytes are not a valid packet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PacketError {
    /// The frame does not start with `$`.
    #[error("packet does not start with '$'")]
    MissingStart,
    /// The frame ends before `#xx`.
    #[error("packet is truncated")]
    Truncated,
    /// The checksum digits are not hex.
    #[error("packet checksum is not hex")]
    BadChecksumHex,
    /// The checksum does not match the data.
    #[error("packet checksum mismatch: computed {computed:#04x}, sent {sent:#04x}")]
    BadChecksum {
        /// Sum of the data bytes modulo 256.
        computed: u8,
        /// What the peer sent.
        sent: u8,
    },
    /// An escape byte with nothing after it.
    #[error("packet ends inside an escape")]
    BadEscape,
    /// A run-length marker without a previous byte or with an invalid count.
    #[error("invalid run-length encoding at offset {0}")]
    BadRle(usize),
    /// Hex text with a non-hex digit or an odd length.
    #[error("invalid hex in packet: {0:?}")]
    BadHex(String),
    /// The frame is larger than [`MAX_FRAME`].
    #[error("packet longer than {MAX_FRAME} bytes")]
    TooLong,
}

impl From<PacketError> for TargetError {
    fn from(e: PacketError) -> Self {
        TargetError::Protocol(e.to_string())
    }
}

/// Sum of the bytes modulo 256, as the protocol's checksum.
pub fn checksum(data: &[u8]) -> u8 {
    data.iter().fold(0u8, |acc, &b| acc.wrapping_add(b))
}

/// Frames `data` as `$escaped#cs`.
pub fn encode(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 4);
    out.push(b'$');
    for &b in data {
        if matches!(b, b'$' | b'#' | ESCAPE | RLE) {
            out.push(ESCAPE);
            out.push(b ^ 0x20);
        } else {
            out.push(b);
        }
    }
    let cs = checksum(&out[1..]);
    out.push(b'#');
    out.extend_from_slice(&hex_byte(cs));
    out
}

/// Where the next complete frame sits in `buf`: `Some((start, end))` with `buf[start] == b'$'`
/// and `end` one past the second checksum digit; `None` when more bytes are needed.
pub fn find_frame(buf: &[u8]) -> Option<(usize, usize)> {
    let start = buf.iter().position(|&b| b == b'$')?;
    let hash = start + buf[start..].iter().position(|&b| b == b'#')?;
    let end = hash + 3;
    (end <= buf.len()).then_some((start, end))
}

/// Checks the checksum of a complete `$...#cs` frame and returns the unescaped, run-length
/// expanded payload.
pub fn decode_frame(frame: &[u8]) -> Result<Vec<u8>, PacketError> {
    if frame.len() > MAX_FRAME {
        return Err(PacketError::TooLong);
    }
    let body = frame.strip_prefix(b"$").ok_or(PacketError::MissingStart)?;
    let hash = body
        .iter()
        .position(|&b| b == b'#')
        .ok_or(PacketError::Truncated)?;
    let (raw, tail) = body.split_at(hash);
    let [b'#', hi, lo] = *tail else {
        return Err(PacketError::Truncated);
    };
    let sent = parse_hex_byte(hi, lo).ok_or(PacketError::BadChecksumHex)?;
    let computed = checksum(raw);
    if sent != computed {
        return Err(PacketError::BadChecksum { computed, sent });
    }
    unpack(raw)
}

/// Undoes escaping and run-length encoding of a frame's payload.
pub fn unpack(raw: &[u8]) -> Result<Vec<u8>, PacketError> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    // `i < raw.len()` holds at every turn, so `i + 1` and `i + 2` cannot overflow.
    while let Some(&byte) = raw.get(i) {
        match byte {
            ESCAPE => {
                let b = raw.get(i + 1).ok_or(PacketError::BadEscape)?;
                out.push(b ^ 0x20);
                i += 2;
            }
            RLE => {
                let prev = *out.last().ok_or(PacketError::BadRle(i))?;
                let count = *raw.get(i + 1).ok_or(PacketError::BadRle(i))?;
                // Counts are printable characters; '#' and '$' are forbidden by the protocol.
                if !(b' '..=b'~').contains(&count) || count == b'#' || count == b'$' {
                    return Err(PacketError::BadRle(i));
                }
                // count >= b' ' (32), checked just above.
                let n = usize::from(count - 29);
                if out.len() + n > MAX_FRAME {
                    return Err(PacketError::TooLong);
                }
                out.extend(std::iter::repeat_n(prev, n));
                i += 2;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// A reply sorted into the three shapes every request can get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `OK`.
    Ok,
    /// The empty reply: the server does not support the request.
    Unsupported,
    /// `Exx` (or `E.text`, reported as code 0).
    Error(u8),
    /// Anything else.
    Data(Vec<u8>),
}

impl Reply {
    /// Classifies a decoded payload.
    pub fn parse(data: Vec<u8>) -> Reply {
        match data.as_slice() {
            b"" => Reply::Unsupported,
            b"OK" => Reply::Ok,
            [b'E', hi, lo] => match parse_hex_byte(*hi, *lo) {
                Some(code) => Reply::Error(code),
                None => Reply::Data(data),
            },
            [b'E', b'.', ..] => Reply::Error(0),
            _ => Reply::Data(data),
        }
    }
}

/// Two lowercase hex digits of a byte.
pub fn hex_byte(b: u8) -> [u8; 2] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0xf)]]
}

/// Lowercase hex of some bytes.
pub fn to_hex(data: &[u8]) -> String {
    let mut s = String::with_capacity(data.len() * 2);
    for &b in data {
        let [h, l] = hex_byte(b);
        s.push(char::from(h));
        s.push(char::from(l));
    }
    s
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn parse_hex_byte(hi: u8, lo: u8) -> Option<u8> {
    Some(hex_digit(hi)? << 4 | hex_digit(lo)?)
}

fn bad_hex(text: &[u8]) -> PacketError {
    let shown = &text[..text.len().min(32)];
    PacketError::BadHex(String::from_utf8_lossy(shown).into_owned())
}

/// Decodes hex text into bytes (even length, any case).
pub fn from_hex(text: &[u8]) -> Result<Vec<u8>, PacketError> {
    if !text.len().is_multiple_of(2) {
        return Err(bad_hex(text));
    }
    text.chunks_exact(2)
        .map(|p| parse_hex_byte(p[0], p[1]).ok_or_else(|| bad_hex(text)))
        .collect()
}

/// Parses a big-endian hex number such as an address in `watch:20000004` (1 to 16 digits).
pub fn parse_hex_u64(text: &[u8]) -> Result<u64, PacketError> {
    if text.is_empty() || text.len() > 16 {
        return Err(bad_hex(text));
    }
    text.iter().try_fold(0u64, |acc, &c| {
        hex_digit(c)
            .map(|d| acc << 4 | u64::from(d))
            .ok_or_else(|| bad_hex(text))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn encodes_with_checksum_and_escapes() {
        assert_eq!(encode(b"g"), b"$g#67");
        assert_eq!(encode(b"qSupported"), b"$qSupported#37");
        assert_eq!(encode(b""), b"$#00");
        // '$' '#' '}' '*' are escaped, checksum over the escaped bytes.
        let framed = encode(b"a$#}*");
        assert_eq!(&framed[..10], b"$a}\x04}\x03}\x5d}\x0a");
        assert_eq!(decode_frame(&framed).unwrap(), b"a$#}*");
    }

    #[test]
    fn valid_frame_with_escape_and_rle() {
        // "0* " = '0' plus 3 more ('\x20' - 29 = 3).
        let raw = b"0* }\x5dx";
        let mut frame = vec![b'$'];
        frame.extend_from_slice(raw);
        frame.push(b'#');
        frame.extend_from_slice(&hex_byte(checksum(raw)));
        assert_eq!(decode_frame(&frame).unwrap(), b"0000}x");
    }

    #[test]
    fn binary_round_trip() {
        let data: Vec<u8> = (0..=255).collect();
        assert_eq!(decode_frame(&encode(&data)).unwrap(), data);
    }

    #[test]
    fn invalid_bad_checksum() {
        assert_eq!(
            decode_frame(b"$g#00"),
            Err(PacketError::BadChecksum {
                computed: 0x67,
                sent: 0
            })
        );
    }

    #[test]
    fn invalid_checksum_not_hex() {
        assert_eq!(decode_frame(b"$g#zz"), Err(PacketError::BadChecksumHex));
    }

    #[test]
    fn invalid_truncated() {
        assert_eq!(decode_frame(b"$g#6"), Err(PacketError::Truncated));
        assert_eq!(decode_frame(b"$g"), Err(PacketError::Truncated));
        assert_eq!(decode_frame(b"$g#677"), Err(PacketError::Truncated));
    }

    #[test]
    fn invalid_missing_start() {
        assert_eq!(decode_frame(b"g#67"), Err(PacketError::MissingStart));
    }

    #[test]
    fn invalid_escape_at_end() {
        assert_eq!(unpack(b"ab}"), Err(PacketError::BadEscape));
    }

    #[test]
    fn invalid_rle_without_previous_byte() {
        assert_eq!(unpack(b"* "), Err(PacketError::BadRle(0)));
    }

    #[test]
    fn invalid_rle_missing_count() {
        assert_eq!(unpack(b"0*"), Err(PacketError::BadRle(1)));
    }

    #[test]
    fn invalid_rle_forbidden_counts() {
        assert_eq!(unpack(b"0*#"), Err(PacketError::BadRle(1)));
        assert_eq!(unpack(b"0*$"), Err(PacketError::BadRle(1)));
        assert_eq!(unpack(b"0*\x01"), Err(PacketError::BadRle(1)));
        assert_eq!(unpack(b"0*\x7f"), Err(PacketError::BadRle(1)));
    }

    #[test]
    fn invalid_too_long() {
        let mut big = vec![b'$'; MAX_FRAME + 1];
        big[0] = b'$';
        assert_eq!(decode_frame(&big), Err(PacketError::TooLong));
    }

    #[test]
    fn finds_frames_in_a_stream() {
        assert_eq!(find_frame(b"+$OK#9a$x"), Some((1, 7)));
        assert_eq!(find_frame(b"+$OK#9"), None);
        assert_eq!(find_frame(b"+++"), None);
    }

    #[test]
    fn replies() {
        assert_eq!(Reply::parse(b"OK".to_vec()), Reply::Ok);
        assert_eq!(Reply::parse(Vec::new()), Reply::Unsupported);
        assert_eq!(Reply::parse(b"E14".to_vec()), Reply::Error(0x14));
        assert_eq!(Reply::parse(b"E.nope".to_vec()), Reply::Error(0));
        assert_eq!(Reply::parse(b"EX1".to_vec()), Reply::Data(b"EX1".to_vec()));
        assert_eq!(
            Reply::parse(b"00ff".to_vec()),
            Reply::Data(b"00ff".to_vec())
        );
    }

    #[test]
    fn hex_helpers() {
        assert_eq!(to_hex(&[0, 0xab, 0x10]), "00ab10");
        assert_eq!(from_hex(b"00AB10").unwrap(), vec![0, 0xab, 0x10]);
        assert_eq!(parse_hex_u64(b"20000004").unwrap(), 0x2000_0004);
        assert_eq!(parse_hex_u64(b"ffffffffffffffff").unwrap(), u64::MAX);
    }

    #[test]
    fn invalid_hex() {
        assert!(from_hex(b"abc").is_err());
        assert!(from_hex(b"zz").is_err());
        assert!(parse_hex_u64(b"").is_err());
        assert!(parse_hex_u64(b"12g4").is_err());
        assert!(parse_hex_u64(b"11112222333344445").is_err());
    }
}
