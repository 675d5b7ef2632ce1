//! A live target without QEMU: a snapshot's memory and registers with run control, breakpoints,
//! watchpoints and writes, whose core follows a script of [`Run`] steps when resumed. For code
//! that drives a running core (`memlife serve`'s gdb bridge, its monitor commands, its fuzz
//! target): deterministic, and never blocking (a wait answers at once).
//!
//! The test keeps a [`Probe`] on the target's state to script it and look at it after the
//! target went into a `Box<dyn Target>`.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;

use memlife_core::{
    BreakpointKind, Breakpoints, Control, Memory, MemoryWrite, Register, Registers, Result,
    Snapshot, StopReason, Target, TargetError, WatchKind, Watchpoints, cortex_m,
};

/// What the core does next while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// Passes the instruction at this address: stops there when a breakpoint is set on it.
    Pass(u64),
    /// Stops for this reason whatever is set (a watchpoint hit, the firmware's exit).
    Stop(StopReason),
}

/// What the target did and holds, shared with the test.
#[derive(Debug, Default)]
pub struct State {
    /// Memory (writes go into its regions).
    pub mem: Snapshot,
    /// Registers by gdb number (r0..r15, xpsr at 25).
    pub regs: [u64; 26],
    /// More registers by name, listed after those by `read_all_registers` (a probe's `psp`).
    pub named: Vec<(String, u64)>,
    /// The script still to run.
    pub script: VecDeque<Run>,
    /// The core runs.
    pub running: bool,
    /// Breakpoints set now.
    pub breakpoints: Vec<(u64, BreakpointKind)>,
    /// Watchpoints set now.
    pub watchpoints: Vec<(u64, u64, WatchKind)>,
    /// Hardware breakpoints the target has (more are refused as exhausted).
    pub hw_breakpoints: usize,
    /// Resumes so far.
    pub resumes: u32,
    /// Halts so far.
    pub halts: u32,
    /// Resets so far.
    pub resets: u32,
    /// Every stop reported, in order.
    pub stops: Vec<StopReason>,
}

/// The test's handle on a [`LiveTarget`].
#[derive(Debug, Clone)]
pub struct Probe(pub Rc<RefCell<State>>);

impl Probe {
    /// Adds steps to the script.
    pub fn script(&self, steps: impl IntoIterator<Item = Run>) {
        self.0.borrow_mut().script.extend(steps);
    }

    /// A look at the state.
    pub fn state(&self) -> std::cell::Ref<'_, State> {
        self.0.borrow()
    }

    /// Memory and registers as in `snapshot` again (what a run wrote is forgotten).
    pub fn restore(&self, snapshot: &Snapshot) {
        let mut s = self.0.borrow_mut();
        s.regs = registers_of(snapshot);
        s.mem = snapshot.clone();
    }
}

/// The registers of a snapshot (by name: r0..r15, sp, lr, pc, xpsr) by gdb number.
fn registers_of(snapshot: &Snapshot) -> [u64; 26] {
    let mut regs = [0u64; 26];
    for (name, value) in &snapshot.registers {
        let slot = match name.as_str() {
            "sp" => Some(cortex_m::SP),
            "lr" => Some(cortex_m::LR),
            "pc" => Some(cortex_m::PC),
            "xpsr" => Some(usize::from(cortex_m::GDB_XPSR)),
            r => r.strip_prefix('r').and_then(|n| n.parse().ok()),
        };
        if let Some(slot) = slot.filter(|&s| s < regs.len()) {
            regs[slot] = *value;
        }
    }
    regs
}

/// The live target.
pub struct LiveTarget {
    state: Rc<RefCell<State>>,
}

impl LiveTarget {
    /// A halted core over `snapshot` (its registers by name: r0..r15, xpsr), with four hardware
    /// breakpoints, and the probe that looks at it.
    pub fn new(snapshot: Snapshot) -> (LiveTarget, Probe) {
        let state = Rc::new(RefCell::new(State {
            regs: registers_of(&snapshot),
            mem: snapshot,
            hw_breakpoints: 4,
            ..State::default()
        }));
        let probe = Probe(Rc::clone(&state));
        (LiveTarget { state }, probe)
    }

    fn slot(reg: Register) -> Result<usize> {
        cortex_m::gdb_number(reg)
            .map(usize::from)
            .filter(|n| *n < 26)
            .ok_or(TargetError::Unsupported("this register"))
    }

    fn stop(&mut self, reason: StopReason) -> StopReason {
        let mut s = self.state.borrow_mut();
        s.running = false;
        s.stops.push(reason);
        if let StopReason::Breakpoint(pc) = reason {
            s.regs[cortex_m::PC] = pc;
        }
        reason
    }
}

impl Memory for LiveTarget {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<()> {
        self.state.borrow_mut().mem.read(addr, buf)
    }
}

impl MemoryWrite for LiveTarget {
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<()> {
        let unmapped = || TargetError::Unmapped {
            addr,
            len: data.len(),
        };
        let mut s = self.state.borrow_mut();
        let region = s
            .mem
            .regions
            .iter_mut()
            .find(|r| addr >= r.start && addr - r.start < r.data.len() as u64)
            .ok_or_else(unmapped)?;
        let at = usize::try_from(addr - region.start).map_err(|_| unmapped())?;
        let end = at.checked_add(data.len()).ok_or_else(unmapped)?;
        region
            .data
            .get_mut(at..end)
            .ok_or_else(unmapped)?
            .copy_from_slice(data);
        Ok(())
    }
}

impl Registers for LiveTarget {
    fn read_register(&mut self, reg: Register) -> Result<u64> {
        Ok(self.state.borrow().regs[Self::slot(reg)?])
    }

