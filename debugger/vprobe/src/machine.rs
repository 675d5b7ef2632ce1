//! Everything behind the MEM-AP: the system bus as a debugger sees it.
//!
//! Addresses below `0xE0000000` (flash, SRAM, peripherals) are QEMU's memory, read with `m` and
//! written with `M`. In the Private Peripheral Bus and above, the debug components are modelled
//! here and translated to GDB remote requests:
//!
//! - `DHCSR` (`0xE000EDF0`): `DBGKEY`-guarded writes of `C_DEBUGEN`, `C_HALT`, `C_STEP`,
//!   `C_MASKINTS` become interrupt, step and continue; reads give `S_HALT`, `S_REGRDY`,
//!   `S_RETIRE_ST`, `S_RESET_ST` (the last two cleared by reading), polling QEMU for a stop.
//! - `DCRSR`/`DCRDR` (`0xE000EDF4`/`8`): core register transfers as `p`/`P` ([`crate::regsel`]).
//! - `DEMCR` (`0xE000EDFC`): `VC_CORERESET` (halt after reset), `TRCENA` (DWT on) and the
//!   fault vector catches (`VC_HARDERR`, `VC_INTERR`, `VC_BUSERR`, `VC_STATERR`, `VC_CHKERR`,
//!   `VC_NOCPERR`, `VC_MMERR`): a catch enabled is a QEMU breakpoint at the handler the vector
//!   table names (outside the six FPB comparators, as the hardware's catch is), and a stop
//!   there whose `IPSR` is that fault's exception halts with `DFSR.VCATCH`; the same handler
//!   entered for another exception (a shared default handler) is let run on.
//! - `AIRCR` (`0xE000ED0C`) `SYSRESETREQ` with its key: QEMU's `system_reset`.
//! - `DFSR` (`0xE000ED30`): why the core halted, write-one-to-clear.
//! - FPB and DWT ([`crate::fpb`], [`crate::dwt`]): comparators become `Z1` and `Z2`-`Z4`,
//!   inserted when the core is let run and removed when the program removes them.
//! - The ROM table and the CoreSight ID blocks ([`crate::rom`]), and the STM32's `DBGMCU`
//!   (`IDCODE` and the freeze/low-power control words, kept but without effect in QEMU).
//! - The rest of the SCS that QEMU implements (NVIC, SysTick, SCB with `CPUID`, `VTOR`,
//!   `CPACR`, the FP control block with `MVFR0`-`2`) is QEMU's memory.
//!
//! Any other address at or above `0xE0000000` is an error naming it.
//!
//! Like a real AHB-AP, memory can be read while the core runs: QEMU is interrupted for the
//! access and let run again (a stop that happens meanwhile is kept and reported).
//!
//! Single steps are QEMU's, which masks interrupts while stepping: as if `C_MASKINTS` were set,
//! which is what probe-rs asks for anyway.

use std::time::Duration;

use memlife_core::{BreakpointKind, Register, StopReason, Target, TargetError};

use crate::dwt::{Dwt, Watch};
use crate::error::{Access, Capability, Result, VirtualProbeError};
use crate::fpb::Fpb;
use crate::regsel::{RegMap, Source};
use crate::rom::{self, RomTable};

/// `DHCSR`.
pub const DHCSR: u32 = 0xE000_EDF0;
/// `DCRSR`.
pub const DCRSR: u32 = 0xE000_EDF4;
/// `DCRDR`.
pub const DCRDR: u32 = 0xE000_EDF8;
/// `DEMCR`.
pub const DEMCR: u32 = 0xE000_EDFC;
/// `AIRCR`.
pub const AIRCR: u32 = 0xE000_ED0C;
/// `DFSR`.
pub const DFSR: u32 = 0xE000_ED30;
/// STM32 `DBGMCU_IDCODE`; `DBGMCU_CR`, `_APB1_FZ`, `_APB2_FZ` follow.
pub const DBGMCU: u32 = 0xE004_2000;

/// `DFSR` bits.
pub mod dfsr {
    /// Halt request or step.
    pub const HALTED: u32 = 1 << 0;
    /// Breakpoint (FPB or `BKPT`).
    pub const BKPT: u32 = 1 << 1;
    /// DWT match.
    pub const DWTTRAP: u32 = 1 << 2;
    /// Vector catch.
    pub const VCATCH: u32 = 1 << 3;
    /// External debug request.
    pub const EXTERNAL: u32 = 1 << 4;
}

