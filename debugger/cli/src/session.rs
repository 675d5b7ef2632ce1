//! Opening a target from the command line and leaving it as the user asked.
//!
//! A [`Session`] owns the backend (GDB remote, probe-rs or a snapshot) and, for `--qemu`, the
//! QEMU process. A QEMU it started it can start again ([`Session::restart`], handed to the
//! audit engine): a firmware that exits ends its QEMU, and the next reset is a fresh one.
//! Whatever happens (success, an error, a panic unwinding), dropping it removes memlife's
//! breakpoints, then detaches so the target runs on, or leaves it halted, as `--leave` says; a
//! QEMU that memlife started is killed. The firmware's serial output from a QEMU memlife starts
//! goes where `--serial` says, the same file across restarts.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use memlife_audit::session::Restart;
use memlife_core::{ErrorKind, Snapshot, Target};
use memlife_rsp::{GdbRemote, QemuProcess, Serial};

use crate::cli::{Leave, SerialChoice, TargetArgs};

/// An open target.
pub struct Session {
    // Field order matters: the connection must close before QEMU is killed.
    target: Option<Box<dyn Target>>,
    /// How to start the QEMU again, until the audit engine takes it.
    restart: Option<QemuRestart>,
    qemu: QemuSlot,
    /// The file the QEMU memlife started writes the firmware's serial output to.
    serial_file: Option<PathBuf>,
    leave_halted: bool,
    cleaned: bool,
}

/// Where QEMU sends the firmware's serial output (`--serial`), the file opened here.
fn serial_output(choice: Option<&SerialChoice>) -> Result<(Serial, Option<PathBuf>)> {
    Ok(match choice {
        None | Some(SerialChoice::None) => (Serial::Discard, None),
        Some(SerialChoice::Stdio) => (Serial::Stdout, None),
        Some(SerialChoice::File(path)) => {
            let file = memlife_core::output::create_log(path)
                .with_context(|| format!("--serial file:{}", path.display()))?;
            (Serial::File(file), Some(path.clone()))
        }
    })
}

/// The directory the firmware's semihosting calls may use, opened once (a missing directory or
/// a file there is the user's error, said before the target runs).
fn semihosting_dir(args: &TargetArgs) -> Result<Option<memlife_rsp::SemihostingDir>> {
    let Some(dir) = &args.semihosting_dir else {
        return Ok(None);
    };
    memlife_rsp::SemihostingDir::open(dir)
        .map(Some)
        .with_context(|| {
            format!(
                "--semihosting-dir {}: not a directory memlife can open",
                dir.display()
            )
        })
}

/// Seconds a command may talk to a GDB server in all, unless `--deadline` says otherwise.
const DEFAULT_DEADLINE_SECS: f64 = 3600.0;

/// The QEMU a session started, shared with the restart it hands the audit engine (which puts a
/// fresh one in its place).
type QemuSlot = Rc<RefCell<Option<QemuProcess>>>;

/// The deadline the flags give (the default one unless told otherwise), as an instant.
fn deadline(args: &TargetArgs) -> Result<Option<Instant>> {
    Ok(match args.deadline {
        Some(secs) => Some(secs),
        None if args.no_default_deadline => None,
        None => Some(DEFAULT_DEADLINE_SECS),
    }
    .map(memlife_core::limits::timeout_secs)
    .transpose()
    .map_err(anyhow::Error::msg)?
    // Checked, though the week's cap keeps it in range: past the clock is no deadline.
    .and_then(|d| memlife_core::limits::Deadline::after(d).instant()))
}

/// Opens the backend the flags name, and starts the QEMU behind it when they ask for one.
fn open_backend(
    args: &TargetArgs,
    elf: &Path,
    deadline: Option<Instant>,
    mut sh_dir: Option<memlife_rsp::SemihostingDir>,
    serial: &Serial,
) -> Result<(Box<dyn Target>, Option<QemuProcess>)> {
    let options = memlife_rsp::ConnectOptions {
        deadline,
        ..Default::default()
    };
    Ok(if let Some(addr) = &args.gdb {
        let mut remote = GdbRemote::connect_with(addr, options)
            .with_context(|| format!("cannot connect to the GDB server at {addr}"))?;
        remote.set_reset_command(args.reset.clone());
        remote.set_semihosting_dir(sh_dir.take());
        (Box::new(remote), None)
    } else if let Some(machine) = &args.qemu {
        let qemu = QemuProcess::start_with_serial(machine, elf, &[], serial)
            .with_context(|| format!("cannot start qemu-system-arm -M {machine}"))?;
        let mut remote = qemu
            .connect_with(options)
            .with_context(|| format!("cannot connect to QEMU's gdbstub at {}", qemu.addr()))?;
        remote.set_reset_command(args.reset.clone());
        remote.set_semihosting_dir(sh_dir.take());
        (Box::new(remote), Some(qemu))
    } else if let Some(chip) = &args.chip {
        crate::boards::open(chip, &args.probe, elf)?
    } else if let Some(path) = &args.snapshot {
        let snap = Snapshot::load(path)
            .with_context(|| format!("cannot read snapshot {}", path.display()))?;
        (Box::new(snap), None)
    } else {
        bail!(
            "no target given: use --gdb HOST:PORT, --qemu MACHINE, --chip NAME or --snapshot FILE"
        )
    })
}

