//! Memory: `m` reads split to the server's packet size and pipelined, `M` writes (small ones
//! held back for the next request).

use memlife_core::{Result, TargetError};

use super::{DEFAULT_PACKET_SIZE, GdbRemote};
use crate::packet::{self, Reply};
use crate::packets::memory::{ReadMemory, WRITE_OVERHEAD, WriteMemory};

/// Memory bytes per `m` when the server gives no `PacketSize`.
const DEFAULT_MAX_READ: usize = 4096;
/// `m` requests sent before the first reply is read.
pub(crate) const PIPELINE_DEPTH: usize = 64;

/// Memory bytes per `m` request: the reply is two hex digits per byte plus `$`, `#` and the
/// checksum, and must fit the server's packet size.
pub(crate) fn max_read_size(packet_size: Option<usize>) -> usize {
    match packet_size {
        Some(ps) => (ps.saturating_sub(4) / 2).clamp(1, packet::MAX_FRAME / 2),
        None => DEFAULT_MAX_READ,
    }
}

/// Memory bytes per `M` request: the data is two hex digits per byte after
/// [`WRITE_OVERHEAD`], plus the frame's `$`, `#` and checksum.
pub(crate) fn max_write_size(packet_size: Option<usize>) -> usize {
    let ps = packet_size.unwrap_or(DEFAULT_PACKET_SIZE);
    (ps.saturating_sub(4 + WRITE_OVERHEAD) / 2).clamp(1, packet::MAX_FRAME / 2)
}

/// Splits `[addr, addr + len)` into requests of at most `max` bytes.
pub(crate) fn split_range(addr: u64, len: usize, max: usize) -> impl Iterator<Item = (u64, usize)> {
    let max = max.max(1);
    (0..len)
        .step_by(max)
        .map(move |off| (addr.wrapping_add(off as u64), max.min(len - off)))
}

impl GdbRemote {
    /// Memory bytes per `m` request.
    pub fn max_read(&self) -> usize {
        max_read_size(self.features.packet_size)
    }