const DBGKEY: u32 = 0xA05F;
const VECTKEY: u32 = 0x05FA;
const SYSRESETREQ: u32 = 1 << 2;
const VC_CORERESET: u32 = 1 << 0;
const TRCENA: u32 = 1 << 24;
/// `DEMCR` fault vector catches and the exceptions each stands for: `VC_MMERR` (MemManage, 4),
/// `VC_NOCPERR`, `VC_CHKERR`, `VC_STATERR` (UsageFault, 6), `VC_BUSERR` (BusFault, 5),
/// `VC_INTERR` and `VC_HARDERR` (HardFault, 3: an error on exception entry or return ends
/// there).
const VC_FAULTS: [(u32, u32); 7] = [
    (1 << 4, 4),
    (1 << 5, 6),
    (1 << 6, 6),
    (1 << 7, 6),
    (1 << 8, 5),
    (1 << 9, 3),
    (1 << 10, 3),
];
/// All of [`VC_FAULTS`]' bits.
const VC_FAULT_BITS: u32 = 0x7f << 4;
/// `VTOR`.
const VTOR: u32 = 0xE000_ED08;
/// `DEMCR` bits the model keeps: `VC_CORERESET`, the fault catches and `TRCENA`. The other
/// catches (`VC_SFERR`) and the debug monitor are not modelled.
const DEMCR_MODELLED: u32 = VC_CORERESET | VC_FAULT_BITS | TRCENA;
/// How long a status read waits for a stop reply before saying "running".
const POLL: Duration = Duration::from_millis(1);

/// Ranges of the SCS that are QEMU's own registers (NVIC, SysTick, SCB, FP control).
const QEMU_SCS: &[(u32, u32)] = &[
    (0xE000_E000, 0xE000_ED30), // ICTR, SysTick, NVIC, SCB up to HFSR
    (0xE000_ED34, 0xE000_ED8C), // MMFAR, BFAR, AFSR, feature IDs, CPACR
    (0xE000_EF00, 0xE000_EF50), // STIR, FPCCR, FPCAR, FPDSCR, MVFR0-2
];

/// What kind of chip the model presents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chip {
    /// The ROM table the MEM-AP's `BASE` points at.
    pub rom: RomTable,
    /// `DBGMCU_IDCODE`, on an STM32.
    pub dbgmcu_idcode: Option<u32>,
}

impl Chip {
    /// An STM32F405 (QEMU's `netduinoplus2`): device 0x413, revision 0x1007.
    pub fn stm32f405() -> Chip {
        Chip {
            rom: RomTable::stm32f4(),
            dbgmcu_idcode: Some(0x1007_6413),
        }
    }
}

#[derive(Debug, Default)]
struct CoreState {
    halted: bool,
    debugen: bool,
    c_halt: bool,
    c_step: bool,
    maskints: bool,
    dfsr: u32,
    dcrdr: u32,
    demcr: u32,
    reset_st: bool,
    retire_st: bool,
    /// nRESET is held low.
    in_reset: bool,
    /// The firmware exited or QEMU went away: every access fails with this.
    gone: Option<Ended>,
}

/// How the firmware ended.
#[derive(Debug, Clone, Copy)]
enum Ended {
    Exited(i32),
    Terminated(u8),
}

impl Ended {
    fn error(self) -> VirtualProbeError {
        match self {
            Ended::Exited(status) => VirtualProbeError::FirmwareExited {
                status,
                ended: TargetError::Exited(status),
            },
            Ended::Terminated(signal) => VirtualProbeError::FirmwareTerminated {
                signal,
                ended: TargetError::Gone(format!("the firmware was terminated by signal {signal}")),
            },
        }
    }
}

/// The system behind the MEM-AP.
pub struct Machine {
    target: Box<dyn Target + Send>,
    regs: RegMap,
    chip: Chip,
    fpb: Fpb,
    dwt: Dwt,
    dbgmcu: [u32; 3],
    core: CoreState,
    applied_bps: Vec<u64>,
    applied_watches: Vec<Watch>,
    /// Vector catches as (handler address, exception number), read from the vector table
    /// when the core is let run.
    catches: Vec<(u64, u32)>,
    /// GDB remote requests made for memory (one per contiguous transfer).
    pub memory_requests: u64,
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Machine")
            .field("target", &self.target.describe())
            .field("halted", &self.core.halted)
            .finish_non_exhaustive()
    }
}

