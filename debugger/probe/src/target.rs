//! [`ProbeTarget`]: the `memlife-core` traits over a probe-rs [`Session`].
//!
//! Core 0 is the core memlife reads registers from, breaks on and steps. On a multi-core chip
//! (ESP32-S3: PRO and APP CPU share the heap) every other core is halted whenever core 0 stops
//! or is halted, and resumed with it, so a heap walk never races an allocation on another core.
//! Breakpoints are set on core 0 only: allocations made by code running on the other core are
//! not traced (their effect is still in every heap walk).

use std::time::Duration;

use memlife_core::cortex_m;
use memlife_core::limits::Deadline;
use memlife_core::{
    BreakpointKind, Breakpoints, Control, LinkStats, Memory, MemoryWrite, Register, Registers,
    Result, StopReason, Target, TargetError, WatchKind, Watchpoints,
};
use probe_rs::{
    Core, CoreStatus, CoreType, HaltReason, MemoryInterface, Permissions, RegisterId,
    RegisterValue, Session,
};

use crate::chip::{ChipInfo, registry, resolve_chip};
use crate::dwt::{Dwt, DwtVersion, WordAccess};
use crate::error::{memory_error, target_error};
use crate::hwbp::HwBreakpoints;
use crate::{ProbeError, ProbeOptions, words};

/// How long a halt request may take before the core is declared unresponsive.
const HALT_TIMEOUT: Duration = Duration::from_millis(500);
/// How often a running core's status is polled while waiting for it to stop, at most: the
/// pauses start at [`FIRST_PAUSE`] and double up to this, so that a stop soon after a resume
/// (a traced allocator call) is seen within a fraction of a millisecond, and a long run costs a
/// status read per 5 ms.
const POLL: Duration = Duration::from_millis(5);
/// Cortex-M `DEMCR`.
const DEMCR: u64 = 0xE000_EDFC;
/// `DEMCR`'s fault vector catches: `VC_MMERR` (4), `VC_NOCPERR` (5), `VC_CHKERR` (6),
/// `VC_STATERR` (7), `VC_BUSERR` (8), `VC_INTERR` (9), `VC_HARDERR` (10).
const VC_FAULTS: u32 = 0x7f << 4;
/// The first pause between status reads after a resume.
const FIRST_PAUSE: Duration = Duration::from_micros(100);

mod reattach;

/// Opens the target's probe again (the same USB probe, a new virtual probe over the same QEMU),
/// for a re-attach after a failed reset (see `reattach`).
pub type Reopen =
    Box<dyn FnMut() -> std::result::Result<probe_rs::probe::Probe, ProbeError> + Send>;

/// A board behind a debug probe.
pub struct ProbeTarget {
    /// `None` only while a re-attach replaces it (see `reattach`).
    session: Option<Session>,
    chip: ChipInfo,
    probe: String,
    /// What it was opened with, for a re-attach.
    options: ProbeOptions,
    /// How to open the probe again when a reset fails (see `reattach`).
    reopen: Option<Reopen>,
    halted: bool,
    breakpoints: HwBreakpoints,
    dwt: Option<Dwt>,
    stats: LinkStats,
}

impl std::fmt::Debug for ProbeTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProbeTarget")
            .field("chip", &self.chip)
            .field("probe", &self.probe)
            .field("halted", &self.halted)
            .finish_non_exhaustive()
    }
}

