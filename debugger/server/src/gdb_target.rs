//! gdbstub's traits over the [`Bridge`]: registers, memory, resume and step, breakpoints and
//! watchpoints, monitor commands. A backend error that ends the link ends the session; any
//! other is gdb's ordinary "cannot do that" (`E` reply).

use gdbstub::common::Signal;
use gdbstub::target::ext::base::BaseOps;
use gdbstub::target::ext::base::singlethread::{
    SingleThreadBase, SingleThreadResume, SingleThreadResumeOps, SingleThreadSingleStep,
    SingleThreadSingleStepOps,
};
use gdbstub::target::ext::breakpoints::{
    Breakpoints, BreakpointsOps, HwBreakpoint, HwBreakpointOps, HwWatchpoint, HwWatchpointOps,
    SwBreakpoint, SwBreakpointOps, WatchKind as GdbWatchKind,
};
use gdbstub::target::ext::monitor_cmd::MonitorCmdOps;
use gdbstub::target::{TargetError as GdbTargetError, TargetResult};
use memlife_core::cortex_m::CoreRegisters;
use memlife_core::{BreakpointKind, ErrorKind, WatchKind};

use crate::arch::{CortexM, CortexMRegs};
use crate::bridge::{Bridge, GdbWatchpoint};
use crate::error::{Capability, Context, ServeError};
use crate::event::ServeEvent;

fn fatal_or_not(e: memlife_core::TargetError) -> GdbTargetError<ServeError> {
    match e.kind() {
        ErrorKind::Transport | ErrorKind::Gone => GdbTargetError::Fatal(ServeError::Target {
            context: "the target failed".into(),
            source: e,
        }),
        _ => {
            tracing::debug!("non-fatal target error: {e}");
            GdbTargetError::NonFatal
        }
    }
}

impl Bridge {
    fn add_bp(&mut self, addr: u32, kind: BreakpointKind) -> TargetResult<bool, Self> {
        let addr = u64::from(addr);
        let Some(b) = self.target.breakpoints() else {
            return Ok(false);
        };
        match b.add_breakpoint(addr, kind) {
            Ok(()) => {
                if !self.gdb_breakpoints.contains(&(addr, kind)) {
                    self.gdb_breakpoints.push((addr, kind));
                }
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::Unsupported => {
                // gdb only says it cannot insert the breakpoint ("cannot access memory"): the
                // why (all hardware comparators in use on a board) goes to the server's log.
                self.notify(ServeEvent::BreakpointRefused {
                    addr,
                    error: e.to_string(),
                });
                Ok(false)
            }
            Err(e) => Err(fatal_or_not(e)),
        }
    }

    fn remove_bp(&mut self, addr: u32, kind: BreakpointKind) -> TargetResult<bool, Self> {
        let addr = u64::from(addr);
        self.gdb_breakpoints.retain(|&b| b != (addr, kind));
        let memlife_needs =
            kind == BreakpointKind::Software && self.dump_on.iter().any(|d| d.addr == addr);
        if memlife_needs {
            return Ok(true);
        }
        let Some(b) = self.target.breakpoints() else {
            return Ok(false);
        };
        b.remove_breakpoint(addr, kind).map_err(fatal_or_not)?;
        Ok(true)
    }
}

impl gdbstub::target::Target for Bridge {
    type Arch = CortexM;
    type Error = ServeError;

    fn base_ops(&mut self) -> BaseOps<'_, CortexM, ServeError> {
        BaseOps::SingleThread(self)
    }

    fn support_breakpoints(&mut self) -> Option<BreakpointsOps<'_, Self>> {
        Some(self)
    }

    fn support_monitor_cmd(&mut self) -> Option<MonitorCmdOps<'_, Self>> {
        Some(self)
    }
}

impl SingleThreadBase for Bridge {
    fn read_registers(&mut self, regs: &mut CortexMRegs) -> TargetResult<(), Self> {
        if self.ended.is_some() {
            // Nothing to read, but gdb gives up the connection when `g` fails: zeros, and
            // every monitor command says what happened.
            regs.0 = CoreRegisters::default();
            return Ok(());
        }
        self.ensure_halted().map_err(fatal_or_not)?;
        regs.0 = CoreRegisters::read(self.target.as_mut()).map_err(fatal_or_not)?;
        Ok(())
    }

    fn write_registers(&mut self, regs: &CortexMRegs) -> TargetResult<(), Self> {
        let mut now = CortexMRegs::default();
        self.read_registers(&mut now)?;
        regs.0
            .write_changed(self.target.as_mut(), &now.0)
            .map_err(fatal_or_not)
    }

    /// A read that runs past the end of readable memory gives gdb the bytes before it (gdb asks
    /// for the rest and then names the first address it cannot read).
    fn read_addrs(&mut self, start_addr: u32, data: &mut [u8]) -> TargetResult<usize, Self> {
        if self.ended.is_some() {
            return Err(GdbTargetError::NonFatal);
        }
        self.ensure_halted().map_err(fatal_or_not)?;
        memlife_core::memory::read_available(self.target.as_memory(), u64::from(start_addr), data)
            .map_err(fatal_or_not)
    }