impl Machine {
    /// The model over `target` (a live GDB remote connection), whose register names `regs`
    /// lists. Whether the core is halted is taken from the target.
    pub fn new(mut target: Box<dyn Target + Send>, regs: RegMap, chip: Chip) -> Machine {
        let halted = target.control().is_none_or(|c| c.is_halted());
        Machine {
            target,
            regs,
            chip,
            fpb: Fpb::default(),
            dwt: Dwt::default(),
            dbgmcu: [0; 3],
            core: CoreState {
                halted,
                c_halt: halted,
                ..CoreState::default()
            },
            applied_bps: Vec::new(),
            applied_watches: Vec::new(),
            catches: Vec::new(),
            memory_requests: 0,
        }
    }

    /// The target underneath.
    pub fn target(&mut self) -> &mut (dyn Target + Send) {
        self.target.as_mut()
    }

    /// Base of the ROM table (`BASE` of the MEM-AP).
    pub fn rom_base(&self) -> u32 {
        self.chip.rom.base
    }

    /// Whether the modelled core is halted.
    pub fn is_halted(&self) -> bool {
        self.core.halted
    }

    fn check_alive(&self) -> Result<()> {
        match self.core.gone {
            Some(ended) => Err(ended.error()),
            None => Ok(()),
        }
    }

    // ---- run control -------------------------------------------------------------------

    /// A stop reported by QEMU, recorded as the hardware would: `DFSR`, `S_HALT`, `MATCHED`.
    fn stopped(&mut self, reason: StopReason) {
        let bits = match reason {
            StopReason::Breakpoint(_) | StopReason::Signal(5) if self.caught() => dfsr::VCATCH,
            StopReason::Breakpoint(_) => dfsr::BKPT,
            StopReason::Watchpoint { addr, kind } => {
                self.dwt.hit(addr, kind);
                dfsr::DWTTRAP
            }
            StopReason::Step | StopReason::Halted => dfsr::HALTED,
            // QEMU's SIGTRAP without a breakpoint of ours: a BKPT instruction in the firmware.
            StopReason::Signal(5) => dfsr::BKPT,
            StopReason::Signal(_) => dfsr::EXTERNAL,
            StopReason::Exited(code) => {
                self.core.gone = Some(Ended::Exited(code));
                0
            }
            StopReason::Terminated(sig) => {
                self.core.gone = Some(Ended::Terminated(sig));
                0
            }
        };
        tracing::debug!(?reason, "virtual probe: core stopped");
        self.core.dfsr |= bits;
        self.core.halted = true;
        self.core.c_halt = true;
        self.core.retire_st = true;
    }

    /// While running, looks for a stop reply (at most [`POLL`]).
    fn poll(&mut self) -> Result<()> {
        if self.core.halted || self.core.in_reset || self.core.gone.is_some() {
            return Ok(());
        }
        let ctl = control(self.target.as_mut())?;
        if let Some(reason) = ctl
            .wait_for_stop(POLL)
            .map_err(VirtualProbeError::gdbstub("waiting for the core to stop"))?
        {
            if self.at_other_exception(&reason) {
                // A handler shared with an exception no catch is for: not a debug event.
                return self.continue_from_halt("letting the core run past a shared handler");
            }
            self.stopped(reason);
        }
        Ok(())
    }

    /// The exception number in `IPSR` (0 in thread mode, or when unreadable).
    fn ipsr(&mut self) -> u32 {
        // DCRSR's selector 16 is xPSR.
        self.read_core_register(16).map_or(0, |v| v & 0x1FF)
    }

    /// Whether the core stopped at a vector catch: at a caught handler's first instruction,
    /// not at an FPB comparator, with that handler's exception active.
    fn caught(&mut self) -> bool {
        let Some(pc) = self.catch_pc() else {
            return false;
        };
        let exc = self.ipsr();
        self.catches.iter().any(|&(a, e)| a == pc && e == exc)
    }