/// Attaches to `opts.chip` through `probe` (named `probe_name` in messages), at `--speed`,
/// under reset when asked; the session and the chip it resolved (the registry is built once).
fn attach_session(
    mut probe: probe_rs::probe::Probe,
    probe_name: &str,
    opts: &ProbeOptions,
) -> std::result::Result<(Session, ChipInfo), ProbeError> {
    let registry = registry();
    let chip = resolve_chip(&registry, &opts.chip)?;
    if let Some(khz) = opts.speed_khz {
        probe.set_speed(khz).map_err(|e| {
            probe_err(format!("probe {probe_name} refuses --speed {khz}"))(e.into())
        })?;
    }
    let how = if opts.connect_under_reset {
        "attaching under reset"
    } else {
        "attaching"
    };
    let context = format!("{how} to {} through {probe_name}", chip.name);
    let session = if opts.connect_under_reset {
        probe.attach_under_reset_with_registry(chip.name.as_str(), Permissions::new(), &registry)
    } else {
        probe.attach_with_registry(chip.name.as_str(), Permissions::new(), &registry)
    }
    .map_err(probe_err(context))?;
    Ok((session, chip))
}

fn probe_err(context: impl Into<String>) -> impl FnOnce(probe_rs::Error) -> ProbeError {
    let context = context.into();
    move |source| ProbeError::Probe { context, source }
}

impl ProbeTarget {
    /// Validates the chip, finds the probe, attaches. Attaching does not reset or halt the
    /// target: a running device is audited as it runs. With `connect_under_reset` the chip is
    /// reset while the probe connects and then let run from its reset vector.
    pub fn open(opts: &ProbeOptions) -> std::result::Result<ProbeTarget, ProbeError> {
        // A wrong chip name is said before looking for probes.
        resolve_chip(&registry(), &opts.chip)?;
        let info = crate::list::choose(opts.probe.as_ref())?;
        let probe_name = format!(
            "{} ({:04x}:{:04x})",
            info.identifier, info.vendor_id, info.product_id
        );
        let name = probe_name.clone();
        // The same probe (its serial when it has one), opened again for a re-attach.
        let open = move || {
            info.open()
                .map_err(|e| probe_err(format!("cannot open probe {name}"))(e.into()))
        };
        let probe = open()?;
        let mut target = Self::attach(probe, probe_name, opts)?;
        target.set_reopen(Box::new(open));
        Ok(target)
    }

    /// Attaches through a probe already opened (a USB probe, or one probe-rs does not list,
    /// such as a virtual one), named `probe_name` in messages. `opts.probe` is not used.
    pub fn attach(
        probe: probe_rs::probe::Probe,
        probe_name: String,
        opts: &ProbeOptions,
    ) -> std::result::Result<ProbeTarget, ProbeError> {
        let (session, chip) = attach_session(probe, &probe_name, opts)?;
        let mut target = ProbeTarget {
            session: Some(session),
            chip,
            probe: probe_name,
            options: opts.clone(),
            reopen: None,
            halted: false,
            breakpoints: HwBreakpoints::default(),
            dwt: None,
            stats: LinkStats::default(),
        };
        let (halted, units, core_type) = {
            let mut core = target.core0().map_err(|source| ProbeError::Target {
                context: "opening core 0".into(),
                source,
            })?;
            let halted = core
                .core_halted()
                .map_err(probe_err("reading core 0 status"))?;
            let units = core
                .available_breakpoint_units()
                .map_err(probe_err("counting breakpoint units"))?;
            (halted, units, core.core_type())
        };
        target.halted = halted;
        target.breakpoints = HwBreakpoints::new(units);
        target.dwt = dwt_version(core_type).map(Dwt::new);
        if opts.connect_under_reset && halted {
            // probe-rs leaves the core caught at the reset vector; let the firmware start, so a
            // target attached under reset behaves like any other running one.
            Control::resume(&mut target).map_err(|source| ProbeError::Target {
                context: "starting the firmware after attaching under reset".into(),
                source,
            })?;
        }
        tracing::info!(
            chip = target.chip.name,
            probe = target.probe,
            halted,
            breakpoints = units,
            "attached"
        );
        Ok(target)
    }

    /// The chip this session is attached to.
    pub fn chip(&self) -> &ChipInfo {
        &self.chip
    }

    fn session(&mut self) -> Result<&mut Session> {
        self.session.as_mut().ok_or_else(|| {
            TargetError::Gone(format!(
                "the session through {} was lost when attaching again failed",
                self.probe
            ))
        })
    }

