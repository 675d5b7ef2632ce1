//! The gdbstub [`Target`](gdbstub::target::Target) over a memlife backend, and the blocking
//! event loop that runs it: short waits on the backend, polling the connection for Ctrl-C.

use std::rc::Rc;
use std::time::Duration;

use gdbstub::common::Signal;
use gdbstub::conn::{Connection, ConnectionExt};
use gdbstub::stub::SingleThreadStopReason;
use gdbstub::stub::run_blocking::{BlockingEventLoop, Event, WaitForStopReasonError};
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
use memlife_core::{
    BreakpointKind, ErrorKind, StopReason, Target, TargetError, WatchKind, interrupt,
};
use memlife_dwarf::Symbols;
use memlife_heap::HeapWalker;

use crate::arch::{CortexM, CortexMRegs};
use crate::error::{Context, ServeError};

/// How long one wait on the backend lasts before the connection is polled for Ctrl-C.
const POLL: Duration = Duration::from_millis(10);

/// A `monitor dump-on` request.
#[derive(Debug, Clone)]
pub(crate) struct DumpOn {
    pub symbol: String,
    pub addr: u64,
    /// May contain `{n}`, the 1-based count of dumps written for this symbol.
    pub path: String,
    pub written: u32,
}

/// Starts the backend again after the firmware ended with it (QEMU exits with the firmware):
/// `monitor reset` calls it. The new backend is halted at the reset vector.
pub type Restart = Box<dyn FnMut() -> std::result::Result<Box<dyn Target>, String>>;

/// The backend, with what gdb and memlife each asked of it.
pub struct Bridge {
    pub(crate) target: Box<dyn Target>,
    pub(crate) symbols: Rc<Symbols>,
    pub(crate) walker: Option<Box<dyn HeapWalker>>,
    /// Breakpoints gdb inserted (memlife's own are in `dump_on`).
    pub(crate) gdb_breakpoints: Vec<(u64, BreakpointKind)>,
    pub(crate) gdb_watchpoints: Vec<(u64, u64, WatchKind)>,
    pub(crate) dump_on: Vec<DumpOn>,
    /// Dumps written by `monitor dump` without a path.
    pub(crate) dumps: u32,
    /// A stop that is known already (a single step) and not yet reported.
    pending: Option<StopReason>,
    stepping: bool,
    /// Phases recorded by `monitor audit`, one line each.
    pub(crate) phases: Vec<String>,
    /// The last `monitor audit`'s report, for `monitor report DIR`.
    pub(crate) last_audit: Option<Box<memlife_audit::AuditReport>>,
    /// The firmware ELF's path, for reports.
    pub firmware: Option<String>,
    /// `monitor shutdown` was given: end the server after this client.
    pub(crate) shutdown: bool,
    /// Where clients' dumps, reports and scripts may be.
    pub places: crate::places::Places,
    /// How the firmware ended (exited, terminated, the backend gone), until `monitor reset`.
    pub(crate) ended: Option<StopReason>,
    /// How `monitor reset` brings an ended backend back; without it, the backend's own reset.
    pub restart: Option<Restart>,
    /// When this backend's watchpoint stops come, for LLDB clients.
    pub watch_stops: crate::client::WatchStops,
    /// How heap walks (`monitor heap`, `monitor audit`) read the target: `--walk`, and the
    /// link's model once given or measured.
    pub link: memlife_heap::LinkState,
    /// How `monitor audit` uses the target's debug hardware.
    pub tuning: memlife_audit::EngineTuning,
}