    /// The pc when it is at a catch's handler and no FPB comparator.
    fn catch_pc(&mut self) -> Option<u64> {
        if self.catches.is_empty() {
            return None;
        }
        let pc = self.target.read_register(Register::ProgramCounter).ok()?;
        (self.catches.iter().any(|&(a, _)| a == pc) && !self.fpb.breakpoints().contains(&pc))
            .then_some(pc)
    }

    /// A stop at a caught handler's address for an exception no catch is for.
    fn at_other_exception(&mut self, reason: &StopReason) -> bool {
        matches!(reason, StopReason::Breakpoint(_) | StopReason::Signal(5))
            && self.catch_pc().is_some()
            && !self.caught()
    }

    /// Reads the handlers of the enabled fault catches from the vector table (`VTOR`).
    fn refresh_catches(&mut self) -> Result<()> {
        self.catches.clear();
        let enabled = self.core.demcr & VC_FAULT_BITS;
        if enabled == 0 {
            return Ok(());
        }
        let mut word = [0u8; 4];
        self.read_qemu(VTOR, &mut word)?;
        let vtor = u32::from_le_bytes(word) & !0x7F;
        for (bit, exc) in VC_FAULTS {
            if enabled & bit == 0 || self.catches.iter().any(|&(_, e)| e == exc) {
                continue;
            }
            self.read_qemu(vtor + 4 * exc, &mut word)?;
            let handler = u64::from(u32::from_le_bytes(word) & !1);
            self.catches.push((handler, exc));
        }
        Ok(())
    }

    fn halt(&mut self) -> Result<()> {
        let reason = control(self.target.as_mut())?
            .halt()
            .map_err(VirtualProbeError::gdbstub("halting the core (C_HALT)"))?;
        self.stopped(reason);
        Ok(())
    }

    /// Leaves debug state: one instruction (`C_STEP`) or until the next debug event.
    fn run(&mut self, step: bool) -> Result<()> {
        self.sync_points(step)?;
        self.core.c_halt = false;
        self.core.retire_st = true;
        if step {
            let reason = control(self.target.as_mut())?
                .step()
                .map_err(VirtualProbeError::gdbstub("stepping the core (C_STEP)"))?;
            self.stopped(reason);
            return Ok(());
        }
        self.continue_from_halt("letting the core run (C_HALT cleared)")
    }

    /// Lets a halted QEMU run on. An enabled comparator at the pc matches before the
    /// instruction runs: the core halts again at once, as an FPB does (QEMU would step over
    /// its own breakpoint).
    fn continue_from_halt(&mut self, what: &'static str) -> Result<()> {
        if self.core.debugen && !self.applied_bps.is_empty() {
            let pc = self
                .target
                .read_register(Register::ProgramCounter)
                .map_err(VirtualProbeError::gdbstub("reading the pc"))?;
            if self.fpb.breakpoints().contains(&pc) {
                self.stopped(StopReason::Breakpoint(pc));
                return Ok(());
            }
        }
        control(self.target.as_mut())?
            .resume()
            .map_err(VirtualProbeError::gdbstub(what))?;
        self.core.halted = false;
        Ok(())
    }

    /// Comparators changed while the core runs: like the hardware they act at once, so QEMU is
    /// paused to insert or remove its points and let run again.
    fn sync_while_running(&mut self) -> Result<()> {
        if self.core.halted || self.core.in_reset || self.core.gone.is_some() {
            return Ok(());
        }
        let (bps, watches) = self.wanted_points();
        if bps == self.applied_bps && watches == self.applied_watches {
            return Ok(());
        }
        let reason = control(self.target.as_mut())?
            .halt()
            .map_err(VirtualProbeError::gdbstub(
                "pausing the core to change a comparator",
            ))?;
        self.core.halted = true;
        let synced = self.sync_points(false);
        if reason == StopReason::Halted {
            self.continue_from_halt("letting the core run after changing a comparator")?;
        } else {
            self.stopped(reason);
        }
        synced
    }

    /// The breakpoints and watchpoints the FPB and DWT stand for now.
    fn wanted_points(&self) -> (Vec<u64>, Vec<Watch>) {
        if !self.core.debugen {
            return (Vec::new(), Vec::new());
        }
        let trcena = self.core.demcr & TRCENA != 0;
        let mut bps = self.fpb.breakpoints();
        // Vector catch acts with C_DEBUGEN alone, whatever the FPB's enable.
        bps.extend(self.catches.iter().map(|&(a, _)| a));
        bps.sort_unstable();
        bps.dedup();
        (bps, self.dwt.watches(trcena))
    }

