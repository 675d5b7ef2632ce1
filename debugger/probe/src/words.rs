//! Word-sized transfers: every read goes out as aligned 32-bit accesses.
//!
//! A byte transfer costs a probe round trip per byte on most probes (several times slower than
//! words), and some memories (ESP32 instruction RAM, peripheral registers) fault on byte
//! access. So a read of any length at any address is widened to the aligned words that cover it,
//! read with `read_32`, and the requested bytes are cut out. The widening stays within the first
//! and last word, so it cannot cross into another memory region.

/// The aligned words that cover a byte range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Address of the first word.
    pub start: u64,
    /// How many words.
    pub words: usize,
    /// Where the range starts in the first word.
    pub offset: usize,
}

/// The aligned words covering `len` bytes at `addr`.
pub fn window(addr: u64, len: usize) -> Window {
    let start = addr & !3;
    let offset = (addr - start) as usize;
    let words = (offset + len).div_ceil(4);
    Window {
        start,
        words,
        offset,
    }
}

/// Copies the bytes of a window out of little-endian words.
pub fn cut(words: &[u32], offset: usize, out: &mut [u8]) {
    let bytes = words.iter().flat_map(|w| w.to_le_bytes());
    for (dst, src) in out.iter_mut().zip(bytes.skip(offset)) {
        *dst = src;
    }
}

/// Splits a write into an unaligned head, aligned words, and an unaligned tail (byte writes only
/// where the range does not cover whole words): (head, words, tail) as (address, bytes).
pub fn split_write(addr: u64, data: &[u8]) -> [(u64, &[u8]); 3] {
    let head_len = (((4 - (addr % 4)) % 4) as usize).min(data.len());
    let (head, rest) = data.split_at(head_len);
    let body_len = rest.len() / 4 * 4;
    let (body, tail) = rest.split_at(body_len);
    let body_addr = addr + head_len as u64;
    [
        (addr, head),
        (body_addr, body),
        (body_addr + body_len as u64, tail),
    ]
}

/// Little-endian words of an aligned, whole-word byte slice.
pub fn to_words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(start: u64, words: usize, offset: usize) -> Window {
        Window {
            start,
            words,
            offset,
        }
    }

    #[test]
    fn aligned_window() {
        assert_eq!(window(0x2000_0000, 8), w(0x2000_0000, 2, 0));
        assert_eq!(window(0x2000_0000, 0), w(0x2000_0000, 0, 0));
    }

    #[test]
    fn unaligned_window_widens_both_ends() {
        // 0x..03 + 2 bytes touches the first and the second word.
        assert_eq!(window(0x2000_0003, 2), w(0x2000_0000, 2, 3));
        assert_eq!(window(0x2000_0001, 1), w(0x2000_0000, 1, 1));
        assert_eq!(window(0x2000_0002, 7), w(0x2000_0000, 3, 2));
    }

    #[test]
    fn cut_out_the_bytes() {
        let words = [0x4433_2211, 0x8877_6655];
        let mut out = [0u8; 3];
        cut(&words, 3, &mut out);
        assert_eq!(out, [0x44, 0x55, 0x66]);
    }

    #[test]
    fn write_split() {
        let data = [1, 2, 3, 4, 5, 6, 7, 8, 9];
        let [h, b, t] = split_write(0x2000_0002, &data);
        assert_eq!(h, (0x2000_0002, &data[..2]));
        assert_eq!(b, (0x2000_0004, &data[2..6]));
        assert_eq!(t, (0x2000_0008, &data[6..]));
        let [h, b, t] = split_write(0x2000_0000, &data[..8]);
        assert!(h.1.is_empty() && t.1.is_empty());
        assert_eq!(b.1.len(), 8);
        // Shorter than the head.
        let [h, b, t] = split_write(0x2000_0001, &data[..2]);
        assert_eq!((h.1.len(), b.1.len(), t.1.len()), (2, 0, 0));
        assert_eq!(to_words(&data[..8]), [0x0403_0201, 0x0807_0605]);
    }
}