/// The sentence that says how the firmware ended.
pub(crate) fn ended_text(how: &StopReason) -> String {
    match how {
        StopReason::Exited(code) => format!("the firmware exited with status {code}"),
        StopReason::Terminated(sig) => format!("the firmware was terminated by signal {sig}"),
        other => format!("the target is gone ({other:?})"),
    }
}

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
    /// Wraps a backend; `symbols` come from the firmware ELF.
    pub fn new(target: Box<dyn Target>, symbols: Symbols) -> Bridge {
        Bridge {
            target,
            symbols: Rc::new(symbols),
            walker: None,
            phases: Vec::new(),
            last_audit: None,
            firmware: None,
            gdb_breakpoints: Vec::new(),
            gdb_watchpoints: Vec::new(),
            dump_on: Vec::new(),
            dumps: 0,
            pending: None,
            stepping: false,
            shutdown: false,
            places: crate::places::Places::default(),
            ended: None,
            restart: None,
            watch_stops: crate::client::WatchStops::Unknown,
            link: memlife_heap::LinkState::default(),
            tuning: memlife_audit::EngineTuning::default(),
        }
    }

    /// The firmware ended (or the backend went with it): nothing can be read or run until
    /// `monitor reset`; gdb's breakpoints went with the backend.
    pub(crate) fn firmware_ended(&mut self, how: StopReason) {
        eprintln!(
            "memlife serve: {}; the next gdb client can start it again with `monitor reset`",
            ended_text(&how)
        );
        self.ended = Some(how);
        self.pending = None;
        self.stepping = false;
        self.gdb_breakpoints.clear();
        self.gdb_watchpoints.clear();
    }

    /// The message every command but `help`, `reset` and `shutdown` gives while ended.
    pub(crate) fn ended_message(&self) -> Option<String> {
        self.ended.as_ref().map(|how| {
            format!(
                "{}; `monitor reset` starts it again (then `flushregs`)\n",
                ended_text(how)
            )
        })
    }

    /// Gives the backend back.
    pub fn into_target(self) -> Box<dyn Target> {
        self.target
    }

    /// Halts a running backend (gdb expects a stopped target to look at).
    pub(crate) fn ensure_halted(&mut self) -> memlife_core::Result<()> {
        if let Some(c) = self.target.control()
            && !c.is_halted()
        {
            c.halt()?;
        }
        Ok(())
    }

    /// Whether the backend runs (false for targets without run control, or ended).
    pub(crate) fn is_running(&mut self) -> bool {
        self.ended.is_none() && self.target.control().is_some_and(|c| !c.is_halted())
    }

    /// A client arrived: stop the core so gdb can look at it.
    pub(crate) fn on_attach(&mut self) {
        self.pending = None;
        self.stepping = false;
        if self.ended.is_some() {
            return;
        }
        if let Err(e) = self.ensure_halted() {
            tracing::warn!("halting the target for a new client: {e}");
        }
    }

    /// A client left: remove what it inserted; `resume` lets the core run on (detach).
    pub(crate) fn on_detach(&mut self, resume: bool) {
        if self.ended.is_some() {
            self.pending = None;
            self.stepping = false;
            return;
        }
        // A client that vanished while the core ran: the backend takes no breakpoint changes
        // while it runs, so stop it for the cleanup and let it go again afterwards.
        let leftovers = !self.gdb_breakpoints.is_empty() || !self.gdb_watchpoints.is_empty();
        if leftovers
            && self.is_running()
            && let Err(e) = self.ensure_halted()
        {
            tracing::warn!("halting the target to remove the client's breakpoints: {e}");
        }
        for (addr, kind) in std::mem::take(&mut self.gdb_breakpoints) {
            let memlife_needs =
                kind == BreakpointKind::Software && self.dump_on.iter().any(|d| d.addr == addr);
            if !memlife_needs && let Some(b) = self.target.breakpoints() {
                let _ = b.remove_breakpoint(addr, kind);
            }
        }
        for (addr, len, kind) in std::mem::take(&mut self.gdb_watchpoints) {
            if let Some(w) = self.target.watchpoints() {
                let _ = w.remove_watchpoint(addr, len, kind);
            }
        }
        self.pending = None;
        self.stepping = false;
        if resume
            && let Some(c) = self.target.control()
            && c.is_halted()
            && let Err(e) = c.resume()
        {
            tracing::warn!("resuming the target after the client left: {e}");
        }
    }

    fn gdb_has_breakpoint(&self, addr: u64) -> bool {
        self.gdb_breakpoints.iter().any(|&(a, _)| a == addr)
    }

    /// The backend stopped: write the dumps asked for at this address, then either report the
    /// stop to gdb (`Some`) or continue transparently (`None`, a memlife-only breakpoint).
    pub(crate) fn on_backend_stop(
        &mut self,
        reason: StopReason,
    ) -> memlife_core::Result<Option<SingleThreadStopReason<u32>>> {
        if let StopReason::Breakpoint(pc) = reason
            && self.dump_on.iter().any(|d| d.addr == pc)
        {
            self.dump_at(pc);
            if !self.gdb_has_breakpoint(pc) && !self.stepping {
                if let Some(c) = self.target.control() {
                    c.resume()?;
                }
                return Ok(None);
            }
        }
        Ok(Some(self.translate(reason)))
    }

    fn dump_at(&mut self, pc: u64) {
        let wanted: Vec<usize> = (0..self.dump_on.len())
            .filter(|&i| self.dump_on[i].addr == pc)
            .collect();
        for i in wanted {
            let d = &mut self.dump_on[i];
            // Counts stops the firmware makes: saturates rather than overflow.
            d.written = d.written.saturating_add(1);
            let path = d.path.replace("{n}", &d.written.to_string());
            let symbol = d.symbol.clone();
            match self.write_dump(&path) {
                Ok(()) => tracing::info!("dump at {symbol} written to {path}"),
                Err(e) => {
                    tracing::warn!("dump at {symbol} to {path} failed: {e:#}");
                    eprintln!("memlife serve: dump at {symbol} to {path} failed: {e:#}");
                }
            }
        }
    }

    fn translate(&self, reason: StopReason) -> SingleThreadStopReason<u32> {
        match reason {
            StopReason::Breakpoint(pc) => {
                let hw = self
                    .gdb_breakpoints
                    .iter()
                    .any(|&(a, k)| a == pc && k == BreakpointKind::Hardware);
                if hw {
                    SingleThreadStopReason::HwBreak(())
                } else {
                    SingleThreadStopReason::SwBreak(())
                }
            }
            StopReason::Watchpoint { addr, kind } => SingleThreadStopReason::Watch {
                tid: (),
                kind: match kind {
                    WatchKind::Write => GdbWatchKind::Write,
                    WatchKind::Read => GdbWatchKind::Read,
                    WatchKind::Access => GdbWatchKind::ReadWrite,
                },
                addr: addr as u32,
            },
            StopReason::Step => SingleThreadStopReason::DoneStep,
            StopReason::Halted => SingleThreadStopReason::Signal(Signal::SIGINT),
            StopReason::Signal(s) => SingleThreadStopReason::Signal(Signal(s)),
            StopReason::Exited(code) => SingleThreadStopReason::Exited(code as u8),
            StopReason::Terminated(s) => SingleThreadStopReason::Terminated(Signal(s)),
        }
    }

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
                eprintln!("memlife serve: breakpoint at {addr:#010x} refused: {e}");
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
            .context("this target has no run control (an offline snapshot?)")?;
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
            .context("this target has no run control (an offline snapshot?)")?;
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
                self.gdb_watchpoints.push((addr, len, kind));
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
            .position(|&w| w == (addr, len, kind))
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