    /// Makes QEMU's breakpoints and watchpoints what the FPB and DWT say. For a single step the
    /// breakpoints are left as they are: a step ends after one instruction whatever they are,
    /// and QEMU steps over one at the pc.
    fn sync_points(&mut self, step: bool) -> Result<()> {
        let (want_bps, want_watches) = self.wanted_points();
        if !step && want_bps != self.applied_bps {
            let bps = self
                .target
                .breakpoints()
                .ok_or(VirtualProbeError::TargetLacks(Capability::Breakpoints))?;
            for &a in self.applied_bps.iter().filter(|a| !want_bps.contains(a)) {
                bps.remove_breakpoint(a, BreakpointKind::Hardware).map_err(
                    VirtualProbeError::gdbstub(format!("removing the breakpoint at {a:#010x}")),
                )?;
            }
            for &a in want_bps.iter().filter(|a| !self.applied_bps.contains(a)) {
                bps.add_breakpoint(a, BreakpointKind::Hardware).map_err(
                    VirtualProbeError::gdbstub(format!("inserting a breakpoint at {a:#010x}")),
                )?;
            }
            self.applied_bps = want_bps;
        }
        if want_watches != self.applied_watches {
            let wps = self
                .target
                .watchpoints()
                .ok_or(VirtualProbeError::TargetLacks(Capability::Watchpoints))?;
            for w in self
                .applied_watches
                .iter()
                .filter(|w| !want_watches.contains(w))
            {
                wps.remove_watchpoint(w.addr, w.len, w.kind).map_err(
                    VirtualProbeError::gdbstub(format!(
                        "removing the watchpoint at {:#010x}",
                        w.addr
                    )),
                )?;
            }
            for w in want_watches
                .iter()
                .filter(|w| !self.applied_watches.contains(w))
            {
                wps.add_watchpoint(w.addr, w.len, w.kind)
                    .map_err(VirtualProbeError::gdbstub(format!(
                        "inserting a watchpoint at {:#010x}",
                        w.addr
                    )))?;
            }
            self.applied_watches = want_watches;
        }
        Ok(())
    }

    /// A system reset (`AIRCR.SYSRESETREQ` or nRESET released): QEMU's `system_reset`, then
    /// halted at the reset vector with `DFSR.VCATCH` when `DEMCR.VC_CORERESET` is set, running
    /// otherwise. The FPB and DWT keep their settings (they are reset by power-on only).
    pub fn system_reset(&mut self) -> Result<()> {
        self.check_alive()?;
        control(self.target.as_mut())?
            .reset(true)
            .map_err(VirtualProbeError::gdbstub("resetting the system"))?;
        self.core.reset_st = true;
        self.core.in_reset = false;
        self.core.halted = true;
        if self.core.demcr & VC_CORERESET != 0 {
            self.core.c_halt = true;
            self.core.dfsr |= dfsr::VCATCH;
            Ok(())
        } else {
            self.run(false)
        }
    }

    /// nRESET driven low (`true`) or released (`false`).
    pub fn set_reset_pin(&mut self, low: bool) -> Result<()> {
        if low == self.core.in_reset {
            return Ok(());
        }
        if low {
            self.check_alive()?;
            if !self.core.halted {
                // Held in reset the core executes nothing: freeze QEMU.
                let reason = control(self.target.as_mut())?
                    .halt()
                    .map_err(VirtualProbeError::gdbstub("holding the core in reset"))?;
                let _ = reason;
            }
            self.core.halted = false;
            self.core.c_halt = false;
            self.core.in_reset = true;
            Ok(())
        } else {
            self.system_reset()
        }
    }

    /// Runs `f` on the target with the core stopped: a running core is interrupted for it and
    /// let run again, unless it stopped for a reason of its own meanwhile.
    fn paused<T>(&mut self, f: impl FnOnce(&mut (dyn Target + Send)) -> Result<T>) -> Result<T> {
        self.check_alive()?;
        if self.core.halted || self.core.in_reset {
            return f(self.target.as_mut());
        }
        let reason = control(self.target.as_mut())?
            .halt()
            .map_err(VirtualProbeError::gdbstub(
                "pausing the core for a memory access",
            ))?;
        let out = f(self.target.as_mut());
        if reason == StopReason::Halted {
            self.core.halted = true;
            self.continue_from_halt("letting the core run after a memory access")?;
        } else {
            self.stopped(reason);
        }
        out
    }