    fn core0(&mut self) -> Result<Core<'_>> {
        self.session()?
            .core(0)
            .map_err(|e| target_error("opening core 0", e))
    }

    /// One reset through probe-rs, halted at the reset vector when `halt`.
    fn reset_once(&mut self, halt: bool) -> Result<()> {
        {
            let mut core = self.core0()?;
            if halt {
                core.reset_and_halt(HALT_TIMEOUT)
                    .map_err(|e| target_error("resetting core 0", e))?;
            } else {
                core.reset()
                    .map_err(|e| target_error("resetting core 0", e))?;
            }
        }
        if halt {
            self.halt_other_cores()?;
        }
        self.halted = halt;
        Ok(())
    }

    fn core_type(&self) -> Option<CoreType> {
        self.chip.core_type()
    }

    fn is_cortex_m(&self) -> bool {
        self.core_type().is_some_and(|t| t.is_cortex_m())
    }

    /// Halts every core other than 0 (multi-core chips share the heap).
    fn halt_other_cores(&mut self) -> Result<()> {
        let session = self.session()?;
        for (i, _) in session.list_cores().into_iter().skip(1) {
            match session.core(i) {
                Ok(mut core) => {
                    if !core
                        .core_halted()
                        .map_err(|e| target_error("reading core status", e))?
                    {
                        core.halt(HALT_TIMEOUT)
                            .map_err(|e| target_error("halting a secondary core", e))?;
                    }
                }
                // A core the firmware has not started (ESP32-S3 APP CPU in single-core builds).
                Err(probe_rs::Error::CoreDisabled(_)) => {}
                Err(e) => return Err(target_error("opening a secondary core", e)),
            }
        }
        Ok(())
    }

    fn resume_other_cores(&mut self) -> Result<()> {
        let session = self.session()?;
        for (i, _) in session.list_cores().into_iter().skip(1) {
            match session.core(i) {
                Ok(mut core) => {
                    if core
                        .core_halted()
                        .map_err(|e| target_error("reading core status", e))?
                    {
                        core.run()
                            .map_err(|e| target_error("resuming a secondary core", e))?;
                    }
                }
                Err(probe_rs::Error::CoreDisabled(_)) => {}
                Err(e) => return Err(target_error("opening a secondary core", e)),
            }
        }
        Ok(())
    }

    /// On Cortex-M memlife speaks gdb's numbering, as its GDB server does
    /// ([`cortex_m::probe_rs_number`] translates). On Xtensa (ESP32-S3) there is no gdb
    /// numbering to honour: roles map to probe-rs's own role registers (pc, a1 as sp, a0 as
    /// return address, a2.. as arguments and a2 as return value under the windowed ABI as
    /// probe-rs describes it) and `Numbered(n)` is probe-rs's n-th core register.
    fn register_id(&mut self, reg: Register) -> Result<RegisterId> {
        if self.is_cortex_m() {
            return cortex_m::probe_rs_role(reg)
                .map(RegisterId)
                .ok_or(TargetError::Unsupported("this register number on Cortex-M"));
        }
        let core = self.core0()?;
        let regs = core.registers();
        let found = match reg {
            Register::ProgramCounter => Some(core.program_counter()),
            Register::StackPointer => Some(core.stack_pointer()),
            Register::ReturnAddress => Some(core.return_address()),
            Register::Argument(n) => regs.get_argument_register(usize::from(n)),
            Register::ReturnValue => regs.get_result_register(0),
            Register::Numbered(n) => regs.get_core_register(usize::from(n)),
        };
        found
            .map(|r| r.id())
            .ok_or(TargetError::Unsupported("this register on this core"))
    }

    /// Why core 0 is halted, as memlife's callers want to hear it.
    fn stop_reason(&mut self, reason: HaltReason) -> Result<StopReason> {
        let pc = self.read_register(Register::ProgramCounter)?;
        let at_breakpoint = self.breakpoints.contains(pc);
        // Reading the DWT clears MATCHED, so only after a halt it can explain.
        let watch = match reason {
            HaltReason::Watchpoint => self.watch_hit()?,
            HaltReason::Multiple if !at_breakpoint => self.watch_hit()?,
            _ => None,
        };
        Ok(classify(reason, pc, at_breakpoint, watch))
    }

    fn watch_hit(&mut self) -> Result<Option<(u64, WatchKind)>> {
        let Some(mut dwt) = self.dwt.take() else {
            return Ok(None);
        };
        let hit = if dwt.any() {
            let mut core = self.core0()?;
            dwt.matched(&mut CoreWords(&mut core))
        } else {
            Ok(None)
        };
        self.dwt = Some(dwt);
        hit
    }

    fn note_read(&mut self, len: usize) {
        self.stats.reads += 1;
        self.stats.bytes += len as u64;
        self.stats.max_read = self.stats.max_read.max(len as u64);
    }
}

