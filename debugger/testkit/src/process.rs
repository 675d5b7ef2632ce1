//! Children the tests start (memlife, QEMU, gdb-multiarch), each under a guard that kills it
//! by process id, on failure paths too; commands with a deadline; fresh temporary directories.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Kills its child and the child's process group (by pid) when dropped, on failure paths too.
/// Start the child in a group of its own (`CommandExt::process_group(0)`) so that what it
/// started (a QEMU) goes with it.
pub struct ChildGuard(pub Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        // The group first, even when the child itself has ended: what it started may outlive
        // it. A group that no longer exists makes this a no-op, and its id cannot have been
        // reused while any member lives.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs a command with a deadline; a hang fails the test instead of blocking the suite.
pub fn run_with_timeout(mut cmd: Command, timeout: Duration) -> Output {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null());
    let mut guard = ChildGuard(cmd.spawn().expect("spawn"));
    let mut out = guard.0.stdout.take().unwrap();
    let mut err = guard.0.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = guard.0.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > timeout {
            panic!("{cmd:?} did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
    }
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// gdb-multiarch in batch mode against the GDB server at `server`, with these commands, for at
/// most 120 s.
pub fn gdb_batch(elf: &Path, server: &str, commands: &[&str]) -> Output {
    let mut cmd = Command::new("gdb-multiarch");
    cmd.args([
        "-batch",
        "-nx",
        "-ex",
        "set pagination off",
        "-ex",
        "set confirm off",
    ]);
    cmd.arg("-ex").arg(format!("target remote {server}"));
    for c in commands {
        cmd.arg("-ex").arg(c);
    }
    cmd.arg(elf);
    run_with_timeout(cmd, Duration::from_secs(120))
}

/// A fresh, empty directory for one test: unique per call, so that tests running at once in
/// one process through the same helper (and so the same tag) never share one.
pub fn tempdir(tag: &str) -> PathBuf {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("memlife-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// LLDB in batch mode (`lldb --batch`) connected to the GDB server at `server` with
/// `gdb-remote`, running these commands, for at most 120 s. LLDB missing fails the test with
/// what to do, never skips it.
pub fn lldb_batch(elf: &Path, server: &str, commands: &[&str]) -> Output {
    if let Err(e) = Command::new("lldb")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        panic!("cannot run lldb ({e}): run `make deps` to install it");
    }
    let mut cmd = Command::new("lldb");
    cmd.args(["--batch", "--no-lldbinit"]);
    cmd.arg("-o").arg(format!("gdb-remote {server}"));
    for c in commands {
        cmd.arg("-o").arg(c);
    }
    cmd.arg(elf);
    run_with_timeout(cmd, Duration::from_secs(120))
}
