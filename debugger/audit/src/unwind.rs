//! Backtraces for allocation sites, through the DWARF call-frame information.
//!
//! A backtrace at every traced malloc must be cheap on the link: the stack above sp is read once
//! (one transfer of [`STACK_WINDOW`] bytes) and the unwinder's reads are served from that copy;
//! only frames deeper than the window cost extra reads.

use memlife_core::{Memory, Result, Target};
use memlife_dwarf::Symbols;
use memlife_dwarf::unwind::Registers32;

/// Bytes of stack read at once for an unwind.
pub const STACK_WINDOW: u64 = 512;

/// Serves reads inside `[base, base + bytes.len())` from a copy, the rest from the target.
struct StackCache<'a> {
    target: &'a mut dyn Memory,
    base: u64,
    bytes: Vec<u8>,
}

impl Memory for StackCache<'_> {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<()> {
        let end = self.base + self.bytes.len() as u64;
        if addr >= self.base && addr + buf.len() as u64 <= end {
            let off = (addr - self.base) as usize;
            buf.copy_from_slice(&self.bytes[off..off + buf.len()]);
            return Ok(());
        }
        self.target.read(addr, buf)
    }
}

/// Return addresses from the current pc outwards (frame 0 is the pc; inlined frames folded into
/// their physical frame), at most `max` frames; `None` when the registers cannot be read.
pub fn backtrace(symbols: &Symbols, target: &mut dyn Target, max: usize) -> Option<Vec<u64>> {
    let regs = Registers32::from_target(target).ok()?;
    let sp = u64::from(regs.sp());
    let mem = target.as_memory();
    // The window may run past the end of RAM near the top of the stack: shrink until readable.
    let mut len = STACK_WINDOW;
    let bytes = loop {
        match mem.read_vec(sp, len as usize) {
            Ok(b) => break b,
            Err(_) if len > 64 => len /= 2,
            Err(_) => break Vec::new(),
        }
    };
    let mut cache = StackCache {
        target: mem,
        base: sp,
        bytes,
    };
    let frames = memlife_dwarf::unwind::backtrace(symbols, &mut cache, &regs, max * 2);
    let mut pcs: Vec<u64> = Vec::new();
    for f in frames.iter().filter(|f| !f.inlined) {
        if pcs.len() >= max {
            break;
        }
        pcs.push(f.pc);
    }
    (!pcs.is_empty()).then_some(pcs)
}
