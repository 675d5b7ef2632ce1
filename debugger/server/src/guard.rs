//! A long monitor command (`monitor audit`) under a deadline and its client's interrupt.
//!
//! The audit engine holds the backend for the whole script and waits on it in short slices.
//! For that time the backend is wrapped in a [`Guarded`] target that looks, at every wait and
//! every read, whether the deadline passed, the client sent the interrupt byte (0x03) or the
//! client left. From then on the core is halted and everything that would go on (resume, step,
//! wait, reads) fails with the reason, so the engine unwinds through its own cleanup (its
//! breakpoints removed); what cleans up (breakpoint removal, writes, halt) still goes through.
//! The engine is not changed for this: it sees a target that stopped cooperating.
//!
//! gdb-multiarch (13.1, measured) sends no 0x03 while it waits for a monitor command's answer:
//! its Ctrl-C then only quits the command once the answer came. For gdb users the deadline is
//! what bounds an audit; a client that sends the byte (a raw client, a script, an IDE's own
//! stub client) stops it at once.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use memlife_core::limits::Deadline;
use memlife_core::{
    Breakpoints, Control, LinkStats, Memory, MemoryWrite, Register, Registers, Result, StopReason,
    Target, TargetError, Watchpoints,
};

/// What a client said while a command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientSignal {
    /// Nothing (or something that is not an interrupt, left for later).
    Quiet,
    /// The interrupt byte.
    Interrupt,
    /// The connection closed or failed.
    Gone,
}

/// Where a command looks for its client's interrupt.
pub trait ClientSignals {
    /// Looks without waiting.
    fn poll(&self) -> ClientSignal;
}

/// Why a guarded command was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCause {
    /// The client sent the interrupt byte.
    Interrupted,
    /// The client left.
    ClientGone,
    /// The command ran past its deadline.
    Deadline(Duration),
}

impl StopCause {
    /// The error every refused operation gives.
    fn error(self) -> TargetError {
        match self {
            StopCause::Interrupted | StopCause::ClientGone => TargetError::Interrupted,
            StopCause::Deadline(after) => TargetError::Timeout {
                after,
                waiting_for: "`monitor audit`'s deadline, --audit-deadline",
            },
        }
    }
}

impl std::fmt::Display for StopCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopCause::Interrupted => f.write_str("interrupted by the client (0x03)"),
            StopCause::ClientGone => f.write_str("the client left"),
            StopCause::Deadline(after) => write!(
                f,
                "it ran past its deadline of {} s (--audit-deadline)",
                after.as_secs_f64()
            ),
        }
    }
}

/// How often the client is looked at (every wait slice is shorter already; reads come fast).
const CLIENT_POLL: Duration = Duration::from_millis(50);

/// The watch over one guarded command, shared by the [`Guarded`] target and the bridge.
pub struct Watch {
    deadline: Deadline,
    limit: Duration,
    client: Option<Rc<dyn ClientSignals>>,
    cause: Cell<Option<StopCause>>,
    polled: Cell<Option<Instant>>,
    /// The backend, once the [`Guarded`] target holding it is dropped.
    returned: RefCell<Option<Box<dyn Target>>>,
}

impl Watch {
    /// A watch that stops its command after `limit`, or when `client` interrupts or leaves.
    pub fn new(limit: Duration, client: Option<Rc<dyn ClientSignals>>) -> Rc<Watch> {
        Rc::new(Watch {
            deadline: Deadline::after(limit),
            limit,
            client,
            cause: Cell::new(None),
            polled: Cell::new(None),
            returned: RefCell::new(None),
        })
    }

    /// Why the command must stop, if it must (looked at now).
    pub fn check(&self) -> Option<StopCause> {
        if let Some(c) = self.cause.get() {
            return Some(c);
        }
        let cause = if self.deadline.passed() {
            Some(StopCause::Deadline(self.limit))
        } else {
            self.poll_client()
        };
        self.cause.set(cause);
        cause
    }

    /// Why the command was stopped, if it was.
    pub fn cause(&self) -> Option<StopCause> {
        self.cause.get()
    }

    fn poll_client(&self) -> Option<StopCause> {
        let client = self.client.as_ref()?;
        let now = Instant::now();
        if self
            .polled
            .get()
            .is_some_and(|t| now.duration_since(t) < CLIENT_POLL)
        {
            return None;
        }
        self.polled.set(Some(now));
        match client.poll() {
            ClientSignal::Quiet => None,
            ClientSignal::Interrupt => Some(StopCause::Interrupted),
            ClientSignal::Gone => Some(StopCause::ClientGone),
        }
    }

