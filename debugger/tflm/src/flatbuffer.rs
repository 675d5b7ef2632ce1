//! A bounded FlatBuffers reader over target memory: tables through their vtables, vectors and
//! strings, every offset checked against the buffer's bounds and every length capped by the
//! caller. The flatbuffer is untrusted (a model file the firmware loaded): a bad offset reads
//! as an absent field, never as a panic or an endless walk.

use crate::ram::Ram;

/// A table: its address and its vtable's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Table {
    addr: u64,
    vtable: u64,
    vtable_len: u16,
}

/// A vector: the address of its first element and its length as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Vector {
    start: u64,
    pub len: u32,
}

/// Reads one flatbuffer that lies within `lo..hi`.
pub(crate) struct Fb<'r, 'a> {
    ram: &'r mut Ram<'a>,
    lo: u64,
    hi: u64,
}

impl<'r, 'a> Fb<'r, 'a> {
    /// A reader for a buffer that lies within `lo..hi` (the container or section holding it;
    /// `0..u64::MAX` when unknown, the page budget then bounds the reads).
    pub(crate) fn new(ram: &'r mut Ram<'a>, lo: u64, hi: u64) -> Self {
        Fb { ram, lo, hi }
    }

    /// Whether `len` bytes at `addr` lie within the buffer.
    fn inside(&self, addr: u64, len: u64) -> bool {
        addr >= self.lo && addr.checked_add(len).is_some_and(|e| e <= self.hi)
    }

    fn u16(&mut self, addr: u64) -> Option<u16> {
        if !self.inside(addr, 2) {
            return None;
        }
        let mut b = [0u8; 2];
        self.ram.read(addr, &mut b)?;
        Some(u16::from_le_bytes(b))
    }

    fn u32(&mut self, addr: u64) -> Option<u32> {
        if !self.inside(addr, 4) {
            return None;
        }
        self.ram.u32(addr)
    }

    /// The table at `addr`: its first word is the signed distance back to its vtable.
    pub(crate) fn table(&mut self, addr: u64) -> Option<Table> {
        let soffset = i64::from(self.u32(addr)? as i32);
        let vtable = u64::try_from(i64::try_from(addr).ok()?.checked_sub(soffset)?).ok()?;
        let vtable_len = self.u16(vtable)?;
        // The vtable holds its own length and the table's, then one u16 per field.
        if vtable_len < 4
            || !vtable_len.is_multiple_of(2)
            || !self.inside(vtable, u64::from(vtable_len))
        {
            return None;
        }
        Some(Table {
            addr,
            vtable,
            vtable_len,
        })
    }

    /// The root table of the buffer starting at `buffer`.
    #[cfg(test)]
    pub(crate) fn root(&mut self, buffer: u64) -> Option<Table> {
        let off = self.u32(buffer)?;
        self.table(buffer.checked_add(u64::from(off))?)
    }

    /// Where field `index` of `t` is stored; `None` when the table does not have it.
    fn field(&mut self, t: Table, index: u16) -> Option<u64> {
        let slot = 4u16.checked_add(index.checked_mul(2)?)?;
        if slot >= t.vtable_len {
            return None;
        }
        let off = self.u16(t.vtable + u64::from(slot))?;
        (off != 0).then_some(t.addr.checked_add(u64::from(off))?)
    }

    /// An unsigned scalar field of `size` bytes, or `default` when absent.
    pub(crate) fn uint(&mut self, t: Table, index: u16, size: u64, default: u64) -> Option<u64> {
        match self.field(t, index) {
            None => Some(default),
            Some(at) if self.inside(at, size) => self.ram.uint(at, size),
            Some(_) => None,
        }
    }

    /// A signed scalar field of `size` bytes (1 or 4), or `default` when absent.
    pub(crate) fn int(&mut self, t: Table, index: u16, size: u64, default: i64) -> Option<i64> {
        let raw = self.uint(t, index, size, 0)?;
        if self.field(t, index).is_none() {
            return Some(default);
        }
        Some(match size {
            1 => i64::from(raw as u8 as i8),
            2 => i64::from(raw as u16 as i16),
            4 => i64::from(raw as u32 as i32),
            _ => raw as i64,
        })
    }

    /// Follows the offset stored at `at` (offsets point forward).
    fn deref(&mut self, at: u64) -> Option<u64> {
        let off = self.u32(at)?;
        at.checked_add(u64::from(off))
    }

    /// A vector field whose elements are `elem` bytes each; the whole vector must lie within
    /// the buffer.
    pub(crate) fn vector(&mut self, t: Table, index: u16, elem: u64) -> Option<Vector> {
        let at = self.field(t, index)?;
        let v = self.deref(at)?;
        let len = self.u32(v)?;
        let start = v.checked_add(4)?;
        self.inside(start, u64::from(len).checked_mul(elem)?)
            .then_some(Vector { start, len })
    }

    /// Element `i` of a vector of tables.
    pub(crate) fn table_at(&mut self, v: Vector, i: u32) -> Option<Table> {
        if i >= v.len {
            return None;
        }
        let at = v.start.checked_add(u64::from(i) * 4)?;
        let target = self.deref(at)?;
        self.table(target)
    }

    /// Element `i` of a vector of 32-bit integers.
    pub(crate) fn i32_at(&mut self, v: Vector, i: u32) -> Option<i32> {
        if i >= v.len {
            return None;
        }
        self.u32(v.start.checked_add(u64::from(i) * 4)?)
            .map(|x| x as i32)
    }

    /// Up to `max` elements of a vector of 32-bit integers (`None` when one is unreadable).
    pub(crate) fn i32s(&mut self, v: Vector, max: u32) -> Option<Vec<i32>> {
        (0..v.len.min(max)).map(|i| self.i32_at(v, i)).collect()
    }

    /// A string field of at most `max` bytes (longer ones are cut), made printable.
    pub(crate) fn string(&mut self, t: Table, index: u16, max: u32) -> Option<String> {
        let v = self.vector(t, index, 1)?;
        let n = v.len.min(max);
        let mut bytes = vec![0u8; n as usize];
        self.ram.read(v.start, &mut bytes)?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }
}