    fn write_addrs(&mut self, start_addr: u32, data: &[u8]) -> TargetResult<(), Self> {
        if self.ended.is_some() {
            return Err(GdbTargetError::NonFatal);
        }
        self.ensure_halted().map_err(fatal_or_not)?;
        let Some(w) = self.target.memory_write() else {
            return Err(GdbTargetError::NonFatal);
        };
        w.write(u64::from(start_addr), data).map_err(fatal_or_not)
    }

    fn support_resume(&mut self) -> Option<SingleThreadResumeOps<'_, Self>> {
        Some(self)
    }
}

impl SingleThreadResume for Bridge {
    fn resume(&mut self, _signal: Option<Signal>) -> Result<(), ServeError> {
        self.pending = None;
        self.stepping = false;
        if let Some(how) = &self.ended {
            // Nothing runs: gdb hears at once how the firmware ended.
            self.pending = Some(*how);
            return Ok(());
        }
        let c = self
            .target
            .control()
            .ok_or(ServeError::Lacks(Capability::RunControl))?;
        if c.is_halted() {
            c.resume().context("resuming the target")?;
        }
        Ok(())
    }

    fn support_single_step(&mut self) -> Option<SingleThreadSingleStepOps<'_, Self>> {
        Some(self)
    }
}

impl SingleThreadSingleStep for Bridge {
    fn step(&mut self, _signal: Option<Signal>) -> Result<(), ServeError> {
        if let Some(how) = &self.ended {
            self.pending = Some(*how);
            return Ok(());
        }
        self.ensure_halted().context("halting the target")?;
        let c = self
            .target
            .control()
            .ok_or(ServeError::Lacks(Capability::RunControl))?;
        let stop = c.step().context("stepping the target")?;
        self.pending = Some(stop);
        self.stepping = true;
        Ok(())
    }
}

impl Breakpoints for Bridge {
    fn support_sw_breakpoint(&mut self) -> Option<SwBreakpointOps<'_, Self>> {
        Some(self)
    }

    fn support_hw_breakpoint(&mut self) -> Option<HwBreakpointOps<'_, Self>> {
        Some(self)
    }

    fn support_hw_watchpoint(&mut self) -> Option<HwWatchpointOps<'_, Self>> {
        Some(self)
    }
}

impl SwBreakpoint for Bridge {
    fn add_sw_breakpoint(&mut self, addr: u32, _kind: usize) -> TargetResult<bool, Self> {
        self.add_bp(addr, BreakpointKind::Software)
    }

    fn remove_sw_breakpoint(&mut self, addr: u32, _kind: usize) -> TargetResult<bool, Self> {
        self.remove_bp(addr, BreakpointKind::Software)
    }
}

impl HwBreakpoint for Bridge {
    fn add_hw_breakpoint(&mut self, addr: u32, _kind: usize) -> TargetResult<bool, Self> {
        self.add_bp(addr, BreakpointKind::Hardware)
    }

    fn remove_hw_breakpoint(&mut self, addr: u32, _kind: usize) -> TargetResult<bool, Self> {
        self.remove_bp(addr, BreakpointKind::Hardware)
    }
}

fn watch_kind(kind: GdbWatchKind) -> WatchKind {
    match kind {
        GdbWatchKind::Write => WatchKind::Write,
        GdbWatchKind::Read => WatchKind::Read,
        GdbWatchKind::ReadWrite => WatchKind::Access,
    }
}

impl HwWatchpoint for Bridge {
    fn add_hw_watchpoint(
        &mut self,
        addr: u32,
        len: u32,
        kind: GdbWatchKind,
    ) -> TargetResult<bool, Self> {
        let (addr, len, kind) = (u64::from(addr), u64::from(len), watch_kind(kind));
        let Some(w) = self.target.watchpoints() else {
            return Ok(false);
        };
        match w.add_watchpoint(addr, len, kind) {
            Ok(()) => {
                self.gdb_watchpoints.push(GdbWatchpoint { addr, len, kind });
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::Unsupported => Ok(false),
            Err(e) => Err(fatal_or_not(e)),
        }
    }

    fn remove_hw_watchpoint(
        &mut self,
        addr: u32,
        len: u32,
        kind: GdbWatchKind,
    ) -> TargetResult<bool, Self> {
        let (addr, len, kind) = (u64::from(addr), u64::from(len), watch_kind(kind));
        if let Some(i) = self
            .gdb_watchpoints
            .iter()
            .position(|&w| w == GdbWatchpoint { addr, len, kind })
        {
            self.gdb_watchpoints.remove(i);
        }
        let Some(w) = self.target.watchpoints() else {
            return Ok(false);
        };
        w.remove_watchpoint(addr, len, kind).map_err(fatal_or_not)?;
        Ok(true)
    }
}