    // ---- core registers ----------------------------------------------------------------

    fn read_core_register(&mut self, sel: u8) -> Result<u32> {
        let t = self.target.as_mut();
        let read = |t: &mut (dyn Target + Send), n: u16| {
            t.read_register(Register::Numbered(n))
                .map_err(core_register_error(Access::Read, sel))
        };
        Ok(match self.regs.source(sel)? {
            Source::Reg(n) => read(t, n)? as u32,
            Source::Half { reg, high } => {
                let d = read(t, reg)?;
                if high { (d >> 32) as u32 } else { d as u32 }
            }
            Source::Packed(nums) => {
                let mut v = 0u32;
                for (i, n) in nums.into_iter().enumerate() {
                    v |= (read(t, n)? as u32 & 0xFF) << (8 * i);
                }
                v
            }
        })
    }

    fn write_core_register(&mut self, sel: u8, value: u32) -> Result<()> {
        let t = self.target.as_mut();
        let write = |t: &mut (dyn Target + Send), n: u16, v: u64| {
            t.write_register(Register::Numbered(n), v)
                .map_err(core_register_error(Access::Write, sel))
        };
        match self.regs.source(sel)? {
            Source::Reg(n) => write(t, n, u64::from(value)),
            Source::Half { reg, high } => {
                let d = t
                    .read_register(Register::Numbered(reg))
                    .map_err(core_register_error(Access::Read, sel))?;
                let v = if high {
                    (d & 0xFFFF_FFFF) | u64::from(value) << 32
                } else {
                    (d & !0xFFFF_FFFF) | u64::from(value)
                };
                write(t, reg, v)
            }
            Source::Packed(nums) => {
                for (i, n) in nums.into_iter().enumerate() {
                    write(t, n, u64::from((value >> (8 * i)) & 0xFF))?;
                }
                Ok(())
            }
        }
    }

    // ---- the debug registers -----------------------------------------------------------

    fn read_dhcsr(&mut self) -> Result<u32> {
        self.poll()?;
        let c = &mut self.core;
        let mut v = u32::from(c.debugen)
            | u32::from(c.c_halt) << 1
            | u32::from(c.c_step) << 2
            | u32::from(c.maskints) << 3
            | 1 << 16; // S_REGRDY: every transfer completes before the next access
        if c.halted {
            v |= 1 << 17;
        }
        if c.retire_st && !c.in_reset {
            v |= 1 << 24;
        }
        if c.reset_st || c.in_reset {
            v |= 1 << 25;
        }
        c.retire_st = false;
        c.reset_st = false;
        Ok(v)
    }

    fn write_dhcsr(&mut self, value: u32) -> Result<()> {
        if value >> 16 != DBGKEY {
            return Ok(()); // without the key the write is ignored, as on hardware
        }
        let debugen = value & 1 != 0;
        let halt = value & 2 != 0;
        let step = value & 4 != 0;
        let was_on = self.core.debugen;
        self.core.maskints = value & 8 != 0;
        self.core.debugen = debugen;
        if debugen && !was_on {
            // The write that turns halting debug on changes no run state: the other control
            // bits act from the next write (a core caught at reset stays caught).
            self.core.c_halt = self.core.halted;
            return Ok(());
        }
        if !debugen {
            // Halting debug off: C_HALT and C_STEP read 0; a halted core stays halted until
            // the debugger lets it run, which memlife always does before letting go.
            self.core.c_halt = false;
            self.core.c_step = false;
            return Ok(());
        }
        self.core.c_step = step;
        self.poll()?;
        if self.core.halted {
            if !halt && !self.core.in_reset {
                return self.run(step);
            }
            self.core.c_halt = true;
        } else if halt && !self.core.in_reset {
            self.halt()?;
        }
        Ok(())
    }

    fn write_dcrsr(&mut self, value: u32) -> Result<()> {
        if !self.core.halted {
            return Err(VirtualProbeError::CoreRunning { dcrsr: value });
        }
        let sel = (value & 0x7F) as u8;
        if value & (1 << 16) != 0 {
            let v = self.core.dcrdr;
            self.write_core_register(sel, v)
        } else {
            self.core.dcrdr = self.read_core_register(sel)?;
            Ok(())
        }
    }

