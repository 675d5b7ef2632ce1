//! Breakpoints become hardware breakpoints: a probe-rs target's code is usually in flash, where
//! a software breakpoint instruction cannot be patched in. Their number is the core's: the FPB has
//! 6 comparators on Cortex-M3/M4 (STM32F4), 8 on Cortex-M7, 4 on M0/M0+ (often only 2 usable
//! for code in flash on v1 FPBs); ESP32-S3 cores have 2 instruction breakpoints each.
//!
//! gdb may insert a software and a hardware breakpoint at the same address, and memlife's own
//! tracing may share an address with gdb's; one comparator serves them all, so this keeps a
//! list of (address, kind) and programs a comparator only for the first of an address.

use memlife_core::{BreakpointKind, Result, TargetError};

/// The breakpoints asked for and the comparators they use.
#[derive(Debug, Default)]
pub struct HwBreakpoints {
    units: u32,
    set: Vec<(u64, BreakpointKind)>,
}

impl HwBreakpoints {
    /// A core with `units` breakpoint comparators.
    pub fn new(units: u32) -> Self {
        HwBreakpoints {
            units,
            set: Vec::new(),
        }
    }

    /// How many comparators the core has.
    pub fn units(&self) -> u32 {
        self.units
    }

    fn programmed(&self) -> usize {
        let mut addrs: Vec<u64> = self.set.iter().map(|b| b.0).collect();
        addrs.sort_unstable();
        addrs.dedup();
        addrs.len()
    }

    /// Whether adding this breakpoint needs a new comparator; an error naming the count when none
    /// is left. Call [`HwBreakpoints::added`] once it is programmed.
    pub fn plan_add(&self, addr: u64, kind: BreakpointKind) -> Result<bool> {
        if self.set.contains(&(addr, kind)) {
            return Ok(false);
        }
        if self.set.iter().any(|b| b.0 == addr) {
            return Ok(false);
        }
        if self.programmed() >= self.units as usize {
            return Err(TargetError::Exhausted {
                what: "hardware breakpoints",
                count: self.units,
            });
        }
        Ok(true)
    }

    /// Records a breakpoint as set.
    pub fn added(&mut self, addr: u64, kind: BreakpointKind) {
        if !self.set.contains(&(addr, kind)) {
            self.set.push((addr, kind));
        }
    }

    /// Forgets a breakpoint; true when its comparator is now unused and must be cleared.
    pub fn remove(&mut self, addr: u64, kind: BreakpointKind) -> Result<bool> {
        let Some(i) = self.set.iter().position(|b| *b == (addr, kind)) else {
            return Err(TargetError::Rejected(format!(
                "no breakpoint at {addr:#010x} to remove"
            )));
        };
        self.set.remove(i);
        Ok(!self.set.iter().any(|b| b.0 == addr))
    }

    /// Every breakpoint, as the `Breakpoints` trait lists them.
    pub fn list(&self) -> Vec<(u64, BreakpointKind)> {
        self.set.clone()
    }

    /// True when a breakpoint is set at `addr`.
    pub fn contains(&self, addr: u64) -> bool {
        self.set.iter().any(|b| b.0 == addr)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use BreakpointKind::{Hardware, Software};

    fn add(b: &mut HwBreakpoints, addr: u64, kind: BreakpointKind) -> Result<bool> {
        let needs = b.plan_add(addr, kind)?;
        b.added(addr, kind);
        Ok(needs)
    }

    #[test]
    fn runs_out_after_the_unit_count_with_a_clear_error() {
        let mut b = HwBreakpoints::new(6);
        for i in 0..6 {
            assert!(add(&mut b, 0x0800_0100 + 4 * i, Software).unwrap());
        }
        let e = add(&mut b, 0x0800_0200, Software).unwrap_err();
        assert_eq!(
            e.to_string(),
            "all 6 hardware breakpoints are in use; remove one first"
        );
        assert!(matches!(e.kind(), memlife_core::ErrorKind::Unsupported));
    }

    #[test]
    fn shared_addresses_share_a_comparator() {
        let mut b = HwBreakpoints::new(1);
        assert!(add(&mut b, 0x100, Software).unwrap());
        assert!(!add(&mut b, 0x100, Hardware).unwrap());
        assert!(!add(&mut b, 0x100, Software).unwrap());
        assert_eq!(b.list().len(), 2);
        assert!(add(&mut b, 0x200, Software).is_err());
        // The comparator is freed only with the last user.
        assert!(!b.remove(0x100, Hardware).unwrap());
        assert!(b.remove(0x100, Software).unwrap());
        assert!(add(&mut b, 0x200, Software).unwrap());
    }

    #[test]
    fn removing_an_unknown_breakpoint_is_an_error() {
        let mut b = HwBreakpoints::new(2);
        assert!(b.remove(0x100, Software).is_err());
    }
}
