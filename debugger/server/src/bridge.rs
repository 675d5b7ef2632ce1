//! [`Bridge`]: the backend, with what gdb and memlife each asked of it (gdb's breakpoints and
//! watchpoints, memlife's dump-on breakpoints), the state that outlives one client (phases, the
//! last audit, how the firmware ended), and what a client's arrival, departure and the
//! backend's stops do to it. gdbstub's traits over it are in `gdb_target`, the wait for stops in
//! `event_loop`, the monitor commands in `monitor`, a FreeRTOS firmware's tasks as threads in
//! `threads` and `gdb_threads`.

use std::rc::Rc;
use std::time::Duration;

use gdbstub::common::{Signal, Tid};
use gdbstub::stub::MultiThreadStopReason;
use gdbstub::target::ext::breakpoints::WatchKind as GdbWatchKind;
use memlife_core::{BreakpointKind, StopReason, Target, WatchKind};
use memlife_dwarf::Symbols;
use memlife_heap::HeapWalker;

use crate::dumps::DumpOn;
use crate::event::{DumpOnEnd, EventSink, ServeEvent, ended_text};
use crate::guard::ClientSignals;
use crate::options::{Restart, ServeOptions};
use crate::threads::{CORE_TID, CurrentThread, Threads};

/// A stop as gdb hears of it, with the thread it names.
pub(crate) type StopReport = MultiThreadStopReason<u32>;

/// A watchpoint gdb inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GdbWatchpoint {
    pub addr: u64,
    pub len: u64,
    pub kind: WatchKind,
}

/// The backend, with what gdb and memlife each asked of it.
pub struct Bridge {
    pub(crate) target: Box<dyn Target>,
    pub(crate) symbols: Rc<Symbols>,
    pub(crate) walker: Option<Box<dyn HeapWalker>>,
    /// Breakpoints gdb inserted (memlife's own are in `dump_on`).
    pub(crate) gdb_breakpoints: Vec<(u64, BreakpointKind)>,
    pub(crate) gdb_watchpoints: Vec<GdbWatchpoint>,
    pub(crate) dump_on: Vec<DumpOn>,
    /// Dumps written by `monitor dump` without a path.
    pub(crate) dumps: u32,
    /// The most dumps one `dump-on` writes.
    pub(crate) max_dumps: u32,
    /// A stop that is known already (a single step) and not yet reported.
    pub(crate) pending: Option<StopReason>,
    pub(crate) stepping: bool,
    /// Phases recorded by `monitor audit`, one line each.
    pub(crate) phases: Vec<String>,
    /// The last `monitor audit`'s report, for `monitor report DIR`.
    pub(crate) last_audit: Option<Box<memlife_audit::AuditReport>>,
    /// The firmware ELF's path, for reports.
    pub(crate) firmware: Option<String>,
    /// `monitor shutdown` was given: end the server after this client.
    pub(crate) shutdown: bool,
    /// Where clients' dumps, reports and scripts may be.
    pub(crate) places: crate::places::Places,
    /// How the firmware ended (exited, terminated, the backend gone), until `monitor reset`.
    pub(crate) ended: Option<StopReason>,
    /// How `monitor reset` brings an ended backend back; without it, the backend's own reset.
    pub(crate) restart: Option<Restart>,
    /// The server started the backend: `monitor audit` may start it again (see
    /// [`ServeOptions::started_backend`]).
    pub(crate) started_backend: bool,
    /// When this backend's watchpoint stops come, for LLDB clients.
    pub(crate) watch_stops: crate::client::WatchStops,
    /// How long one `monitor audit` may run.
    pub(crate) audit_deadline: Duration,
    /// The client served now, for its interrupt while a long command runs.
    pub(crate) client: Option<Rc<dyn ClientSignals>>,
    /// How heap walks read the target, with the link's model once known.
    pub(crate) link: memlife_heap::LinkState,
    /// How `monitor audit` uses the target's debug hardware.
    pub(crate) tuning: memlife_audit::EngineTuning,
    /// A FreeRTOS firmware's tasks, served as threads (`None`: the core is the one thread).
    pub(crate) threads: Option<Threads>,
    events: Option<EventSink>,
}

impl Bridge {
    /// Wraps a backend; `symbols` come from the firmware ELF.
    pub fn new(target: Box<dyn Target>, symbols: Symbols, options: ServeOptions) -> Bridge {
        let threads = options
            .threads
            .then(|| threads_for(&symbols, options.events.as_ref()))
            .flatten();
        Bridge {
            target,
            symbols: Rc::new(symbols),
            walker: None,
            phases: Vec::new(),
            last_audit: None,
            firmware: options.firmware.map(|p| p.display().to_string()),
            gdb_breakpoints: Vec::new(),
            gdb_watchpoints: Vec::new(),
            dump_on: Vec::new(),
            dumps: 0,
            max_dumps: options.max_dumps,
            pending: None,
            stepping: false,
            shutdown: false,
            places: options.places,
            ended: None,
            restart: options.restart,
            started_backend: options.started_backend,
            watch_stops: options.watch_stops,
            audit_deadline: options.audit_deadline,
            client: None,
            link: options.link,
            tuning: options.tuning,
            threads,
            events: options.events,
        }
    }

    /// The thread that runs, as the client's connection answers `qC` with it (`None` without
    /// threads: gdbstub's own answer stands).
    pub(crate) fn current_thread(&self) -> Option<CurrentThread> {
        self.threads.as_ref().map(|t| t.current.clone())
    }

    /// The target runs or was changed: what was read of the stop no longer holds.
    pub(crate) fn forget_stop(&mut self) {
        if let Some(t) = &mut self.threads {
            t.forget_stop();
        }
    }