/// The blocking event loop: the backend runs on its own (QEMU, a probe), so waiting is a series
/// of short waits for a stop with a look at the connection in between.
pub enum EventLoop {}

impl EventLoop {
    /// The stop a replay ([`crate::replay`]) reports the moment gdb waits for one: the one
    /// already known (a single step, the firmware's end), else the target halted now.
    pub(crate) fn stop_now(target: &mut Bridge) -> Option<SingleThreadStopReason<u32>> {
        if let Some(stop) = target.pending.take() {
            return Some(target.translate(stop));
        }
        <EventLoop as BlockingEventLoop>::on_interrupt(target)
            .ok()
            .flatten()
    }
}

impl BlockingEventLoop for EventLoop {
    type Target = Bridge;
    type Connection = crate::client::ClientConn;
    type StopReason = SingleThreadStopReason<u32>;

    #[allow(clippy::type_complexity)]
    fn wait_for_stop_reason(
        target: &mut Bridge,
        conn: &mut crate::client::ClientConn,
    ) -> Result<
        Event<SingleThreadStopReason<u32>>,
        WaitForStopReasonError<ServeError, <crate::client::ClientConn as Connection>::Error>,
    > {
        loop {
            if let Some(stop) = target.pending.take() {
                return Ok(Event::TargetStopped(target.translate(stop)));
            }
            if target.ended.is_some() {
                // Not running (resume did not start it): only the connection can say something.
                if conn
                    .peek()
                    .map_err(WaitForStopReasonError::Connection)?
                    .is_some()
                {
                    let byte = conn.read().map_err(WaitForStopReasonError::Connection)?;
                    return Ok(Event::IncomingData(byte));
                }
                std::thread::sleep(POLL);
                continue;
            }
            // Ctrl-C in memlife's own terminal ends the session (gdb's Ctrl-C arrives as data).
            if interrupt::requested() {
                return Err(WaitForStopReasonError::Target(ServeError::Target {
                    context: "waiting for the target to stop".into(),
                    source: TargetError::Interrupted,
                }));
            }
            let stop = match target.target.control() {
                Some(c) => c
                    .wait_for_stop(POLL)
                    .context("waiting for the target to stop")
                    .map_err(WaitForStopReasonError::Target)?,
                None => {
                    return Err(WaitForStopReasonError::Target(ServeError::Command(
                        "this target has no run control".into(),
                    )));
                }
            };
            if let Some(reason @ (StopReason::Exited(_) | StopReason::Terminated(_))) = stop {
                target.firmware_ended(reason);
                return Ok(Event::TargetStopped(target.translate(reason)));
            }
            if let Some(reason) = stop {
                match target.on_backend_stop(reason) {
                    Ok(Some(report)) => return Ok(Event::TargetStopped(report)),
                    Ok(None) => continue,
                    Err(e) => {
                        return Err(WaitForStopReasonError::Target(ServeError::Target {
                            context: "continuing after a dump".into(),
                            source: e,
                        }));
                    }
                }
            }
            if conn
                .peek()
                .map_err(WaitForStopReasonError::Connection)?
                .is_some()
            {
                let byte = conn.read().map_err(WaitForStopReasonError::Connection)?;
                return Ok(Event::IncomingData(byte));
            }
        }
    }

    fn on_interrupt(
        target: &mut Bridge,
    ) -> Result<Option<SingleThreadStopReason<u32>>, ServeError> {
        target.stepping = false;
        if let Some(how) = &target.ended {
            return Ok(Some(target.translate(*how)));
        }
        let Some(c) = target.target.control() else {
            return Ok(Some(SingleThreadStopReason::Signal(Signal::SIGINT)));
        };
        let reason = if c.is_halted() {
            StopReason::Halted
        } else {
            c.halt().context("halting the target")?
        };
        Ok(Some(target.translate(reason)))
    }
}
