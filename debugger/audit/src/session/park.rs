//! A firmware parked in a loop it never leaves (a halt loop after an error, a `while (1)`),
//! told apart from one still working, so that a hang after an injected failure is reported in
//! about a second instead of after the whole `--timeout`.
//!
//! While a run waits with the watch on, memlife halts the core every [`POLL`], samples the pc
//! and the stack pointer, and resumes. Parked means: [`POLLS`] samples in a row at the same
//! stack pointer, all pcs within `WINDOW` (16) bytes (a branch-to-self, or a loop of a few
//! instructions polling a flag that never changes). Any breakpoint stop starts the count over:
//! a firmware that still allocates, frees or calls a role is not parked. Work that spins in a
//! short loop for longer than `POLLS × POLL` at one stack depth would be taken for parked;
//! the watch is only on after an injected failure, where the firmware is expected back at a
//! lifecycle call within milliseconds.

use std::fmt::Write as _;
use std::time::Duration;

use memlife_core::Target;
use memlife_core::cortex_m::CoreRegisters;
use memlife_dwarf::Symbols;

/// Time between samples.
pub const POLL: Duration = Duration::from_millis(250);
/// Samples in a row that make a park.
pub const POLLS: u32 = 5;
/// The span of pcs a parked loop stays within.
const WINDOW: u64 = 16;

/// Samples since the last stop (each wait for a stop starts a new watch).
#[derive(Debug, Default)]
pub struct ParkWatch {
    samples: Vec<(u64, u64)>,
}

impl ParkWatch {
    /// Adds a sample (pc, sp); whether the firmware now counts as parked.
    pub fn sample(&mut self, pc: u64, sp: u64) -> bool {
        self.samples.push((pc, sp));
        let n = POLLS as usize;
        if self.samples.len() > n {
            self.samples.remove(0);
        }
        if self.samples.len() < n {
            return false;
        }
        let lo = self.samples.iter().map(|s| s.0).min().unwrap_or(0);
        let hi = self.samples.iter().map(|s| s.0).max().unwrap_or(0);
        self.samples.iter().all(|s| s.1 == sp) && hi - lo < WINDOW
    }
}

/// Where the halted core is parked: pc, function and line, and the call chain.
pub fn parked_at(target: &mut dyn Target, symbols: &Symbols, pc: u64) -> String {
    let mut text = format!("pc {pc:#010x}");
    if let Some(loc) = symbols.locate(pc).into_iter().next() {
        let _ = write!(text, " in {}", loc.function.as_deref().unwrap_or("?"));
        if let (Some(file), Some(line)) = (&loc.file, loc.line) {
            // The base name, as sites are named.
            let file = file.rsplit(['/', '\\']).next().unwrap_or(file);
            let _ = write!(text, " ({file}:{line})");
        }
    }
    if let Ok(regs) = CoreRegisters::read(target) {
        let frames = symbols.backtrace(target.as_memory(), &regs, 16);
        let chain = super::fault::frame_names(&frames);
        if chain.len() > 1 {
            let _ = write!(text, ", call chain: {}", chain.join(" <- "));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_branch_to_self_is_parked_and_moving_code_is_not() {
        let mut w = ParkWatch::default();
        for _ in 0..POLLS - 1 {
            assert!(!w.sample(0x800_0100, 0x2001_0000));
        }
        assert!(w.sample(0x800_0100, 0x2001_0000));
        let mut w = ParkWatch::default();
        for i in 0..POLLS * 2 {
            assert!(!w.sample(0x800_0100 + u64::from(i) * 0x40, 0x2001_0000));
        }
        // A loop polling a flag: a few instructions, one stack depth.
        let mut w = ParkWatch::default();
        let pcs = [0x800_0200, 0x800_0204, 0x800_0208, 0x800_0200, 0x800_0206];
        let parked: Vec<bool> = pcs.iter().map(|pc| w.sample(*pc, 0x2000_ff00)).collect();
        assert_eq!(parked.last(), Some(&true));
        // The same pcs at another stack depth each time (a recursion) are not one loop.
        let mut w = ParkWatch::default();
        for i in 0..POLLS {
            assert!(!w.sample(0x800_0300, 0x2000_ff00 - u64::from(i) * 8));
        }
    }
}