    /// The thread a stop names: the core's without threads, else the one that runs.
    pub(crate) fn stop_thread(&mut self) -> Tid {
        let Some(threads) = &mut self.threads else {
            return CORE_TID;
        };
        threads
            .current(self.target.as_mut(), &self.symbols)
            .unwrap_or_else(|e| {
                tracing::debug!("naming the stop's thread: {e}");
                CORE_TID
            })
    }

    /// Tells the server's user.
    pub(crate) fn notify(&self, event: ServeEvent) {
        crate::event::emit(self.events.as_ref(), event);
    }

    /// The sink, for the thread that accepts clients.
    pub(crate) fn events(&self) -> Option<EventSink> {
        self.events.clone()
    }

    /// Whether `monitor shutdown` was given.
    pub fn shutdown_requested(&self) -> bool {
        self.shutdown
    }

    /// The firmware ended (or the backend went with it): nothing can be read or run until
    /// `monitor reset`; gdb's breakpoints went with the backend.
    pub(crate) fn firmware_ended(&mut self, how: StopReason) {
        self.notify(ServeEvent::FirmwareEnded { how });
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
        self.forget_stop();
        if self.ended.is_some() {
            return;
        }
        if let Err(e) = self.ensure_halted() {
            tracing::warn!("halting the target for a new client: {e}");
            return;
        }
        // Named before the first packet: the connection answers `qC` with it.
        self.stop_thread();
    }

    /// A client left: remove what it inserted and end its dump-ons; `resume` lets the core
    /// run on (detach).
    pub(crate) fn on_detach(&mut self, resume: bool) {
        self.client = None;
        if self.ended.is_some() {
            self.dump_on.clear();
            self.pending = None;
            self.stepping = false;
            return;
        }
        // A client that vanished while the core ran: the backend takes no breakpoint changes
        // while it runs, so stop it for the cleanup and let it go again afterwards.
        let leftovers = !self.gdb_breakpoints.is_empty()
            || !self.gdb_watchpoints.is_empty()
            || !self.dump_on.is_empty();
        if leftovers
            && self.is_running()
            && let Err(e) = self.ensure_halted()
        {
            tracing::warn!("halting the target to remove the client's breakpoints: {e}");
        }
        self.end_dump_ons(DumpOnEnd::ClientLeft);
        for (addr, kind) in std::mem::take(&mut self.gdb_breakpoints) {
            if let Some(b) = self.target.breakpoints() {
                let _ = b.remove_breakpoint(addr, kind);
            }
        }
        for w in std::mem::take(&mut self.gdb_watchpoints) {
            if let Some(t) = self.target.watchpoints() {
                let _ = t.remove_watchpoint(w.addr, w.len, w.kind);
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

    pub(crate) fn gdb_has_breakpoint(&self, addr: u64) -> bool {
        self.gdb_breakpoints.iter().any(|&(a, _)| a == addr)
    }

    /// The backend stopped: write the dumps asked for at this address, then either report the
    /// stop to gdb (`Some`) or continue transparently (`None`, a memlife-only breakpoint).
    pub(crate) fn on_backend_stop(
        &mut self,
        reason: StopReason,
    ) -> memlife_core::Result<Option<StopReport>> {
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

    /// A backend stop as gdb hears of it, naming the thread that runs. Without threads the
    /// report is what a single-threaded stub sends (a step and a signal without a thread);
    /// with them every stop names its thread.
    pub(crate) fn translate(&mut self, reason: StopReason) -> StopReport {
        let multi = self.threads.is_some();
        let tid = match reason {
            StopReason::Exited(_) | StopReason::Terminated(_) => CORE_TID,
            _ => self.stop_thread(),
        };
        let signal = |signal| {
            if multi {
                MultiThreadStopReason::SignalWithThread { tid, signal }
            } else {
                MultiThreadStopReason::Signal(signal)
            }
        };
        match reason {
            StopReason::Breakpoint(pc) => {
                let hw = self
                    .gdb_breakpoints
                    .iter()
                    .any(|&(a, k)| a == pc && k == BreakpointKind::Hardware);
                if hw {
                    MultiThreadStopReason::HwBreak(tid)
                } else {
                    MultiThreadStopReason::SwBreak(tid)
                }
            }
            StopReason::Watchpoint { addr, kind } => MultiThreadStopReason::Watch {
                tid,
                kind: match kind {
                    WatchKind::Write => GdbWatchKind::Write,
                    WatchKind::Read => GdbWatchKind::Read,
                    WatchKind::Access => GdbWatchKind::ReadWrite,
                },
                addr: addr as u32,
            },
            StopReason::Step if multi => signal(Signal::SIGTRAP),
            StopReason::Step => MultiThreadStopReason::DoneStep,
            StopReason::Halted => signal(Signal::SIGINT),
            StopReason::Signal(s) => signal(Signal(s)),
            StopReason::Exited(code) => MultiThreadStopReason::Exited(code as u8),
            StopReason::Terminated(s) => MultiThreadStopReason::Terminated(Signal(s)),
        }
    }
}

/// The threads of a FreeRTOS kernel in `symbols`, telling the server's user what it found.
fn threads_for(symbols: &Symbols, events: Option<&EventSink>) -> Option<Threads> {
    if !memlife_rtos::FreeRtos::present(symbols) {
        return None;
    }
    let threads = Threads::detect(symbols);
    let event = match &threads {
        Ok(t) => ServeEvent::RtosThreads {
            served: true,
            detail: t.kernel.port().evidence.clone(),
        },
        Err(e) => ServeEvent::RtosThreads {
            served: false,
            detail: e.to_string(),
        },
    };
    crate::event::emit(events, event);
    threads.ok()
}