    /// Reads several ranges with every `m` request sent before the first reply is read (in
    /// batches of [`PIPELINE_DEPTH`]): a 96 KiB arena costs one round trip instead of 48.
    pub(crate) fn read_memory_ranges(&mut self, ranges: &[(u64, usize)]) -> Result<Vec<Vec<u8>>> {
        self.check_halted()?;
        let max = self.max_read();
        let mut chunks: Vec<(usize, u64, usize)> = Vec::new();
        for (i, &(addr, len)) in ranges.iter().enumerate() {
            chunks.extend(split_range(addr, len, max).map(|(a, n)| (i, a, n)));
        }
        // Every chunk lands at its own offset: a short reply leaves a gap that is asked for
        // again below, never shifts the chunks after it.
        let mut out: Vec<Vec<u8>> = ranges.iter().map(|&(_, len)| vec![0u8; len]).collect();
        let mut gaps: Vec<(usize, u64, usize)> = Vec::new();
        let mut first_error = None;
        for batch in chunks.chunks(PIPELINE_DEPTH) {
            self.check_deadline()?;
            let mut packets = self.take_pending_writes();
            let writes = packets.len();
            packets.extend(
                batch
                    .iter()
                    .map(|&(_, addr, len)| ReadMemory { addr, len }.encode()),
            );
            let r = self.conn.send_many(&packets);
            self.note(r)?;
            self.check_write_replies(writes)?;
            // Every reply is read, errors or not, so the stream stays in step.
            for (k, &(i, a, n)) in batch.iter().enumerate() {
                if memlife_core::interrupt::requested() {
                    // The rest of the batch is on its way: owed, dropped before the next
                    // request (see `Conn`).
                    self.conn.owe(batch.len() - k);
                    return Err(TargetError::Interrupted);
                }
                self.stats.reads += 1;
                let timeout = self.timeout;
                let r = self.conn.recv(timeout, "a memory reply");
                let reply = match self.note(r)? {
                    Some(d) => Reply::parse(d),
                    None => return Err(TargetError::timeout(timeout, "memory reply")),
                };
                let result = ReadMemory { addr: a, len: n }.parse_reply(reply);
                match result {
                    Ok(bytes) => {
                        self.stats.bytes += bytes.len() as u64;
                        let off = a.wrapping_sub(ranges[i].0) as usize;
                        out[i][off..off + bytes.len()].copy_from_slice(&bytes);
                        if bytes.len() < n {
                            gaps.push((i, a.wrapping_add(bytes.len() as u64), n - bytes.len()));
                        }
                    }
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        // A server may answer with fewer bytes than asked: the rest is asked for again, one
        // request at a time, until it comes or the server refuses (an error naming the address).
        for (i, addr, len) in gaps {
            let off = addr.wrapping_sub(ranges[i].0) as usize;
            self.read_memory_sequential(addr, &mut out[i][off..off + len])?;
        }
        Ok(out)
    }

    pub(crate) fn read_memory(&mut self, addr: u64, buf: &mut [u8]) -> Result<()> {
        if buf.len() > self.max_read() {
            let mut v = self.read_memory_ranges(&[(addr, buf.len())])?;
            let data = v.pop().unwrap_or_default();
            buf.copy_from_slice(&data);
            return Ok(());
        }
        self.read_memory_sequential(addr, buf)
    }

    pub(super) fn read_memory_sequential(&mut self, addr: u64, buf: &mut [u8]) -> Result<()> {
        self.check_halted()?;
        let max = self.max_read();
        let mut done = 0;
        while done < buf.len() {
            check_interrupt()?;
            let a = addr.wrapping_add(done as u64);
            let n = max.min(buf.len() - done);
            let read = ReadMemory { addr: a, len: n };
            self.stats.reads += 1;
            let reply = self.request(&read.encode())?;
            // No bytes at all is an error naming the address (`parse_reply`), so every turn of
            // this loop advances or ends it. A short read is allowed: the rest is asked for again.
            let bytes = read.parse_reply(reply)?;
            buf[done..done + bytes.len()].copy_from_slice(&bytes);
            done += bytes.len();
            self.stats.bytes += bytes.len() as u64;
        }
        Ok(())
    }

    pub(crate) fn write_memory(&mut self, addr: u64, data: &[u8]) -> Result<()> {
        self.check_halted()?;
        if !data.is_empty()
            && data.len() <= max_write_size(self.features.packet_size)
            && data.len() <= 64
        {
            // A small write (an emulated push) is held back and sent with the next request or
            // run command; an error surfaces there.
            self.pending_writes
                .push(WriteMemory { addr, data }.encode());
            return Ok(());
        }
        for (a, n) in split_range(addr, data.len(), max_write_size(self.features.packet_size)) {
            let off = a.wrapping_sub(addr) as usize;
            let write = WriteMemory {
                addr: a,
                data: &data[off..off + n],
            };
            let reply = self.request(&write.encode())?;
            write.parse_reply(reply)?;
        }
        // Memory-mapped registers may have changed.
        self.regs_cache = None;
        Ok(())
    }
}

/// Fails when the user asked to stop (Ctrl-C, SIGTERM): a walk over a slow link is many reads,
/// and the request must end it at the next one, not after the last. Only reads check: the
/// clean-up after an interrupt (breakpoints out, resume or detach) sends no reads.
fn check_interrupt() -> Result<()> {
    if memlife_core::interrupt::requested() {
        return Err(TargetError::Interrupted);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn read_size_from_packet_size() {
        // QEMU 7.2: PacketSize=1000 (hex) → 2046 bytes per m.
        assert_eq!(max_read_size(Some(0x1000)), 2046);
        assert_eq!(max_read_size(Some(0x4000)), 8190);
        assert_eq!(max_read_size(None), 4096);
        assert_eq!(max_read_size(Some(3)), 1);
    }

    #[test]
    fn splits_ranges() {
        let parts: Vec<_> = split_range(0x2000_0000, 4096, 2046).collect();
        assert_eq!(
            parts,
            vec![(0x2000_0000, 2046), (0x2000_07fe, 2046), (0x2000_0ffc, 4)]
        );
        assert_eq!(split_range(0, 0, 10).count(), 0);
        assert_eq!(split_range(0, 10, 10).count(), 1);
        assert_eq!(split_range(0, 11, 10).count(), 2);
    }
}
