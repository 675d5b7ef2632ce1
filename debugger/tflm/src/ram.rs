//! The target memory one reading looks at: the containers (heap blocks, static variables) read
//! whole once, the ELF's constant data (a model in flash is read from the file, not the link),
//! and anything else read on demand in 1 KiB pages, up to a budget. A read the bytes cannot
//! answer gives `None`: readers treat that as data (an anomaly), never as a reason to stop.

use std::collections::HashMap;

use memlife_core::{ErrorKind, Memory, TargetError};
use memlife_dwarf::Symbols;

/// Bytes read on demand are fetched in aligned pages of this size.
const PAGE: u64 = 1024;
/// At most this many pages are read on demand in one reading (1 MiB): a flatbuffer or a
/// pointer chain cannot make a reading read the whole address space.
const PAGE_BUDGET: usize = 1024;
/// At most this many bytes of containers are read whole.
pub(crate) const CONTAINER_BUDGET: u64 = 16 << 20;

/// One range read whole.
struct Span {
    start: u64,
    bytes: Vec<u8>,
}

/// Target memory as a reading sees it (see the module doc).
pub(crate) struct Ram<'a> {
    mem: &'a mut dyn Memory,
    symbols: &'a Symbols,
    /// Sorted by start, disjoint.
    spans: Vec<Span>,
    /// Pages read on demand; `None` when the target would not give them.
    pages: HashMap<u64, Option<Vec<u8>>>,
    pages_left: usize,
}

impl<'a> Ram<'a> {
    pub(crate) fn new(mem: &'a mut dyn Memory, symbols: &'a Symbols) -> Self {
        Ram {
            mem,
            symbols,
            spans: Vec::new(),
            pages: HashMap::new(),
            pages_left: PAGE_BUDGET,
        }
    }

    /// Reads `ranges` (`(start, len)`) whole, ranges that touch merged into one read, all the
    /// reads sent together. A range the target refuses is left out (its bytes are then read on
    /// demand, or not at all); a lost link is the error.
    pub(crate) fn load(&mut self, ranges: &[(u64, u64)]) -> Result<(), TargetError> {
        let merged = merge(ranges);
        let requests: Vec<(u64, usize)> = merged
            .iter()
            .filter_map(|&(s, l)| Some((s, usize::try_from(l).ok()?)))
            .collect();
        match self.mem.read_ranges(&requests) {
            Ok(all) => {
                for ((start, _), bytes) in requests.iter().zip(all) {
                    self.spans.push(Span {
                        start: *start,
                        bytes,
                    });
                }
            }
            Err(e) if fatal(&e) => return Err(e),
            // One range the target refuses spoils the batch: read them one by one.
            Err(_) => {
                for &(start, len) in &requests {
                    match self.mem.read_vec(start, len) {
                        Ok(bytes) => self.spans.push(Span { start, bytes }),
                        Err(e) if fatal(&e) => return Err(e),
                        Err(e) => tracing::debug!("container at {start:#x} unreadable: {e}"),
                    }
                }
            }
        }
        self.spans.sort_by_key(|s| s.start);
        Ok(())
    }

    /// The bytes of `start..start+len` when one loaded range holds them all.
    pub(crate) fn loaded(&self, start: u64, len: u64) -> Option<&[u8]> {
        let i = self
            .spans
            .partition_point(|s| s.start <= start)
            .checked_sub(1)?;
        let span = self.spans.get(i)?;
        let off = usize::try_from(start - span.start).ok()?;
        span.bytes
            .get(off..off.checked_add(usize::try_from(len).ok()?)?)
    }

    /// Fills `buf` from `addr`: loaded ranges first, then the ELF's constant data, then pages
    /// read on demand.
    pub(crate) fn read(&mut self, addr: u64, buf: &mut [u8]) -> Option<()> {
        let len = buf.len() as u64;
        if let Some(b) = self.loaded(addr, len) {
            buf.copy_from_slice(b);
            return Some(());
        }
        if let Some(b) = self.constant(addr, len) {
            buf.copy_from_slice(b);
            return Some(());
        }
        let mut done = 0usize;
        while done < buf.len() {
            let at = addr.checked_add(done as u64)?;
            let page = at - at % PAGE;
            let off = usize::try_from(at - page).ok()?;
            let got = self.page(page).and_then(|bytes| {
                let n = bytes.len().checked_sub(off)?.min(buf.len() - done);
                (n > 0).then(|| bytes.get(off..off + n).map(<[u8]>::to_vec))?
            });
            match got {
                Some(chunk) => {
                    buf.get_mut(done..done + chunk.len())?
                        .copy_from_slice(&chunk);
                    done += chunk.len();
                }
                // A page the target would not give whole (memory that starts or ends inside
                // it): the bytes asked for, read as they are.
                None => return self.direct(at, buf.get_mut(done..)?),
            }
        }
        Some(())
    }

