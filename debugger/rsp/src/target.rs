//! The `memlife-core` traits on [`GdbRemote`]: every capability a live GDB server has.

use std::time::Duration;

use memlife_core::cortex_m;
use memlife_core::{
    BreakpointKind, Breakpoints, Control, LinkStats, Memory, MemoryWrite, Register, Registers,
    Result, StopReason, Target, TargetError, WatchKind, Watchpoints,
};

use crate::GdbRemote;

impl Memory for GdbRemote {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<()> {
        self.read_memory(addr, buf)
    }

    fn read_ranges(&mut self, ranges: &[(u64, usize)]) -> Result<Vec<Vec<u8>>> {
        self.read_memory_ranges(ranges)
    }
}

impl MemoryWrite for GdbRemote {
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<()> {
        self.write_memory(addr, data)
    }
}

impl Registers for GdbRemote {
    fn read_register(&mut self, reg: Register) -> Result<u64> {
        let n = cortex_m::gdb_number(reg).ok_or(TargetError::Unsupported("this register role"))?;
        let info = self.register_info(n)?;
        self.read_reg_info(&info)
    }

    fn write_register(&mut self, reg: Register, value: u64) -> Result<()> {
        let n = cortex_m::gdb_number(reg).ok_or(TargetError::Unsupported("this register role"))?;
        let info = self.register_info(n)?;
        self.write_reg_info(&info, value)
    }

    fn read_all_registers(&mut self) -> Result<Vec<(String, u64)>> {
        self.all_registers()
    }
}

impl Control for GdbRemote {
    fn halt(&mut self) -> Result<StopReason> {
        self.do_halt()
    }

    fn resume(&mut self) -> Result<()> {
        self.do_resume()
    }

    fn step(&mut self) -> Result<StopReason> {
        self.do_step()
    }

    fn wait_for_stop(&mut self, timeout: Duration) -> Result<Option<StopReason>> {
        self.do_wait(timeout)
    }

    fn reset(&mut self, halt: bool) -> Result<()> {
        self.do_reset(halt)
    }

    fn is_halted(&self) -> bool {
        self.halted()
    }
}

impl Breakpoints for GdbRemote {
    fn add_breakpoint(&mut self, addr: u64, kind: BreakpointKind) -> Result<()> {
        self.insert_breakpoint(addr, kind)
    }

    fn remove_breakpoint(&mut self, addr: u64, kind: BreakpointKind) -> Result<()> {
        self.delete_breakpoint(addr, kind)
    }

    fn inserted(&self) -> Vec<(u64, BreakpointKind)> {
        self.breakpoint_list()
    }
}

impl Watchpoints for GdbRemote {
    fn add_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> Result<()> {
        self.insert_watchpoint(addr, len, kind)
    }

    fn remove_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> Result<()> {
        self.delete_watchpoint(addr, len, kind)
    }
}

impl Target for GdbRemote {
    fn describe(&self) -> String {
        format!("gdb-remote {}", self.addr())
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

    fn link_stats(&self) -> LinkStats {
        self.stats()
    }

    fn disconnect(&mut self, resume: bool) -> Result<()> {
        if resume {
            self.detach()
        } else {
            // Closing the socket without `D` leaves the core halted where it stopped.
            Ok(())
        }
    }

    fn as_memory(&mut self) -> &mut dyn Memory {
        self
    }
}
