//! One target of a wide run: a `memlife audit` child process of its own (its own QEMU on its
//! own free port, its own Ctrl-C clean-up), its outputs in OUT/NAME/, stopped by its pid when it
//! runs over `--target-timeout` or the run is interrupted, and killed when dropped.
//!
//! A child rather than a thread: one audit owns its target, its script engine and the QEMU it
//! started (which dies with the thread that started it), and a crash or hang of one stays in it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::list::Target;
use crate::cli::AuditArgs;

/// How often a running child is looked at.
const POLL: Duration = Duration::from_millis(50);
/// After SIGTERM, how long a child gets to remove its breakpoints and write its outputs.
const GRACE: Duration = Duration::from_secs(5);

/// The files of one target under OUT/NAME/.
pub struct Files {
    pub dir: PathBuf,
}

impl Files {
    pub fn json(&self) -> PathBuf {
        self.dir.join("audit.json")
    }
    pub fn junit(&self) -> PathBuf {
        self.dir.join("junit.xml")
    }
    pub fn stderr(&self) -> PathBuf {
        self.dir.join("stderr.txt")
    }
    pub fn stdout(&self) -> PathBuf {
        self.dir.join("stdout.txt")
    }
}

/// How a child ended.
#[derive(Debug, Clone)]
pub enum Ending {
    /// It exited with this status.
    Exited(ExitStatus),
    /// It ran over `--target-timeout` and was stopped.
    TimedOut(f64),
    /// It could not be started.
    NotStarted(String),
}