    fn write_demcr(&mut self, value: u32) -> Result<()> {
        if value & !DEMCR_MODELLED != 0 {
            return Err(VirtualProbeError::DemcrBits {
                value,
                unmodelled: value & !DEMCR_MODELLED,
            });
        }
        let catches_changed = (self.core.demcr ^ value) & VC_FAULT_BITS != 0;
        self.core.demcr = value;
        if catches_changed {
            // Read once here, not at every resume: the handlers are where the vector table
            // said when the catch was enabled.
            self.refresh_catches()?;
            self.sync_while_running()?;
        }
        Ok(())
    }

    fn write_aircr(&mut self, value: u32) -> Result<()> {
        if value >> 16 == VECTKEY && value & SYSRESETREQ != 0 {
            return self.system_reset();
        }
        self.write_qemu(AIRCR, &value.to_le_bytes())
    }

    // ---- the bus -----------------------------------------------------------------------

    fn read_qemu(&mut self, addr: u32, buf: &mut [u8]) -> Result<()> {
        self.memory_requests += 1;
        self.paused(|t| {
            t.read(u64::from(addr), buf)
                .map_err(|source| VirtualProbeError::Memory {
                    access: Access::Read,
                    addr,
                    len: buf.len(),
                    source,
                })
        })
    }

    fn write_qemu(&mut self, addr: u32, data: &[u8]) -> Result<()> {
        self.memory_requests += 1;
        self.paused(|t| {
            t.memory_write()
                .ok_or(VirtualProbeError::TargetLacks(Capability::MemoryWrite))?
                .write(u64::from(addr), data)
                .map_err(|source| VirtualProbeError::Memory {
                    access: Access::Write,
                    addr,
                    len: data.len(),
                    source,
                })
        })
    }

    fn id_register(&self, addr: u32) -> Option<u32> {
        [rom::SCS, rom::DWT, rom::FPB, rom::ITM]
            .iter()
            .find(|c| (c.base + 0xFD0..c.base + 0x1000).contains(&addr))
            .and_then(|c| c.ident.register(addr - c.base))
    }

    fn in_dbgmcu(&self, addr: u32) -> Option<usize> {
        self.chip.dbgmcu_idcode?;
        let off = addr.checked_sub(DBGMCU)?;
        (off % 4 == 0 && off <= 0xC).then_some((off / 4) as usize)
    }

    fn is_qemu_scs(addr: u32) -> bool {
        QEMU_SCS.iter().any(|&(lo, hi)| (lo..hi).contains(&addr))
    }

    /// Reads one word at an aligned address.
    pub fn read_word(&mut self, addr: u32) -> Result<u32> {
        self.check_alive()?;
        if addr < 0xE000_0000 || Self::is_qemu_scs(addr) {
            let mut b = [0u8; 4];
            self.read_qemu(addr, &mut b)?;
            return Ok(u32::from_le_bytes(b));
        }
        match addr {
            DHCSR => return self.read_dhcsr(),
            DCRDR => return Ok(self.core.dcrdr),
            DEMCR => return Ok(self.core.demcr),
            DFSR => return Ok(self.core.dfsr),
            DCRSR => {
                return Err(VirtualProbeError::WriteOnly {
                    name: "DCRSR",
                    addr,
                });
            }
            _ => {}
        }
        if Fpb::contains(addr) {
            return Ok(self.fpb.read(addr));
        }
        if Dwt::contains(addr) {
            return Ok(self.dwt.read(addr)?);
        }
        if let Some(v) = self.id_register(addr) {
            return Ok(v);
        }
        if (self.chip.rom.base..self.chip.rom.base + 0x1000).contains(&addr) {
            return self
                .chip
                .rom
                .read(addr)
                .ok_or(VirtualProbeError::NotRomTableRegister {
                    addr,
                    offset: addr - self.chip.rom.base,
                });
        }
        if let Some(i) = self.in_dbgmcu(addr) {
            return Ok(match i {
                0 => self.chip.dbgmcu_idcode.unwrap_or(0),
                n => self.dbgmcu[n - 1],
            });
        }
        Err(VirtualProbeError::UnmodelledAddress { addr })
    }