    /// Reads `buf` at `addr` without caching, from the page budget.
    fn direct(&mut self, addr: u64, buf: &mut [u8]) -> Option<()> {
        if self.pages_left == 0 {
            return None;
        }
        self.pages_left -= 1;
        self.mem.read(addr, buf).ok()
    }

    /// `len` bytes of the ELF's read-only data at `addr`, when one section holds them.
    pub(crate) fn constant(&self, addr: u64, len: u64) -> Option<&'a [u8]> {
        let (start, bytes) = self.symbols.rodata_section(addr)?;
        let off = usize::try_from(addr - start).ok()?;
        bytes.get(off..off.checked_add(usize::try_from(len).ok()?)?)
    }

    /// The bounds `start..end` of the ELF's read-only section holding `addr`.
    pub(crate) fn constant_section(&self, addr: u64) -> Option<(u64, u64)> {
        let (start, bytes) = self.symbols.rodata_section(addr)?;
        Some((start, start.checked_add(bytes.len() as u64)?))
    }

    fn page(&mut self, page: u64) -> Option<&[u8]> {
        if !self.pages.contains_key(&page) {
            if self.pages_left == 0 {
                tracing::debug!("page budget spent: {page:#x} not read");
                return None;
            }
            self.pages_left -= 1;
            // A page across an end of memory is not read whole: the bytes asked for are then
            // read as they are (`direct`).
            let got = match self.mem.read_vec(page, PAGE as usize) {
                Ok(b) => Some(b),
                Err(e) => {
                    tracing::debug!("page {page:#x} unreadable: {e}");
                    None
                }
            };
            self.pages.insert(page, got);
        }
        self.pages.get(&page)?.as_deref()
    }

    pub(crate) fn u8(&mut self, addr: u64) -> Option<u8> {
        let mut b = [0u8; 1];
        self.read(addr, &mut b)?;
        Some(b[0])
    }

    pub(crate) fn u32(&mut self, addr: u64) -> Option<u32> {
        let mut b = [0u8; 4];
        self.read(addr, &mut b)?;
        Some(u32::from_le_bytes(b))
    }

    /// An unsigned little-endian value of `size` bytes (1, 2, 4 or 8).
    pub(crate) fn uint(&mut self, addr: u64, size: u64) -> Option<u64> {
        let mut b = [0u8; 8];
        let n = usize::try_from(size)
            .ok()
            .filter(|n| matches!(n, 1 | 2 | 4 | 8))?;
        self.read(addr, b.get_mut(..n)?)?;
        Some(u64::from_le_bytes(b))
    }

    /// A NUL-terminated string of at most `max` bytes, made printable; `None` for a null
    /// pointer, unreadable bytes or no terminator within `max`.
    pub(crate) fn c_string(&mut self, addr: u64, max: usize) -> Option<String> {
        if addr == 0 {
            return None;
        }
        let mut out = Vec::new();
        for i in 0..max as u64 {
            match self.u8(addr.checked_add(i)?)? {
                0 => return Some(String::from_utf8_lossy(&out).into_owned()),
                b => out.push(b),
            }
        }
        None
    }
}

/// A failure that ends the reading: the target cannot answer anything any more.
fn fatal(e: &TargetError) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Gone | ErrorKind::Transport | ErrorKind::Interrupted | ErrorKind::Timeout
    )
}

/// Sorted, with ranges that overlap or touch merged; empty and overflowing ranges dropped.
fn merge(ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut sorted: Vec<(u64, u64)> = ranges
        .iter()
        .filter(|(s, l)| *l > 0 && s.checked_add(*l).is_some())
        .copied()
        .collect();
    sorted.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (s, l) in sorted {
        let end = s + l;
        match out.last_mut() {
            Some((ps, pl)) if s <= *ps + *pl => *pl = (*pl).max(end - *ps),
            _ => out.push((s, l)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ranges_that_touch_or_overlap_are_read_once() {
        let ranges = [
            (0x28, 0x10),
            (0x10, 0x10),
            (0x20, 8),
            (0x100, 4),
            (0x102, 8),
            (0, 0),
            (0x40, 1),
        ];
        assert_eq!(merge(&ranges), vec![(0x10, 0x28), (0x40, 1), (0x100, 10)]);
        assert_eq!(merge(&[(u64::MAX - 1, 4)]), vec![]);
    }
}