/// A child killed and reaped when dropped, whatever path leaves its owner.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// A child's command line.
#[derive(Debug, Clone)]
pub struct ChildCommand {
    /// The program (this memlife).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

/// The command line of the child that audits `target`: the shared flags of this run, then the
/// entry's own settings, which win.
pub fn command(
    exe: &Path,
    verbose: u8,
    args: &AuditArgs,
    target: &Target,
    script: &Path,
    files: &Files,
) -> ChildCommand {
    // The child audits this one target, whatever its --config lists.
    let mut a: Vec<OsString> = vec!["--one-target".into()];
    flag(&mut a, "--config", &target.config);
    if let Some(elf) = target.elf.as_ref().or(args.elf.as_ref()) {
        flag(&mut a, "--elf", elf);
    }
    flag(&mut a, "--out", &files.dir);
    flag(&mut a, "--json", &files.json());
    flag(&mut a, "--junit", &files.junit());
    flag(&mut a, "--report", &files.dir.join("report"));
    flag(&mut a, "--trace", &files.dir.join("trace.json"));
    let o = &target.overrides;
    let t = &args.target;
    if let Some(q) = o.qemu.as_ref().or(t.qemu.as_ref()) {
        flag(&mut a, "--qemu", q);
    }
    if let Some(chip) = &t.chip {
        flag(&mut a, "--chip", chip);
    }
    if let Some(p) = &t.probe.probe {
        flag(&mut a, "--probe", &p.to_string());
    }
    if t.probe.connect_under_reset {
        a.push("--connect-under-reset".into());
    }
    if let Some(s) = t.probe.speed {
        flag(&mut a, "--speed", &s.to_string());
    }
    if let Some(d) = t.deadline {
        flag(&mut a, "--deadline", &d.to_string());
    }
    if let Some(dir) = &t.semihosting_dir {
        flag(&mut a, "--semihosting-dir", dir);
    }
    if let Some(serial) = &t.serial {
        flag(&mut a, "--serial", &serial.to_string());
    }
    let h = &args.heap;
    if let Some(alloc) = o.allocator.or(h.allocator) {
        flag(&mut a, "--allocator", &alloc.to_string());
    }
    if let Some(p) = h.poisoning {
        flag(&mut a, "--poisoning", &p.name());
    }
    for (start, len) in &h.heap_region {
        flag(&mut a, "--heap-region", &format!("{start:#x}:{len:#x}"));
    }
    if let Some(b) = h.heap_break {
        flag(&mut a, "--heap-break", &format!("{b:#x}"));
    }
    if let Some(l) = h.heap_limit {
        flag(&mut a, "--heap-limit", &format!("{l:#x}"));
    }
    if let Some(w) = h.walk {
        flag(&mut a, "--walk", &w.to_string());
    }
    if let Some(k) = args.keep_cycles {
        flag(&mut a, "--keep-cycles", &k.to_string());
    }
    if let Some(m) = o.method.or(args.method) {
        flag(&mut a, "--method", &m.name());
    }
    for (k, v) in &args.phases {
        flag(&mut a, "--phase", &format!("{k}={v}"));
    }
    for (k, v) in &args.spans {
        flag(&mut a, "--span", &format!("{k}={v}"));
    }
    for (k, v) in args.budgets.iter().chain(&o.budgets) {
        flag(&mut a, "--budget", &format!("{k}={v}"));
    }
    if let Some(s) = o.timeout.or(args.timeout) {
        flag(&mut a, "--timeout", &s.to_string());
    }
    if args.leave == crate::cli::Leave::Halted {
        flag(&mut a, "--leave", &"halted");
    }
    if args.fail_on_skip || o.fail_on_skip {
        a.push("--fail-on-skip".into());
    }
    let mut argv: Vec<OsString> = Vec::new();
    if verbose > 0 {
        argv.push(format!("-{}", "v".repeat(usize::from(verbose))).into());
    }
    argv.push("audit".into());
    argv.push(script.as_os_str().to_os_string());
    argv.extend(a);
    argv.extend(o.args.iter().map(OsString::from));
    ChildCommand {
        program: exe.to_path_buf(),
        args: argv,
    }
}

/// Runs `cmd` to its end, its stdout and stderr into the target's files; stops it (SIGTERM, then
/// SIGKILL after a grace period) when it runs over `limit` or the user interrupts this run.
pub fn run(cmd: ChildCommand, files: &Files, limit: Option<f64>) -> Ending {
    let started = (|| -> Result<Guard> {
        std::fs::create_dir_all(&files.dir)
            .with_context(|| format!("cannot create {}", files.dir.display()))?;
        refuse_links(files)?;
        // A previous run's outputs must not be merged as this run's when the child ends before
        // writing its own (a usage error exits 2 with none).
        for old in [files.junit(), files.json()] {
            match std::fs::remove_file(&old) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("cannot remove {}", old.display()));
                }
                _ => {}
            }
        }
        let out = fresh_log(&files.stdout())?;
        let err = fresh_log(&files.stderr())?;
        // SIGTERM when this run dies, even by SIGKILL: the child then stops its own QEMU. (Its
        // worker thread spawns it and waits for it, so the thread outlives the child otherwise.)
        let spawned = memlife_rsp::spawn_dying_with_parent(&cmd.program, "TERM", |c| {
            c.args(&cmd.args)
                .stdin(Stdio::null())
                .stdout(out.try_clone()?)
                .stderr(err.try_clone()?);
            Ok(())
        })
        .context("cannot start memlife")?;
        Ok(Guard(spawned.child))
    })();
    let mut child = match started {
        Ok(c) => c,
        Err(e) => return Ending::NotStarted(format!("{e:#}")),
    };
    let t0 = Instant::now();
    // When this target was asked to stop, and whether SIGTERM was sent.
    let mut asked: Option<Instant> = None;
    let mut termed = false;
    let mut timed_out = false;
    loop {
        match child.0.try_wait() {
            Ok(Some(_)) if timed_out => return Ending::TimedOut(limit.unwrap_or_default()),
            Ok(Some(status)) => return Ending::Exited(status),
            Ok(None) => {}
            Err(e) => return Ending::NotStarted(format!("waiting for memlife: {e}")),
        }
        match asked {
            None if limit.is_some_and(|l| t0.elapsed().as_secs_f64() > l) => {
                timed_out = true;
                terminate(child.0.id());
                termed = true;
                asked = Some(Instant::now());
            }
            // Ctrl-C in a terminal reaches the children too (one process group): they get the
            // grace period to clean up on their own before a SIGTERM sent to this process alone
            // is passed on.
            None if memlife_core::interrupt::requested() => asked = Some(Instant::now()),
            Some(at) if !termed && at.elapsed() > GRACE => {
                terminate(child.0.id());
                termed = true;
                asked = Some(Instant::now());
            }
            Some(at) if termed && at.elapsed() > GRACE => {
                let _ = child.0.kill();
            }
            _ => {}
        }
        std::thread::sleep(POLL);
    }
}

