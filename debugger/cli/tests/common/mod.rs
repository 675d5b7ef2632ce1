//! Helpers shared by the end-to-end tests: locating the firmware, running memlife, running QEMU
//! and gdb-multiarch under guards that kill exactly what they started.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const ALLOCS: &[&str] = &["heap4", "nano", "tlsf"];
/// The ESP-IDF heap with the older fixed-array TLSF control structure, built for these scenarios.
pub const FIXED_TLSF: &[(&str, &str)] =
    &[("tlsf_fixed", "healthy"), ("tlsf_fixed", "fragmentation")];
pub const SCENARIOS: &[&str] = &[
    "healthy",
    "load-peak",
    "reorder",
    "branch-peak",
    "leak-on-switch",
    "fragmentation",
    "overlap",
];

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A firmware ELF; a missing one fails the test with the command that builds it.
pub fn elf(alloc: &str, scenario: &str) -> PathBuf {
    let p = repo().join(format!("firmware/build/{alloc}-{scenario}.elf"));
    assert!(
        p.is_file(),
        "{} is missing: build the firmware first with `make -C firmware`",
        p.display()
    );
    p
}

/// `memlife` as a child in a process group of its own, so that a guard that kills it also
/// kills the QEMU it started (which is in the same group).
pub fn memlife() -> Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memlife"));
    cmd.process_group(0);
    cmd
}

/// Kills its child and the child's process group (by pid) when dropped, on failure paths too.
pub struct ChildGuard(pub Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        // The group (memlife and the QEMU it started) first, even when memlife itself has
        // ended: its QEMU may outlive it. A group that no longer exists makes this a no-op, and
        // its id cannot have been reused while any member lives.
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

/// `memlife ARGS` with a 120 s deadline.
pub fn run_memlife(args: &[&str]) -> Output {
    let mut cmd = memlife();
    cmd.args(args);
    run_with_timeout(cmd, Duration::from_secs(120))
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs gdb-multiarch in batch mode against a GDB server with these commands.
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

pub fn gdb_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/gdb")
        .join(name)
}

/// The JSON after the `REF-HEAP ` prefix in gdb's output.
pub fn ref_heap(out: &Output) -> serde_json::Value {
    let text = stdout(out);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("REF-HEAP "))
        .unwrap_or_else(|| panic!("gdb printed no REF-HEAP line:\n{text}\n{}", stderr(out)));
    serde_json::from_str(line).unwrap()
}

/// A fresh directory for one test (unique per process and tag).
pub fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("memlife-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
