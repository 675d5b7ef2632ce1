//! [`ServeOptions`]: everything about a server but its backend and symbols, in one value with
//! defaults, so that a new setting is a new field rather than a new `serve_*` function.

use std::path::PathBuf;
use std::time::Duration;

use memlife_audit::EngineTuning;
use memlife_core::Target;
use memlife_heap::LinkState;

use crate::client::WatchStops;
use crate::error::Result;
use crate::event::EventSink;
use crate::places::Places;

/// Starts the backend again after the firmware ended with it (QEMU exits with the firmware):
/// `monitor reset` calls it. The new backend is halted at the reset vector.
pub type Restart = Box<dyn FnMut() -> Result<Box<dyn Target>>>;

/// The most dumps one `monitor dump-on` writes before it ends by itself, unless set.
pub const DEFAULT_MAX_DUMPS: u32 = 100;

/// How long one `monitor audit` may run, unless set: the `remotetimeout` the README asks gdb
/// users to set for it, after which gdb has stopped waiting for the answer anyway.
pub const DEFAULT_AUDIT_DEADLINE: Duration = Duration::from_secs(600);

/// How a server runs. `ServeOptions::default()` is a server in the working directory that
/// prints nothing, cannot restart an ended backend, has the default limits, and serves a
/// FreeRTOS firmware's tasks as threads.
pub struct ServeOptions {
    /// The firmware ELF's path, for the facts of `monitor report`.
    pub firmware: Option<PathBuf>,
    /// How `monitor reset` brings an ended backend back; without it, the backend's own reset.
    pub restart: Option<Restart>,
    /// The server started its backend itself (a QEMU): `restart` starts a fresh one, so
    /// `monitor audit` uses it too when the firmware's exit ended the target, as `memlife audit
    /// --qemu` does. A GDB server the server only connected to is not started again by an
    /// audit.
    pub started_backend: bool,
    /// Where clients' dumps, reports and scripts may be.
    pub places: Places,
    /// When this backend's watchpoint stops come, for LLDB clients.
    pub watch_stops: WatchStops,
    /// The most dumps one `dump-on` writes ([`DEFAULT_MAX_DUMPS`]).
    pub max_dumps: u32,
    /// How long one `monitor audit` may run ([`DEFAULT_AUDIT_DEADLINE`]).
    pub audit_deadline: Duration,
    /// Who hears of clients, dumps and the firmware's end (see [`crate::event`]).
    pub events: Option<EventSink>,
    /// How heap walks (`monitor heap`, dumps, `monitor audit`) read the target: `--walk`, and
    /// the link's model when given (else measured at the first `auto` walk and kept).
    pub link: LinkState,
    /// How `monitor audit` uses the target's debug hardware.
    pub tuning: EngineTuning,
    /// Serve a FreeRTOS firmware's tasks as gdb threads (on unless set; without a kernel the
    /// core is the one thread either way).
    pub threads: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            firmware: None,
            restart: None,
            started_backend: false,
            places: Places::default(),
            watch_stops: WatchStops::Unknown,
            max_dumps: DEFAULT_MAX_DUMPS,
            audit_deadline: DEFAULT_AUDIT_DEADLINE,
            events: None,
            link: LinkState::default(),
            tuning: EngineTuning::default(),
            threads: true,
        }
    }
}

impl std::fmt::Debug for ServeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeOptions")
            .field("firmware", &self.firmware)
            .field("restart", &self.restart.is_some())
            .field("started_backend", &self.started_backend)
            .field("places", &self.places)
            .field("watch_stops", &self.watch_stops)
            .field("max_dumps", &self.max_dumps)
            .field("audit_deadline", &self.audit_deadline)
            .field("events", &self.events.is_some())
            .field("link", &self.link)
            .field("tuning", &self.tuning)
            .field("threads", &self.threads)
            .finish()
    }
}