/// Refuses a symbolic link at OUT/NAME or at its `report` folder: the child writes its outputs
/// through the directories it is given, and a link planted there would carry them (and the
/// JUnit and JSON this run merges) elsewhere. OUT itself is the user's choice and followed.
fn refuse_links(files: &Files) -> Result<()> {
    for dir in [files.dir.clone(), files.dir.join("report")] {
        let linked = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink());
        if linked {
            anyhow::bail!(
                "{} is a symbolic link: memlife writes a target's outputs only into a real directory",
                dir.display()
            );
        }
    }
    Ok(())
}

/// A log file created anew: whatever has the name (a previous run's log, a symbolic or hard link
/// someone planted) is removed, not written through, and the new file is created exclusively, so
/// a link planted meanwhile makes the creation fail instead of being followed.
fn fresh_log(path: &Path) -> Result<std::fs::File> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("cannot remove {}", path.display()));
        }
        _ => {}
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

fn flag(a: &mut Vec<OsString>, name: &str, value: &dyn AsRef<std::ffi::OsStr>) {
    a.push(name.into());
    a.push(value.as_ref().to_os_string());
}

/// SIGTERM to one pid through kill(1) (memlife has no `unsafe` for libc): the child's own
/// handler then removes its breakpoints, writes its outputs and stops its QEMU.
fn terminate(pid: u32) {
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_previous_runs_outputs_are_removed_before_the_child_starts() {
        let dir = std::env::temp_dir().join(format!("memlife-child-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = Files { dir: dir.clone() };
        std::fs::write(files.junit(), "<testsuite/>").unwrap();
        std::fs::write(files.json(), "{}").unwrap();
        let cmd = ChildCommand {
            program: "sh".into(),
            args: vec!["-c".into(), "exit 2".into()],
        };
        let ending = run(cmd, &files, None);
        let stale = (files.junit().exists(), files.json().exists());
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            matches!(ending, Ending::Exited(s) if s.code() == Some(2)),
            "{ending:?}"
        );
        assert_eq!(stale, (false, false));
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("memlife-child-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn echo(text: &str) -> ChildCommand {
        ChildCommand {
            program: "sh".into(),
            args: vec!["-c".into(), format!("echo {text}; echo {text} >&2").into()],
        }
    }

    #[test]
    fn logs_are_new_files_never_written_through_a_planted_link() {
        let root = scratch("logs");
        let files = Files {
            dir: root.join("target"),
        };
        std::fs::create_dir_all(&files.dir).unwrap();
        let victim = root.join("victim");
        std::fs::write(&victim, "keep me").unwrap();
        std::os::unix::fs::symlink(&victim, files.stdout()).unwrap();
        std::fs::hard_link(&victim, files.stderr()).unwrap();
        let ending = run(echo("fresh"), &files, None);
        let kept = std::fs::read_to_string(&victim).unwrap();
        let (out, err) = (
            std::fs::read_to_string(files.stdout()).unwrap(),
            std::fs::read_to_string(files.stderr()).unwrap(),
        );
        let linked = std::fs::symlink_metadata(files.stdout())
            .unwrap()
            .file_type()
            .is_symlink();
        let _ = std::fs::remove_dir_all(&root);
        assert!(matches!(ending, Ending::Exited(_)), "{ending:?}");
        assert_eq!(kept, "keep me");
        assert_eq!((out.as_str(), err.as_str()), ("fresh\n", "fresh\n"));
        assert!(!linked);
    }

    #[test]
    fn a_link_at_the_targets_folder_or_its_report_is_refused() {
        let root = scratch("dirlink");
        let elsewhere = root.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let linked = Files {
            dir: root.join("linked"),
        };
        std::os::unix::fs::symlink(&elsewhere, &linked.dir).unwrap();
        let report = Files {
            dir: root.join("real"),
        };
        std::fs::create_dir_all(&report.dir).unwrap();
        std::os::unix::fs::symlink(&elsewhere, report.dir.join("report")).unwrap();
        // A previous run's JUnit there must not be removed through the link either.
        std::fs::write(elsewhere.join("junit.xml"), "theirs").unwrap();
        let endings = [run(echo("x"), &linked, None), run(echo("x"), &report, None)];
        let written: Vec<_> = std::fs::read_dir(&elsewhere)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        let _ = std::fs::remove_dir_all(&root);
        for ending in endings {
            assert!(
                matches!(&ending, Ending::NotStarted(m) if m.contains("is a symbolic link")),
                "{ending:?}"
            );
        }
        assert_eq!(written, ["junit.xml"]);
    }
}