    /// Writes one word at an aligned address.
    pub fn write_word(&mut self, addr: u32, value: u32) -> Result<()> {
        self.check_alive()?;
        if addr == AIRCR {
            return self.write_aircr(value);
        }
        if addr < 0xE000_0000 || Self::is_qemu_scs(addr) {
            return self.write_qemu(addr, &value.to_le_bytes());
        }
        match addr {
            DHCSR => return self.write_dhcsr(value),
            DCRSR => return self.write_dcrsr(value),
            DCRDR => {
                self.core.dcrdr = value;
                return Ok(());
            }
            DEMCR => {
                self.write_demcr(value)?;
                return self.sync_while_running();
            }
            DFSR => {
                self.core.dfsr &= !value;
                return Ok(());
            }
            _ => {}
        }
        if Fpb::contains(addr) {
            self.fpb.write(addr, value)?;
            return self.sync_while_running();
        }
        if Dwt::contains(addr) {
            self.dwt.write(addr, value)?;
            return self.sync_while_running();
        }
        if let Some(i) = self.in_dbgmcu(addr) {
            if i == 0 {
                return Err(VirtualProbeError::ReadOnly {
                    name: "DBGMCU_IDCODE",
                    addr,
                });
            }
            self.dbgmcu[i - 1] = value;
            return Ok(());
        }
        if self.id_register(addr).is_some()
            || (self.chip.rom.base..self.chip.rom.base + 0x1000).contains(&addr)
        {
            return Err(VirtualProbeError::IdentificationRegister { addr });
        }
        Err(VirtualProbeError::UnmodelledAddress { addr })
    }

    /// Reads `out.len()` words from `addr` on: one `m` for plain memory, as a probe's
    /// auto-incrementing block transfer is one request.
    pub fn read_words(&mut self, addr: u32, out: &mut [u32]) -> Result<()> {
        let end = u64::from(addr) + 4 * out.len() as u64;
        if end <= 0xE000_0000 {
            let mut bytes = vec![0u8; out.len() * 4];
            self.read_qemu(addr, &mut bytes)?;
            for (w, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
            return Ok(());
        }
        for (i, w) in out.iter_mut().enumerate() {
            *w = self.read_word(addr + 4 * i as u32)?;
        }
        Ok(())
    }

    /// Writes words from `addr` on, one `M` for plain memory.
    pub fn write_words(&mut self, addr: u32, data: &[u32]) -> Result<()> {
        let end = u64::from(addr) + 4 * data.len() as u64;
        if end <= 0xE000_0000 {
            let bytes: Vec<u8> = data.iter().flat_map(|w| w.to_le_bytes()).collect();
            return self.write_qemu(addr, &bytes);
        }
        for (i, &w) in data.iter().enumerate() {
            self.write_word(addr + 4 * i as u32, w)?;
        }
        Ok(())
    }

    /// A byte or halfword access (`len` 1 or 2) to plain memory or QEMU's SCS registers; the
    /// modelled debug registers take words only.
    pub fn read_narrow(&mut self, addr: u32, len: usize) -> Result<u32> {
        self.check_alive()?;
        if addr < 0xE000_0000 || Self::is_qemu_scs(addr) {
            let mut b = [0u8; 4];
            self.read_qemu(addr, &mut b[..len])?;
            return Ok(u32::from_le_bytes(b));
        }
        Err(VirtualProbeError::NarrowAccess {
            addr,
            len,
            access: Access::Read,
        })
    }

    /// See [`Machine::read_narrow`].
    pub fn write_narrow(&mut self, addr: u32, len: usize, value: u32) -> Result<()> {
        self.check_alive()?;
        if addr < 0xE000_0000 || Self::is_qemu_scs(addr) {
            return self.write_qemu(addr, &value.to_le_bytes()[..len]);
        }
        Err(VirtualProbeError::NarrowAccess {
            addr,
            len,
            access: Access::Write,
        })
    }
}

fn control(t: &mut (dyn Target + Send)) -> Result<&mut dyn memlife_core::Control> {
    t.control()
        .ok_or(VirtualProbeError::TargetLacks(Capability::RunControl))
}

/// A failed core register transfer, naming the `DCRSR.REGSEL` selector.
fn core_register_error(access: Access, selector: u8) -> impl Fn(TargetError) -> VirtualProbeError {
    move |source| VirtualProbeError::CoreRegister {
        access,
        selector,
        source,
    }
}