/// A probe-rs halt reason as a memlife stop: `at_breakpoint` says whether the PC is at one of
/// memlife's breakpoints, `watch` which watchpoint's comparator fired, if any.
pub fn classify(
    reason: HaltReason,
    pc: u64,
    at_breakpoint: bool,
    watch: Option<(u64, WatchKind)>,
) -> StopReason {
    let watch_or_trap = |w: Option<(u64, WatchKind)>| match w {
        Some((addr, kind)) => StopReason::Watchpoint { addr, kind },
        None => StopReason::Signal(5),
    };
    match reason {
        HaltReason::Breakpoint(_) => StopReason::Breakpoint(pc),
        HaltReason::Watchpoint => watch_or_trap(watch),
        HaltReason::Step => StopReason::Step,
        // A step that lands on a breakpoint reports both; the breakpoint is what matters.
        HaltReason::Multiple if at_breakpoint => StopReason::Breakpoint(pc),
        HaltReason::Multiple => watch_or_trap(watch),
        HaltReason::Exception => StopReason::Signal(5),
        // A halt probe-rs cannot attribute, at one of ours: report the breakpoint, so that
        // run-to logic counts it.
        HaltReason::Request | HaltReason::External | HaltReason::Unknown if at_breakpoint => {
            StopReason::Breakpoint(pc)
        }
        HaltReason::Request | HaltReason::External | HaltReason::Unknown => StopReason::Halted,
    }
}

/// The DWT version of a core type; `None` where there is no DWT to program.
pub fn dwt_version(core_type: CoreType) -> Option<DwtVersion> {
    match core_type {
        CoreType::Armv6m | CoreType::Armv7m | CoreType::Armv7em => Some(DwtVersion::V7m),
        CoreType::Armv8m => Some(DwtVersion::V8m),
        _ => None,
    }
}

/// Debug register access through a probe-rs core.
struct CoreWords<'a, 'p>(&'a mut Core<'p>);

impl WordAccess for CoreWords<'_, '_> {
    fn read_word(&mut self, addr: u64) -> Result<u32> {
        self.0
            .read_word_32(addr)
            .map_err(|e| memory_error(addr, 4, e))
    }

    fn write_word(&mut self, addr: u64, value: u32) -> Result<()> {
        self.0
            .write_word_32(addr, value)
            .map_err(|e| memory_error(addr, 4, e))
    }
}

fn register_u64(v: RegisterValue) -> Result<u64> {
    match v {
        RegisterValue::U32(v) => Ok(u64::from(v)),
        RegisterValue::U64(v) => Ok(v),
        RegisterValue::U128(_) => Err(TargetError::Unsupported("128-bit registers")),
    }
}

impl Memory for ProbeTarget {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let window = words::window(addr, buf.len());
        let mut data = vec![0u32; window.words];
        {
            let mut core = self.core0()?;
            core.read_32(window.start, &mut data)
                .map_err(|e| memory_error(addr, buf.len(), e))?;
        }
        words::cut(&data, window.offset, buf);
        self.note_read(window.words * 4);
        Ok(())
    }
}

