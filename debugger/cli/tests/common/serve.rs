//! `memlife serve` as a child for a test: started on a free loopback port, its address read
//! from its first line, everything it prints on stderr kept.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use super::{ChildGuard, memlife};

/// A running `memlife serve`.
pub struct Served {
    /// Kills it (and the QEMU it started) when dropped.
    pub guard: ChildGuard,
    /// Where gdb connects.
    pub addr: String,
    log: Arc<Mutex<String>>,
}

impl Served {
    /// What it printed on stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

/// `memlife serve --elf ELF BACKEND... --listen 127.0.0.1:0`.
pub fn start(elf: &Path, backend: &[&str]) -> Served {
    start_with(elf, backend, |_| {})
}

/// [`start`] with the command adjusted first (more flags, environment variables).
pub fn start_with(elf: &Path, backend: &[&str], adjust: impl FnOnce(&mut Command)) -> Served {
    let mut cmd = memlife();
    cmd.args(["serve", "--elf"])
        .arg(elf)
        .args(backend)
        .args(["--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    adjust(&mut cmd);
    let mut guard = ChildGuard(cmd.spawn().expect("spawn memlife serve"));
    let err = guard.0.stderr.take().unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = mpsc::channel();
    let sink = Arc::clone(&log);
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("memlife serve: listening on ") {
                let _ = tx.send(addr.trim().to_string());
            }
            let mut l = sink.lock().unwrap();
            l.push_str(&line);
            l.push('\n');
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("memlife serve printed no address: {}", log.lock().unwrap()));
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    Served { guard, addr, log }
}
