//! Starting `qemu-system-arm` halted with its gdbstub on a free loopback port.
//!
//! The port is found by binding 127.0.0.1:0 and releasing it, so another process (or another
//! thread of this one, starting its own QEMU) can take it in between; when QEMU then fails to
//! bind, the start is retried on a new port. Which QEMU listens is read from the kernel (the
//! listening socket must be one of the child's own), so two starts never mistake each other's
//! port. [`QemuProcess`] kills and reaps QEMU when dropped, so a failing test or an error path
//! never leaves one behind. QEMU is started through [`crate::spawn`], so it also dies with
//! memlife when memlife itself is killed (`kill -9`, a crashed CI runner) and no destructor
//! runs; where `setpriv` is missing memlife says so: then a SIGKILL of memlife leaves QEMU
//! running.

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memlife_core::{Result, TargetError};

use crate::spawn::{PROGRAM_NOT_FOUND, spawn_dying_with_parent};
use crate::{ConnectOptions, GdbRemote};

/// The emulator binary.
pub const QEMU_BINARY: &str = "qemu-system-arm";
/// How long QEMU gets to open its gdb port.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Attempts when the chosen port was taken in the meantime.
const PORT_ATTEMPTS: usize = 4;

/// Where QEMU's first serial port (the firmware's UART) goes.
#[derive(Debug, Default)]
pub enum Serial {
    /// Discarded (`-serial null`).
    #[default]
    Discard,
    /// Into this file, which the caller opened for writing: QEMU writes the port to its
    /// standard output (`-serial stdio`), which is the file.
    File(std::fs::File),
    /// To the caller's standard output.
    Stdout,
}

impl Serial {
    /// QEMU's `-serial` argument.
    fn arg(&self) -> &'static str {
        match self {
            Serial::Discard => "null",
            Serial::File(_) | Serial::Stdout => "stdio",
        }
    }

    /// QEMU's standard output.
    fn stdout(&self) -> std::io::Result<Stdio> {
        Ok(match self {
            Serial::Discard => Stdio::null(),
            Serial::File(f) => Stdio::from(f.try_clone()?),
            Serial::Stdout => Stdio::inherit(),
        })
    }
}

/// A running QEMU, killed when dropped.
#[derive(Debug)]
pub struct QemuProcess {
    child: Child,
    addr: SocketAddr,
    stderr: Arc<Mutex<Vec<u8>>>,
}

/// A loopback port free now (QEMU binds it a moment later; see the module docs).
fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| TargetError::transport("finding a free loopback port", e))?;
    let port = listener
        .local_addr()
        .map_err(|e| TargetError::transport("finding a free loopback port", e))?
        .port();
    Ok(port)
}

fn qemu_missing(e: std::io::Error) -> TargetError {
    TargetError::transport(
        format!(
            "{QEMU_BINARY} is not installed (on Debian/Ubuntu: apt-get install qemu-system-arm)"
        ),
        e,
    )
}

enum Attempt {
    Ready(QemuProcess),
    PortTaken(String),
}

impl QemuProcess {
    /// Starts `qemu-system-arm -M MACHINE -S` with `elf` as the kernel and the gdbstub on a free
    /// loopback port, and waits (at most 10 s) until the port accepts connections.
    ///
    /// QEMU ends when the calling thread ends (see the module docs): start it from a thread
    /// that lives as long as the emulator is needed.
    pub fn start(machine: &str, elf: &Path, extra_args: &[&str]) -> Result<QemuProcess> {
        Self::start_with_serial(machine, elf, extra_args, &Serial::Discard)
    }

    /// [`QemuProcess::start`] with the firmware's serial output sent where `serial` says.
    pub fn start_with_serial(
        machine: &str,
        elf: &Path,
        extra_args: &[&str],
        serial: &Serial,
    ) -> Result<QemuProcess> {
        if !elf.is_file() {
            return Err(TargetError::transport(
                format!("firmware {} not found", elf.display()),
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
            ));
        }
        let mut last = String::new();
        for _ in 0..PORT_ATTEMPTS {
            match Self::try_start(machine, elf, extra_args, serial)? {
                Attempt::Ready(q) => return Ok(q),
                Attempt::PortTaken(msg) => {
                    tracing::debug!(%msg, "QEMU could not bind its gdb port, retrying");
                    last = msg;
                }
            }
        }
        Err(TargetError::Gone(format!(
            "{QEMU_BINARY} could not bind a gdb port in {PORT_ATTEMPTS} attempts: {last}"
        )))
    }

