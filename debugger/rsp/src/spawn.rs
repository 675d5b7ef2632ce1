//! Starting a program that dies with the thread that started it, however that thread ends
//! (an error, Ctrl-C, SIGTERM, and also `kill -9` of memlife or a crashed CI runner, when no
//! destructor runs): through util-linux's `setpriv --pdeathsig SIGNAL -- PROGRAM`, which sets
//! the parent-death signal and execs the program, so the child's pid is the program's.
//!
//! Where `setpriv` is not installed (it is on every Debian system) the program starts alone and
//! the caller is told, to say what that costs. Both programs are found by
//! [`std::process::Command`] itself, through the `PATH` it was given: nothing here reads the
//! environment.

use std::io;
use std::path::Path;
use std::process::{Child, Command};

/// The exit status of `setpriv` when it cannot find or run the program (a shell's "command not
/// found"): the program is missing, not the child's own failure.
pub const PROGRAM_NOT_FOUND: i32 = 127;

/// A started child.
#[derive(Debug)]
pub struct Spawned {
    /// The child (the program itself: `setpriv` execs it).
    pub child: Child,
    /// Whether the kernel signals it when the starting thread ends (false without `setpriv`).
    pub dies_with_parent: bool,
}

/// Starts `program` so that the kernel sends it `signal` (`KILL`, `TERM`) when the calling
/// thread ends. `configure` adds the program's arguments, environment and standard streams; it
/// may be called twice (again for the program alone when `setpriv` is missing).
pub fn spawn_dying_with_parent(
    program: &Path,
    signal: &str,
    mut configure: impl FnMut(&mut Command) -> io::Result<()>,
) -> io::Result<Spawned> {
    let mut guarded = Command::new("setpriv");
    guarded.args(["--pdeathsig", signal, "--"]).arg(program);
    configure(&mut guarded)?;
    match guarded.spawn() {
        Ok(child) => {
            return Ok(Spawned {
                child,
                dies_with_parent: true,
            });
        }
        // setpriv itself is missing; a missing program makes setpriv exit PROGRAM_NOT_FOUND.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut plain = Command::new(program);
    configure(&mut plain)?;
    Ok(Spawned {
        child: plain.spawn()?,
        dies_with_parent: false,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_program_runs_with_its_arguments_under_setpriv_or_alone() {
        let mut calls = 0;
        let spawned = spawn_dying_with_parent(Path::new("sh"), "TERM", |cmd| {
            calls += 1;
            cmd.args(["-c", "exit 3"]);
            Ok(())
        })
        .unwrap();
        let status = { spawned.child }.wait().unwrap();
        assert_eq!(status.code(), Some(3));
        // Configured once when setpriv exists, twice when the program had to start alone.
        assert_eq!(calls, if spawned.dies_with_parent { 1 } else { 2 });
    }

    #[test]
    fn a_missing_program_is_not_found_or_exits_127() {
        let missing = Path::new("memlife-no-such-program-anywhere");
        match spawn_dying_with_parent(missing, "KILL", |_| Ok(())) {
            Ok(spawned) => {
                assert!(spawned.dies_with_parent);
                let status = { spawned.child }.wait().unwrap();
                assert_eq!(status.code(), Some(PROGRAM_NOT_FOUND));
            }
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::NotFound),
        }
    }
}
