//! `memlife serve`: a GDB remote server over memlife's backends.
//!
//! gdb (gdb-multiarch) connects to memlife as it would to OpenOCD or QEMU; memlife forwards
//! memory, registers, run control, breakpoints and watchpoints to the backend it holds (QEMU's
//! gdbstub, OpenOCD, a probe server) and adds heap views as `monitor` commands, computed with
//! memlife's own bulk reads rather than gdb's `m` packets. A FreeRTOS firmware's tasks are gdb
//! threads (`info threads`, `thread N`, `bt` in any task; see `threads`). Clients come one
//! after the other on one listener (the next ones wait in a short line); the backend stays
//! connected until the server ends.
//!
//! ```no_run
//! use memlife_server::{Listener, ServeOptions, serve};
//!
//! # fn demo(target: Box<dyn memlife_core::Target>) -> Result<(), Box<dyn std::error::Error>> {
//! let symbols = memlife_dwarf::Symbols::load(std::path::Path::new("firmware.elf"))?;
//! let listener = Listener::from(std::net::TcpListener::bind("127.0.0.1:3333")?);
//! let served = serve(&listener, target, symbols, ServeOptions::default());
//! served.outcome?;
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//! - [`options`]: [`ServeOptions`], every setting of a server, with its defaults.
//! - [`event`]: [`ServeEvent`], what the server tells its user (clients, dumps, the firmware's
//!   end); the library prints nothing.
//! - [`lobby`]: the [`Listener`], and the thread that accepts clients into a bounded line.
//! - `sessions`: the loop that serves the clients of the line one after the other.
//! - [`client`]: a client's connection, with deadlines on its first packet and on every packet,
//!   a bound on a packet's size, and LLDB's watchpoint questions answered.
//! - `bridge`: the [`Bridge`], the backend with what gdb and memlife asked of it.
//! - `gdb_target`: gdbstub's traits over the bridge; `event_loop`: waiting for stops.
//! - `threads`: a FreeRTOS firmware's tasks as gdb threads (ids, extra info, each task's
//!   registers, the task-exit return address shown as 0); `gdb_threads`: gdbstub's
//!   multi-thread traits over them.
//! - `tasks`: `monitor tasks`, every task as `memlife tasks` prints it.
//! - `arch`: the Cortex-M architecture gdbstub lacks (m-profile registers, target.xml).
//! - [`monitor`]: the `monitor` commands, [`MonitorCommand`] parsed from one table with the help.
//! - `dumps`: `monitor dump` and `dump-on` (bounded, ended when their client leaves); `dump_on`:
//!   a `dump-on` request as the bridge keeps it.
//! - `audit`: `monitor audit FILE`, a Rhai script run on the target gdb is looking at.
//! - `guard`: `monitor audit` under a deadline and the client's interrupt.
//! - [`replay`]: a session over bytes in memory (the packet path without a socket), for fuzzing
//!   and packet-level tests.
//! - [`places`]: where a client's dumps, reports and scripts may be (never outside the server's
//!   directories); `place_error`: [`places::PlaceError`], why a path is refused.
//! - [`heap`]: walking a halted target; the views of a heap are `memlife_heap::render`'s, as
//!   for `memlife heap`.
//! - [`error`]: [`ServeError`], with its causes as sources.

#![deny(missing_docs)]

mod arch;
mod audit;
mod bridge;
pub mod client;
mod dump_on;
mod dumps;
pub mod error;
pub mod event;
mod event_loop;
mod gdb_target;
mod gdb_threads;
mod guard;
pub mod heap;
pub mod lobby;
pub mod monitor;
pub mod options;
mod place_error;
pub mod places;
pub mod replay;
mod sessions;
mod tasks;
mod threads;

use memlife_core::Target;
use memlife_dwarf::Symbols;

pub use bridge::Bridge;
pub use error::{Result, ServeError};
pub use event::{EventSink, ServeEvent};
pub use lobby::Listener;
pub use monitor::MonitorCommand;
pub use options::{Restart, ServeOptions};

/// What [`serve`] gives back: the backend, and how the server ended.
pub struct Served {
    /// The backend, with gdb's breakpoints removed and the core running unless the last client
    /// killed the session.
    pub target: Box<dyn Target>,
    /// Why the server ended, when not by `monitor shutdown` or an interrupt.
    pub outcome: Result<()>,
}

/// Serves gdb clients one after the other on `listener` until a client asks for `monitor
/// shutdown`, the user interrupts the server, or the backend fails. Gives the backend back in
/// any case.
pub fn serve(
    listener: &Listener,
    target: Box<dyn Target>,
    symbols: Symbols,
    options: ServeOptions,
) -> Served {
    let mut bridge = Bridge::new(target, symbols, options);
    let outcome = sessions::serve_clients(listener, &mut bridge);
    Served {
        target: bridge.into_target(),
        outcome,
    }
}

#[cfg(test)]
mod tests;