    fn try_start(
        machine: &str,
        elf: &Path,
        extra_args: &[&str],
        serial: &Serial,
    ) -> Result<Attempt> {
        let port = free_port()?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let spawned = spawn_dying_with_parent(Path::new(QEMU_BINARY), "KILL", |cmd| {
            // Single-threaded TCG: the emulated microcontrollers have one core, and with no
            // vCPU thread to hand over to, every breakpoint stop is about 15% cheaper.
            cmd.args(["-M", machine, "-accel", "tcg,thread=single", "-S", "-gdb"])
                .arg(format!("tcp:127.0.0.1:{port}"))
                .args([
                    "-display",
                    "none",
                    "-monitor",
                    "none",
                    "-serial",
                    serial.arg(),
                ])
                // Semihosting goes to the debugger (File-I/O requests memlife answers), never
                // to the host: a firmware cannot open, write or delete the user's files.
                .args(["-semihosting-config", "enable=on,target=gdb", "-kernel"])
                .arg(elf)
                .args(extra_args)
                .stdin(Stdio::null())
                .stdout(serial.stdout()?)
                .stderr(Stdio::piped());
            Ok(())
        })
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                qemu_missing(e)
            } else {
                TargetError::transport(format!("starting {QEMU_BINARY}"), e)
            }
        })?;
        if !spawned.dies_with_parent {
            // Without it (and without `unsafe`, which memlife forbids) there is no way to set
            // the parent-death signal: say so rather than promise it.
            tracing::warn!(
                "setpriv (util-linux) is not on PATH: QEMU ends with memlife on errors, Ctrl-C \
                 and SIGTERM, but not if memlife itself is killed with SIGKILL"
            );
        }
        let mut child = spawned.child;
        // Drain stderr on a thread so QEMU never blocks on a full pipe.
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut pipe) = child.stderr.take() {
            let sink = Arc::clone(&stderr);
            std::thread::spawn(move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n) = pipe.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut s) = sink.lock() {
                        s.extend_from_slice(&chunk[..n]);
                    }
                }
            });
        }
        // From here on the guard owns the child: any return kills it.
        let mut q = QemuProcess {
            child,
            addr,
            stderr,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            match q.exited() {
                Some(status) => {
                    // Let the drain thread catch the last words.
                    std::thread::sleep(Duration::from_millis(50));
                    let msg = q.stderr_text();
                    if status.code() == Some(PROGRAM_NOT_FOUND) {
                        // setpriv ran, QEMU is not there.
                        return Err(qemu_missing(std::io::Error::new(
                            std::io::ErrorKind::NotFound,
                            msg.trim().to_string(),
                        )));
                    }
                    if msg.contains("ddress already in use") || msg.contains("Failed to bind") {
                        return Ok(Attempt::PortTaken(msg));
                    }
                    return Err(TargetError::Gone(format!(
                        "{QEMU_BINARY} exited ({status}) before opening its gdb port: {}",
                        msg.trim()
                    )));
                }
                None => {
                    if q.port_is_listening() {
                        return Ok(Attempt::Ready(q));
                    }
                }
            }
            if Instant::now() >= deadline {
                return Err(TargetError::timeout(
                    START_TIMEOUT,
                    "QEMU opening its gdb port",
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether *our* QEMU listens on the gdb port. On Linux this is read from /proc (the
    /// listening socket's inode must be one of the child's file descriptors), which neither
    /// disturbs QEMU's gdbstub (it accepts a single client) nor mistakes another process that
    /// took the same port for ours. Elsewhere, a probe connection.
    fn port_is_listening(&self) -> bool {
        let Ok(table) = std::fs::read_to_string("/proc/net/tcp") else {
            return TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_ok();
        };
        let port = format!(":{:04X}", self.addr.port());
        // Columns: sl local_address rem_address st ... inode (10th).
        let inodes: Vec<String> = table
            .lines()
            .skip(1)
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let listening = f.get(1)?.ends_with(&port) && *f.get(3)? == "0A";
                listening.then(|| format!("socket:[{}]", f.get(9).copied().unwrap_or_default()))
            })
            .collect();
        if inodes.is_empty() {
            return false;
        }
        let Ok(fds) = std::fs::read_dir(format!("/proc/{}/fd", self.child.id())) else {
            return false;
        };
        fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .map(|target| inodes.iter().any(|i| target.as_os_str() == i.as_str()))
                .unwrap_or(false)
        })
    }

    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    fn stderr_text(&self) -> String {
        self.stderr
            .lock()
            .map(|s| String::from_utf8_lossy(&s).into_owned())
            .unwrap_or_default()
    }

    /// The gdbstub address (127.0.0.1:PORT).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// QEMU's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What QEMU wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr_text()
    }

    /// Connects a [`GdbRemote`] to this QEMU.
    pub fn connect(&self) -> Result<GdbRemote> {
        self.connect_with(ConnectOptions::default())
    }

    /// Connects with explicit timeouts.
    pub fn connect_with(&self, options: ConnectOptions) -> Result<GdbRemote> {
        let mut client = GdbRemote::connect_with(&self.addr.to_string(), options)?;
        // QEMU reports a kill by signal as an ordinary exit (`W00`); its stderr says otherwise.
        client.server_log = Some(Arc::clone(&self.stderr));
        Ok(client)
    }
}

impl Drop for QemuProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The signal QEMU says it was terminated by (`terminating on signal 15 from pid 123`), with
/// the rest of its words, from its stderr.
pub(crate) fn killed_by(stderr: &str) -> Option<(u8, String)> {
    let line = stderr
        .lines()
        .find(|l| l.contains("terminating on signal "))?;
    let after = line.split("terminating on signal ").nth(1)?;
    let signal = after.split_whitespace().next()?.parse().ok()?;
    Some((signal, line.trim().to_string()))
}