    fn write_register(&mut self, reg: Register, value: u64) -> Result<()> {
        self.state.borrow_mut().regs[Self::slot(reg)?] = value;
        Ok(())
    }

    fn read_all_registers(&mut self) -> Result<Vec<(String, u64)>> {
        let s = self.state.borrow();
        let regs = s.regs;
        Ok((0..16)
            .map(|i| (format!("r{i}"), regs[i]))
            .chain([("xpsr".to_string(), regs[usize::from(cortex_m::GDB_XPSR)])])
            .chain(s.named.iter().cloned())
            .collect())
    }
}

impl Control for LiveTarget {
    fn halt(&mut self) -> Result<StopReason> {
        self.state.borrow_mut().halts += 1;
        Ok(self.stop(StopReason::Halted))
    }

    fn resume(&mut self) -> Result<()> {
        let mut s = self.state.borrow_mut();
        s.running = true;
        s.resumes += 1;
        Ok(())
    }

    fn step(&mut self) -> Result<StopReason> {
        {
            let mut s = self.state.borrow_mut();
            s.regs[cortex_m::PC] = s.regs[cortex_m::PC].wrapping_add(2);
        }
        Ok(self.stop(StopReason::Step))
    }

    /// Runs the script to its next stop; a script that ran out runs on (no stop, at once).
    fn wait_for_stop(&mut self, _timeout: Duration) -> Result<Option<StopReason>> {
        loop {
            let next = {
                let mut s = self.state.borrow_mut();
                if !s.running {
                    return Ok(None);
                }
                let Some(next) = s.script.pop_front() else {
                    return Ok(None);
                };
                match next {
                    Run::Pass(pc) if s.breakpoints.iter().any(|&(a, _)| a == pc) => {
                        StopReason::Breakpoint(pc)
                    }
                    Run::Pass(pc) => {
                        s.regs[cortex_m::PC] = pc;
                        continue;
                    }
                    Run::Stop(reason) => reason,
                }
            };
            return Ok(Some(self.stop(next)));
        }
    }

    fn reset(&mut self, halt: bool) -> Result<()> {
        let mut s = self.state.borrow_mut();
        s.resets += 1;
        s.running = !halt;
        Ok(())
    }

    fn is_halted(&self) -> bool {
        !self.state.borrow().running
    }
}

impl Breakpoints for LiveTarget {
    fn add_breakpoint(&mut self, addr: u64, kind: BreakpointKind) -> Result<()> {
        let mut s = self.state.borrow_mut();
        if s.breakpoints.contains(&(addr, kind)) {
            return Ok(());
        }
        let hw = s
            .breakpoints
            .iter()
            .filter(|b| b.1 == BreakpointKind::Hardware)
            .count();
        if kind == BreakpointKind::Hardware && hw >= s.hw_breakpoints {
            return Err(TargetError::Exhausted {
                what: "hardware breakpoints (FPB comparators)",
                count: u32::try_from(s.hw_breakpoints).unwrap_or(u32::MAX),
            });
        }
        s.breakpoints.push((addr, kind));
        Ok(())
    }

    fn remove_breakpoint(&mut self, addr: u64, kind: BreakpointKind) -> Result<()> {
        self.state
            .borrow_mut()
            .breakpoints
            .retain(|&b| b != (addr, kind));
        Ok(())
    }

    fn inserted(&self) -> Vec<(u64, BreakpointKind)> {
        self.state.borrow().breakpoints.clone()
    }
}

impl Watchpoints for LiveTarget {
    fn add_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> Result<()> {
        self.state.borrow_mut().watchpoints.push((addr, len, kind));
        Ok(())
    }

    fn remove_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> Result<()> {
        self.state
            .borrow_mut()
            .watchpoints
            .retain(|&w| w != (addr, len, kind));
        Ok(())
    }
}

impl Target for LiveTarget {
    fn describe(&self) -> String {
        "live fake over a snapshot".into()
    }

    fn control(&mut self) -> Option<&mut dyn Control> {
        Some(self)
    }

    fn breakpoints(&mut self) -> Option<&mut dyn Breakpoints> {
        Some(self)
    }

    fn watchpoints(&mut self) -> Option<&mut dyn Watchpoints> {
        Some(self)
    }

    fn memory_write(&mut self) -> Option<&mut dyn MemoryWrite> {
        Some(self)
    }

    fn as_memory(&mut self) -> &mut dyn Memory {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_core_stops_only_where_a_breakpoint_is() {
        let mut snap = Snapshot::default();
        snap.add_region(0x2000_0000, vec![0; 16]).unwrap();
        let (mut t, probe) = LiveTarget::new(snap);
        probe.script([Run::Pass(0x100), Run::Pass(0x200), Run::Pass(0x100)]);
        t.add_breakpoint(0x100, BreakpointKind::Software).unwrap();
        t.resume().unwrap();
        assert_eq!(
            t.wait_for_stop(Duration::ZERO).unwrap(),
            Some(StopReason::Breakpoint(0x100))
        );
        t.remove_breakpoint(0x100, BreakpointKind::Software)
            .unwrap();
        t.resume().unwrap();
        assert_eq!(t.wait_for_stop(Duration::ZERO).unwrap(), None);
        assert!(!t.is_halted(), "a script that ran out runs on");
        t.write(0x2000_0004, &[1, 2]).unwrap();
        assert_eq!(t.read_vec(0x2000_0004, 2).unwrap(), vec![1, 2]);
        assert!(t.write(0x2000_000f, &[1, 2]).is_err());
        for a in 0..4 {
            t.add_breakpoint(a, BreakpointKind::Hardware).unwrap();
        }
        assert!(t.add_breakpoint(9, BreakpointKind::Hardware).is_err());
    }
}