impl MemoryWrite for ProbeTarget {
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<()> {
        let mut core = self.core0()?;
        for (a, bytes) in words::split_write(addr, data) {
            if bytes.is_empty() {
                continue;
            }
            let res = if a.is_multiple_of(4) && bytes.len().is_multiple_of(4) {
                core.write_32(a, &words::to_words(bytes))
            } else {
                core.write_8(a, bytes)
            };
            res.map_err(|e| memory_error(a, bytes.len(), e))?;
        }
        core.flush().map_err(|e| memory_error(addr, data.len(), e))
    }
}

impl Registers for ProbeTarget {
    fn read_register(&mut self, reg: Register) -> Result<u64> {
        let id = self.register_id(reg)?;
        let mut core = self.core0()?;
        let v: RegisterValue = core
            .read_core_reg(id)
            .map_err(|e| target_error("reading a register", e))?;
        register_u64(v)
    }

    fn write_register(&mut self, reg: Register, value: u64) -> Result<()> {
        let id = self.register_id(reg)?;
        let v = u32::try_from(value).map_err(|_| {
            TargetError::Rejected(format!("{value:#x} does not fit a 32-bit register"))
        })?;
        let mut core = self.core0()?;
        core.write_core_reg(id, RegisterValue::U32(v))
            .map_err(|e| target_error("writing a register", e))
    }

    fn read_all_registers(&mut self) -> Result<Vec<(String, u64)>> {
        let cortex_m = self.is_cortex_m();
        let mut core = self.core0()?;
        let mut out = Vec::new();
        if cortex_m {
            for (name, id) in cortex_m::PROBE_RS_SNAPSHOT_REGISTERS {
                let v: RegisterValue = match core.read_core_reg(RegisterId(id)) {
                    Ok(v) => v,
                    // The banked stack pointers are extras (the active one is `sp`): a debug
                    // port that cannot reach them (QEMU 7.2's gdbstub behind the virtual
                    // probe) gives a snapshot without them, as the gdb-remote backend does.
                    Err(e) if matches!(name, "msp" | "psp") => {
                        tracing::debug!(register = name, error = %e, "skipping register");
                        continue;
                    }
                    Err(e) => return Err(target_error("reading registers", e)),
                };
                out.push((name.to_string(), register_u64(v)?));
            }
            return Ok(out);
        }
        let list: Vec<(String, RegisterId)> = core
            .registers()
            .core_registers()
            .map(|r| (r.name().to_ascii_lowercase(), r.id()))
            .collect();
        for (name, id) in list {
            match core.read_core_reg::<RegisterValue>(id) {
                Ok(v) => out.push((name, register_u64(v)?)),
                Err(e) => tracing::debug!(register = name, error = %e, "skipping register"),
            }
        }
        // The snapshot reader looks for `pc` and `sp` by name (Xtensa's sp is a1).
        for (alias, reg) in [("pc", core.program_counter()), ("sp", core.stack_pointer())] {
            if !out.iter().any(|(n, _)| n == alias) {
                let v: RegisterValue = core
                    .read_core_reg(reg.id())
                    .map_err(|e| target_error("reading registers", e))?;
                out.push((alias.to_string(), register_u64(v)?));
            }
        }
        Ok(out)
    }
}

impl Control for ProbeTarget {
    fn halt(&mut self) -> Result<StopReason> {
        {
            let mut core = self.core0()?;
            if !core
                .core_halted()
                .map_err(|e| target_error("reading core status", e))?
            {
                core.halt(HALT_TIMEOUT)
                    .map_err(|e| target_error("halting core 0", e))?;
            }
        }
        self.halt_other_cores()?;
        self.halted = true;
        Ok(StopReason::Halted)
    }