    /// The backend back, after the [`Guarded`] target that held it was dropped.
    pub fn take_target(&self) -> Option<Box<dyn Target>> {
        self.returned.borrow_mut().take()
    }
}

/// A backend under a [`Watch`]; dropping it hands the backend to the watch.
pub struct Guarded {
    inner: Box<dyn Target>,
    watch: Rc<Watch>,
    /// Resumed and not seen stopped since (for `is_halted`, which cannot ask the backend).
    running: bool,
}

impl Guarded {
    /// Wraps `inner` (halted) under `watch`.
    pub fn new(inner: Box<dyn Target>, watch: Rc<Watch>) -> Guarded {
        Guarded {
            inner,
            watch,
            running: false,
        }
    }

    fn inner_control(&mut self) -> Result<&mut dyn Control> {
        self.inner
            .control()
            .ok_or(TargetError::Unsupported("run control"))
    }

    /// Fails once the command must stop, halting the core the first time.
    fn go_on(&mut self) -> Result<()> {
        match self.watch.check() {
            None => Ok(()),
            Some(cause) => {
                if let Some(c) = self.inner.control()
                    && !c.is_halted()
                {
                    // Quiet, so the engine's cleanup (breakpoints out) works.
                    let _ = c.halt();
                }
                self.running = false;
                Err(cause.error())
            }
        }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        let inner = std::mem::replace(&mut self.inner, Box::new(memlife_core::Snapshot::default()));
        *self.watch.returned.borrow_mut() = Some(inner);
    }
}

impl Memory for Guarded {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<()> {
        self.go_on()?;
        self.inner.read(addr, buf)
    }

    fn read_ranges(&mut self, ranges: &[(u64, usize)]) -> Result<Vec<Vec<u8>>> {
        self.go_on()?;
        self.inner.read_ranges(ranges)
    }
}

impl Registers for Guarded {
    fn read_register(&mut self, reg: Register) -> Result<u64> {
        self.go_on()?;
        self.inner.read_register(reg)
    }

    fn write_register(&mut self, reg: Register, value: u64) -> Result<()> {
        self.inner.write_register(reg, value)
    }

    fn read_all_registers(&mut self) -> Result<Vec<(String, u64)>> {
        self.go_on()?;
        self.inner.read_all_registers()
    }
}

impl Control for Guarded {
    fn halt(&mut self) -> Result<StopReason> {
        let stop = self.inner_control()?.halt()?;
        self.running = false;
        Ok(stop)
    }

    fn resume(&mut self) -> Result<()> {
        self.go_on()?;
        self.inner_control()?.resume()?;
        self.running = true;
        Ok(())
    }

    fn step(&mut self) -> Result<StopReason> {
        self.go_on()?;
        self.inner_control()?.step()
    }

    fn wait_for_stop(&mut self, timeout: Duration) -> Result<Option<StopReason>> {
        self.go_on()?;
        // Short slices, so the watch is looked at while the core runs (a wait may end early
        // with no stop; its callers wait again).
        let stop = self
            .inner_control()?
            .wait_for_stop(timeout.min(CLIENT_POLL * 2))?;
        if stop.is_some() {
            self.running = false;
        }
        Ok(stop)
    }

    fn reset(&mut self, halt: bool) -> Result<()> {
        self.inner_control()?.reset(halt)?;
        self.running = !halt;
        Ok(())
    }

    fn is_halted(&self) -> bool {
        !self.running
    }

    fn catch_faults(&mut self, on: bool) -> Result<bool> {
        self.inner_control()?.catch_faults(on)
    }
}

impl Target for Guarded {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn control(&mut self) -> Option<&mut dyn Control> {
        self.inner.control()?;
        Some(self)
    }

    fn breakpoints(&mut self) -> Option<&mut dyn Breakpoints> {
        self.inner.breakpoints()
    }

    fn watchpoints(&mut self) -> Option<&mut dyn Watchpoints> {
        self.inner.watchpoints()
    }

    fn memory_write(&mut self) -> Option<&mut dyn MemoryWrite> {
        self.inner.memory_write()
    }

    fn link_stats(&self) -> LinkStats {
        self.inner.link_stats()
    }

    fn disconnect(&mut self, resume: bool) -> Result<()> {
        self.inner.disconnect(resume)
    }

    fn as_memory(&mut self) -> &mut dyn Memory {
        self
    }
}
