//! Resetting the target through the server's own monitor command, which differs by server:
//! QEMU's gdbstub takes `system_reset`, OpenOCD and pyOCD `reset halt`, SEGGER's J-Link GDB
//! server `reset` (which halts). Each of these leaves the core halted at the reset vector.
//!
//! The command is, in this order: the one the user configured ([`GdbRemote::set_reset_command`],
//! `[target] reset` in memlife.toml); QEMU's when the server answered QEMU's own query during the
//! handshake; the one of the server `monitor help` names (asked once, at the first reset); and
//! otherwise the first of `reset halt`, `reset`, `system_reset` the server accepts. The command
//! that worked is kept for the next reset.

use memlife_core::{Result, TargetError};

use super::GdbRemote;

/// The GDB servers whose reset command memlife knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Server {
    /// QEMU's gdbstub.
    Qemu,
    /// OpenOCD.
    OpenOcd,
    /// SEGGER's J-Link GDB server.
    JLink,
    /// pyOCD.
    PyOcd,
}

/// Tried in this order when the server is not recognised.
const FALLBACK: [&str; 3] = ["reset halt", "reset", "system_reset"];

impl Server {
    /// The monitor command that resets the target and leaves it halted.
    pub fn reset_command(self) -> &'static str {
        match self {
            Server::Qemu => "system_reset",
            Server::OpenOcd | Server::PyOcd => "reset halt",
            Server::JLink => "reset",
        }
    }

    /// Recognises a server by the output of its `monitor help`: a server names itself or lists
    /// its own reset command. `None` when nothing in it tells.
    pub fn from_help(help: &str) -> Option<Server> {
        let text = help.to_ascii_lowercase();
        if text.contains("system_reset") {
            Some(Server::Qemu)
        } else if text.contains("pyocd") {
            Some(Server::PyOcd)
        } else if text.contains("openocd") || text.contains("reset [run|halt|init]") {
            Some(Server::OpenOcd)
        } else if text.contains("j-link") || text.contains("jlink") || text.contains("segger") {
            Some(Server::JLink)
        } else {
            None
        }
    }
}

impl GdbRemote {
    /// Uses `command` (a monitor command, as typed after `monitor`) to reset the target from now
    /// on, instead of the one chosen for the server; `None` goes back to choosing.
    pub fn set_reset_command(&mut self, command: Option<String>) {
        self.reset_command = command;
    }

    /// The reset command in use: configured, or found at an earlier reset.
    pub fn reset_command(&self) -> Option<&str> {
        self.reset_command.as_deref()
    }

    /// Runs the server's reset command (see the module docs); the core is halted afterwards.
    pub(super) fn reset_halted(&mut self) -> Result<()> {
        if let Some(command) = self.reset_command.clone() {
            self.monitor(&command)?;
            return Ok(());
        }
        let candidates: Vec<&'static str> = match self.recognise_server() {
            Some(server) => vec![server.reset_command()],
            None => FALLBACK.to_vec(),
        };
        let mut refused = None;
        for command in candidates {
            match self.monitor(command) {
                Ok(_) => {
                    tracing::debug!(command, "reset command");
                    self.reset_command = Some(command.to_string());
                    return Ok(());
                }
                Err(e @ (TargetError::Refused { .. } | TargetError::Unsupported(_))) => {
                    tracing::debug!(command, error = %e, "the server refused this reset command");
                    refused = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(refused.unwrap_or(TargetError::Unsupported("resetting through this server")))
    }

    /// QEMU from the handshake; otherwise what `monitor help` says, asked once.
    fn recognise_server(&mut self) -> Option<Server> {
        if self.features.qemu {
            return Some(Server::Qemu);
        }
        match self.monitor("help") {
            Ok(help) => Server::from_help(&help),
            Err(e) => {
                tracing::debug!(error = %e, "no monitor help");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_told_by_their_help() {
        let qemu = "info version  -- show the version of QEMU\nsystem_reset  -- reset the system\n";
        assert_eq!(Server::from_help(qemu), Some(Server::Qemu));
        let openocd = "reset [run|halt|init]\n      Reset all targets into the specified mode.\n";
        assert_eq!(Server::from_help(openocd), Some(Server::OpenOcd));
        assert_eq!(
            Server::from_help("Open On-Chip Debugger (OpenOCD) commands"),
            Some(Server::OpenOcd)
        );
        assert_eq!(
            Server::from_help("pyOCD monitor commands:\n  reset [halt|h]"),
            Some(Server::PyOcd)
        );
        assert_eq!(
            Server::from_help("SEGGER J-Link GDB Server monitor commands"),
            Some(Server::JLink)
        );
        assert_eq!(Server::from_help(""), None);
        assert_eq!(Server::from_help("unknown command: help"), None);
    }

    #[test]
    fn each_server_gets_its_own_word() {
        assert_eq!(Server::Qemu.reset_command(), "system_reset");
        assert_eq!(Server::OpenOcd.reset_command(), "reset halt");
        assert_eq!(Server::PyOcd.reset_command(), "reset halt");
        assert_eq!(Server::JLink.reset_command(), "reset");
    }
}