    fn resume(&mut self) -> Result<()> {
        self.resume_other_cores()?;
        {
            let mut core = self.core0()?;
            // probe-rs's `run` starts with a single step and waits for it to halt: on a core
            // that already runs (a board attached without halting) it would time out.
            if core
                .core_halted()
                .map_err(|e| target_error("reading core status", e))?
            {
                // probe-rs steps over a breakpoint at the PC before letting the core run.
                core.run().map_err(|e| target_error("resuming core 0", e))?;
            }
        }
        self.halted = false;
        Ok(())
    }

    fn step(&mut self) -> Result<StopReason> {
        self.core0()?
            .step()
            .map_err(|e| target_error("stepping core 0", e))?;
        self.halted = true;
        Ok(StopReason::Step)
    }

    fn wait_for_stop(&mut self, timeout: Duration) -> Result<Option<StopReason>> {
        let deadline = Deadline::after(timeout);
        let mut pause = FIRST_PAUSE;
        loop {
            let status = match self.core0()?.status() {
                Ok(status) => status,
                // An exit under the probe (the virtual probe's firmware) is a stop, as a GDB
                // server reports it.
                Err(e) => {
                    return match target_error("reading core status", e) {
                        TargetError::Exited(code) => Ok(Some(StopReason::Exited(code))),
                        other => Err(other),
                    };
                }
            };
            match status {
                CoreStatus::Halted(reason) => {
                    self.halted = true;
                    self.halt_other_cores()?;
                    return self.stop_reason(reason).map(Some);
                }
                CoreStatus::LockedUp => {
                    return Err(TargetError::Gone(
                        "core 0 is locked up (a fault inside a fault handler); reset it".into(),
                    ));
                }
                CoreStatus::Running | CoreStatus::Sleeping | CoreStatus::Unknown => {}
            }
            if deadline.passed() {
                return Ok(None);
            }
            std::thread::sleep(pause.min(deadline.left_or_max()));
            pause = (pause * 2).min(POLL);
        }
    }

    fn reset(&mut self, halt: bool) -> Result<()> {
        self.reset_or_reattach(halt)
    }

    fn is_halted(&self) -> bool {
        self.halted
    }

    fn catch_faults(&mut self, on: bool) -> Result<bool> {
        if !self.is_cortex_m() {
            return Ok(false);
        }
        // probe-rs's `enable_vector_catch` knows HardFault only: `DEMCR` is written here,
        // keeping its other bits (`TRCENA`, `VC_CORERESET`).
        let mut core = self.core0()?;
        let demcr = core
            .read_word_32(DEMCR)
            .map_err(|e| target_error("reading DEMCR", e))?;
        let value = if on {
            demcr | VC_FAULTS
        } else {
            demcr & !VC_FAULTS
        };
        core.write_word_32(DEMCR, value)
            .map_err(|e| target_error("writing DEMCR (vector catch)", e))?;
        Ok(true)
    }
}

impl Breakpoints for ProbeTarget {
    fn add_breakpoint(&mut self, addr: u64, kind: BreakpointKind) -> Result<()> {
        if self.breakpoints.plan_add(addr, kind)? {
            self.core0()?
                .set_hw_breakpoint(addr)
                .map_err(|e| target_error(&format!("setting a breakpoint at {addr:#010x}"), e))?;
        }
        self.breakpoints.added(addr, kind);
        Ok(())
    }

    fn remove_breakpoint(&mut self, addr: u64, kind: BreakpointKind) -> Result<()> {
        if self.breakpoints.remove(addr, kind)? {
            self.core0()?.clear_hw_breakpoint(addr).map_err(|e| {
                target_error(&format!("clearing the breakpoint at {addr:#010x}"), e)
            })?;
        }
        Ok(())
    }

    fn inserted(&self) -> Vec<(u64, BreakpointKind)> {
        self.breakpoints.list()
    }

    fn capacity(&self) -> Option<usize> {
        Some(self.breakpoints.units() as usize)
    }
}

