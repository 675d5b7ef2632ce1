//! gdbstub's traits over the [`Bridge`]: registers, memory, resume and step, breakpoints and
//! watchpoints, monitor commands, for the core as one thread (a FreeRTOS firmware's threads
//! are in `gdb_threads`, over the same memory, run control and breakpoints). A backend error
//! that ends the link ends the session; any other is gdb's ordinary "cannot do that" (`E`
//! reply).

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

pub(crate) fn fatal_or_not(e: memlife_core::TargetError) -> GdbTargetError<ServeError> {
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
        if self.threads.is_some() {
            BaseOps::MultiThread(self)
        } else {
            BaseOps::SingleThread(self)
        }
    }

    fn support_breakpoints(&mut self) -> Option<BreakpointsOps<'_, Self>> {
        Some(self)
    }

    fn support_monitor_cmd(&mut self) -> Option<MonitorCmdOps<'_, Self>> {
        Some(self)
    }
}

impl Bridge {
    /// The core's registers as the one thread (zeros once the firmware ended: gdb gives up the
    /// connection when `g` fails, and every monitor command says what happened).
    pub(crate) fn core_registers(&mut self) -> TargetResult<CoreRegisters, Self> {
        if self.ended.is_some() {
            return Ok(CoreRegisters::default());
        }
        self.ensure_halted().map_err(fatal_or_not)?;
        CoreRegisters::read(self.target.as_mut()).map_err(fatal_or_not)
    }

    /// Writes the registers that differ from `now` (what the client was shown).
    pub(crate) fn write_core_registers(
        &mut self,
        regs: &CoreRegisters,
        now: &CoreRegisters,
    ) -> TargetResult<(), Self> {
        self.forget_stop();
        regs.write_changed(self.target.as_mut(), now)
            .map_err(fatal_or_not)
    }

    /// Memory as gdb reads it. A read that runs past the end of readable memory gives the bytes
    /// before it (gdb asks for the rest and then names the first address it cannot read).
    pub(crate) fn read_memory(&mut self, start: u32, data: &mut [u8]) -> TargetResult<usize, Self> {
        if self.ended.is_some() {
            return Err(GdbTargetError::NonFatal);
        }
        self.ensure_halted().map_err(fatal_or_not)?;
        memlife_core::memory::read_available(self.target.as_memory(), u64::from(start), data)
            .map_err(fatal_or_not)
    }

    pub(crate) fn write_memory(&mut self, start: u32, data: &[u8]) -> TargetResult<(), Self> {
        if self.ended.is_some() {
            return Err(GdbTargetError::NonFatal);
        }
        self.ensure_halted().map_err(fatal_or_not)?;
        self.forget_stop();
        let Some(w) = self.target.memory_write() else {
            return Err(GdbTargetError::NonFatal);
        };
        w.write(u64::from(start), data).map_err(fatal_or_not)
    }

    /// Lets the core run (gdb's continue, whichever thread it names).
    pub(crate) fn resume_core(&mut self) -> Result<(), ServeError> {
        self.pending = None;
        self.stepping = false;
        self.forget_stop();
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

    /// Steps the core one instruction (gdb's step, whichever thread it names).
    pub(crate) fn step_core(&mut self) -> Result<(), ServeError> {
        if let Some(how) = &self.ended {
            self.pending = Some(*how);
            return Ok(());
        }
        self.ensure_halted().context("halting the target")?;
        self.forget_stop();
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

impl SingleThreadBase for Bridge {
    fn read_registers(&mut self, regs: &mut CortexMRegs) -> TargetResult<(), Self> {
        regs.0 = self.core_registers()?;
        Ok(())
    }

    fn write_registers(&mut self, regs: &CortexMRegs) -> TargetResult<(), Self> {
        let now = self.core_registers()?;
        self.write_core_registers(&regs.0, &now)
    }

    fn read_addrs(&mut self, start_addr: u32, data: &mut [u8]) -> TargetResult<usize, Self> {
        self.read_memory(start_addr, data)
    }

    fn write_addrs(&mut self, start_addr: u32, data: &[u8]) -> TargetResult<(), Self> {
        self.write_memory(start_addr, data)
    }

    fn support_resume(&mut self) -> Option<SingleThreadResumeOps<'_, Self>> {
        Some(self)
    }
}

impl SingleThreadResume for Bridge {
    fn resume(&mut self, _signal: Option<Signal>) -> Result<(), ServeError> {
        self.resume_core()
    }

    fn support_single_step(&mut self) -> Option<SingleThreadSingleStepOps<'_, Self>> {
        Some(self)
    }
}

impl SingleThreadSingleStep for Bridge {
    fn step(&mut self, _signal: Option<Signal>) -> Result<(), ServeError> {
        self.step_core()
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