/// Starts a session's QEMU again, the way the session did, when its firmware's exit ended the
/// old one (`t.reset()` after an exit, the error-path audit's next site).
struct QemuRestart {
    args: TargetArgs,
    elf: PathBuf,
    deadline: Option<Instant>,
    qemu: QemuSlot,
    /// The session's serial output: a restarted QEMU writes on where the last one stopped.
    serial: Rc<Serial>,
}

impl Restart for QemuRestart {
    fn restart(&mut self) -> std::result::Result<Box<dyn Target>, String> {
        // The old QEMU goes first (an exited one is only reaped).
        drop(self.qemu.borrow_mut().take());
        let sh_dir = semihosting_dir(&self.args).map_err(|e| format!("{e:#}"))?;
        let (target, qemu) =
            open_backend(&self.args, &self.elf, self.deadline, sh_dir, &self.serial)
                .map_err(|e| format!("{e:#}"))?;
        *self.qemu.borrow_mut() = qemu;
        Ok(target)
    }

    fn describe(&self) -> String {
        match &self.args.qemu {
            Some(machine) => format!("a fresh qemu-system-arm -M {machine}"),
            None => "a fresh QEMU behind the virtual probe".into(),
        }
    }
}

impl Session {
    /// Opens the target the flags name. `elf` is what QEMU boots.
    pub fn open(args: &TargetArgs, elf: &Path, leave: Leave) -> Result<Session> {
        let leave_halted = leave == Leave::Halted;
        // Checked before anything starts: a wrong directory is the user's error.
        let sh_dir = semihosting_dir(args)?;
        let deadline = deadline(args)?;
        let (serial, serial_file) = serial_output(args.serial.as_ref())?;
        let serial = Rc::new(serial);
        let (target, qemu) = open_backend(args, elf, deadline, sh_dir, &serial)?;
        let started = qemu.is_some();
        let qemu: QemuSlot = Rc::new(RefCell::new(qemu));
        // What memlife started, it can start again.
        let restart = started.then(|| QemuRestart {
            args: args.clone(),
            elf: elf.to_path_buf(),
            deadline,
            qemu: Rc::clone(&qemu),
            serial,
        });
        Ok(Session {
            target: Some(target),
            restart,
            qemu,
            serial_file,
            leave_halted,
            cleaned: false,
        })
    }

    /// A way to start the target again for the audit engine, when memlife started it (a QEMU:
    /// `--qemu`, `--chip ... --probe qemu`); taken once.
    pub fn restart(&mut self) -> Option<Box<dyn Restart>> {
        self.restart.take().map(|r| Box::new(r) as Box<dyn Restart>)
    }

    /// The file the firmware's serial output goes to, when QEMU writes one.
    pub fn serial_file(&self) -> Option<&Path> {
        self.serial_file.as_deref()
    }

    /// The target.
    pub fn target(&mut self) -> Result<&mut dyn Target> {
        match self.target.as_mut() {
            Some(t) => Ok(t.as_mut()),
            None => bail!("the target is in use by the audit engine"),
        }
    }

    /// The target's place in the session, for the audit engine to hold it during a run and put
    /// it back (`memlife_audit::runner::run`).
    pub fn target_slot(&mut self) -> Result<&mut Box<dyn Target>> {
        self.target
            .as_mut()
            .context("the target is in use by the audit engine")
    }

    /// Lends the target out (to the GDB server), to be given back with [`Session::give_back`].
    pub fn lend(&mut self) -> Result<Box<dyn Target>> {
        self.target.take().context("the target is already lent out")
    }

    /// Takes a lent target back, so that closing the session cleans it up.
    pub fn give_back(&mut self, target: Box<dyn Target>) {
        self.target = Some(target);
    }

    /// Removes leftover breakpoints and leaves the target as asked; errors are reported.
    pub fn close(mut self) -> Result<()> {
        self.cleanup()
    }

    fn cleanup(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.cleaned, true) {
            return Ok(());
        }
        let Some(target) = self.target.as_mut() else {
            return Ok(());
        };
        if let Some(bps) = target.breakpoints() {
            for (addr, kind) in bps.inserted() {
                let _ = bps.remove_breakpoint(addr, kind);
            }
        }
        if self.qemu.borrow().is_some() {
            // QEMU is killed right after; nothing to hand back.
            return Ok(());
        }
        match target.disconnect(!self.leave_halted) {
            // The firmware exited and took the target with it: there is nothing to leave
            // running or halted, and the audit's result stands.
            Err(e) if e.kind() == ErrorKind::Gone => {
                tracing::info!("leaving the target: nothing to leave ({e})");
                Ok(())
            }
            other => other.context("leaving the target"),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Err(e) = self.cleanup() {
            tracing::warn!("cleaning up the target: {e:#}");
        }
    }
}