impl Watchpoints for ProbeTarget {
    fn add_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> Result<()> {
        let mut dwt = self.dwt.take().ok_or(TargetError::Unsupported(
            "data watchpoints on this core (memlife programs them on Cortex-M only)",
        ))?;
        let res = match self.core0() {
            Ok(mut core) => dwt.add(&mut CoreWords(&mut core), addr, len, kind),
            Err(e) => Err(e),
        };
        self.dwt = Some(dwt);
        res
    }

    fn remove_watchpoint(&mut self, addr: u64, len: u64, kind: WatchKind) -> Result<()> {
        let mut dwt = self
            .dwt
            .take()
            .ok_or(TargetError::Unsupported("data watchpoints on this core"))?;
        let res = match self.core0() {
            Ok(mut core) => dwt.remove(&mut CoreWords(&mut core), addr, len, kind),
            Err(e) => Err(e),
        };
        self.dwt = Some(dwt);
        res
    }
}

impl Target for ProbeTarget {
    fn describe(&self) -> String {
        format!("probe-rs {} via {}", self.chip.name, self.probe)
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
        self.stats
    }

    fn disconnect(&mut self, resume: bool) -> Result<()> {
        if let Some(mut dwt) = self.dwt.take() {
            let res = match self.core0() {
                Ok(mut core) => dwt.clear_all(&mut CoreWords(&mut core)),
                Err(e) => Err(e),
            };
            self.dwt = Some(dwt);
            res?;
        }
        for (addr, kind) in self.breakpoints.list() {
            self.remove_breakpoint(addr, kind)?;
        }
        if resume && self.halted {
            self.resume()?;
        }
        Ok(())
    }

    fn as_memory(&mut self) -> &mut dyn Memory {
        self
    }
}

#[cfg(test)]
mod tests {
    use probe_rs::BreakpointCause;

    use super::*;

    #[test]
    fn breakpoint_halts_report_the_pc() {
        let r = classify(
            HaltReason::Breakpoint(BreakpointCause::Hardware),
            0x0800_0100,
            true,
            None,
        );
        assert_eq!(r, StopReason::Breakpoint(0x0800_0100));
    }

    #[test]
    fn watchpoint_halts_name_the_watch() {
        let w = Some((0x2000_0010, WatchKind::Write));
        assert_eq!(
            classify(HaltReason::Watchpoint, 0x0800_0100, false, w),
            StopReason::Watchpoint {
                addr: 0x2000_0010,
                kind: WatchKind::Write
            }
        );
        // The DWT says nothing matched: still a trap, never a silent halt.
        assert_eq!(
            classify(HaltReason::Watchpoint, 0, false, None),
            StopReason::Signal(5)
        );
    }

    #[test]
    fn multiple_prefers_the_breakpoint() {
        let w = Some((0x2000_0010, WatchKind::Read));
        assert_eq!(
            classify(HaltReason::Multiple, 0x100, true, w),
            StopReason::Breakpoint(0x100)
        );
        assert!(matches!(
            classify(HaltReason::Multiple, 0x100, false, w),
            StopReason::Watchpoint { .. }
        ));
    }

    #[test]
    fn unattributed_halts() {
        assert_eq!(
            classify(HaltReason::Request, 0x100, false, None),
            StopReason::Halted
        );
        assert_eq!(
            classify(HaltReason::Unknown, 0x100, true, None),
            StopReason::Breakpoint(0x100)
        );
        assert_eq!(
            classify(HaltReason::Step, 0x100, true, None),
            StopReason::Step
        );
        assert_eq!(
            classify(HaltReason::Exception, 0x100, false, None),
            StopReason::Signal(5)
        );
    }

    #[test]
    fn dwt_versions_by_core() {
        assert_eq!(dwt_version(CoreType::Armv7em), Some(DwtVersion::V7m));
        assert_eq!(dwt_version(CoreType::Armv6m), Some(DwtVersion::V7m));
        assert_eq!(dwt_version(CoreType::Armv8m), Some(DwtVersion::V8m));
        assert_eq!(dwt_version(CoreType::Xtensa), None);
    }
}
