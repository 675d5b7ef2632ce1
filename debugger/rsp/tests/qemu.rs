//! End to end against a real `qemu-system-arm -M netduinoplus2` running the bundled firmware.
//!
//! Needs `qemu-system-arm`; `firmware/build/heap4-healthy.elf` is built on first use. Each test
//! starts its own QEMU on its own free port; the [`QemuProcess`] guard kills it even when an
//! assertion fails. `MEMLIFE_RSP_TEST_ELF` points the tests at another ELF with the same symbols
//! (`model_load`, `model_release`, `xFreeBytesRemaining`), for working on this crate alone.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use memlife_core::{
    BreakpointKind, Breakpoints, Control, Memory, MemoryWrite, Register, Registers, StopReason,
    Target, TargetError, WatchKind, Watchpoints,
};
use memlife_rsp::{GdbRemote, QemuProcess};
use object::{Object, ObjectSymbol};

const MACHINE: &str = "netduinoplus2";
const WAIT: Duration = Duration::from_secs(10);

fn firmware() -> PathBuf {
    memlife_testkit::firmware::elf_or_env("MEMLIFE_RSP_TEST_ELF", "heap4", "healthy")
}

fn symbol(elf: &std::path::Path, name: &str) -> u64 {
    let data = std::fs::read(elf).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let sym = file
        .symbols()
        .find(|s| s.name() == Ok(name))
        .unwrap_or_else(|| panic!("{name} not in {}", elf.display()));
    // Thumb functions have bit 0 set in the symbol table.
    sym.address() & !1
}

fn start() -> (QemuProcess, GdbRemote, PathBuf) {
    let elf = firmware();
    let qemu = QemuProcess::start(MACHINE, &elf, &[]).unwrap();
    let target = qemu.connect().unwrap();
    (qemu, target, elf)
}

fn is_ram(addr: u64) -> bool {
    (0x2000_0000..0x2003_0000).contains(&addr)
}

#[test]
fn registers_and_bulk_memory() {
    let (_qemu, mut t, _) = start();
    assert!(t.is_halted());
    assert!(t.has_target_description(), "QEMU 7.2 offers target.xml");
    assert_eq!(
        t.features().packet_size,
        Some(0x1000),
        "QEMU 7.2's PacketSize"
    );
    assert_eq!(t.max_read(), 2046);
    let pc = t.read_register(Register::ProgramCounter).unwrap();
    let sp = t.read_register(Register::StackPointer).unwrap();
    assert_eq!(pc >> 24, 0x08, "pc {pc:#x} is in flash");
    assert!(is_ram(sp) || sp == 0x2003_0000, "sp {sp:#x} is in RAM");
    let all = t.read_all_registers().unwrap();
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.contains(&"pc") && names.contains(&"xpsr"),
        "{names:?}"
    );
    assert_eq!(all.iter().find(|(n, _)| n == "pc").unwrap().1, pc);
    // Thumb bit set in xPSR at reset.
    let xpsr = all.iter().find(|(n, _)| n == "xpsr").unwrap().1;
    assert_ne!(xpsr & (1 << 24), 0, "xpsr {xpsr:#x}");

    let before = t.link_stats();
    let ram = t.read_vec(0x2000_0000, 4096).unwrap();
    assert_eq!(ram.len(), 4096);
    let after = t.link_stats();
    assert_eq!(after.reads - before.reads, 4096u64.div_ceil(2046));
    assert_eq!(after.bytes - before.bytes, 4096);
    assert_eq!(after.max_read, 2046);
    assert_eq!(t.describe(), format!("gdb-remote {}", _qemu.addr()));
}

#[test]
fn breakpoints_step_off_and_progress() {
    let (_qemu, mut t, elf) = start();
    let release = symbol(&elf, "model_release");
    t.add_breakpoint(release, BreakpointKind::Software).unwrap();
    t.resume().unwrap();
    assert!(!t.is_halted());
    let first = t.wait_for_stop(WAIT).unwrap();
    assert_eq!(first, Some(StopReason::Breakpoint(release)));
    assert_eq!(t.read_register(Register::ProgramCounter).unwrap(), release);

    // Stop at the return address: proves the resume stepped off and the call ran.
    let ret = t.read_register(Register::ReturnAddress).unwrap() & !1;
    assert_ne!(ret, release);
    t.add_breakpoint(ret, BreakpointKind::Software).unwrap();
    t.resume().unwrap();
    assert_eq!(
        t.wait_for_stop(WAIT).unwrap(),
        Some(StopReason::Breakpoint(ret))
    );
    t.remove_breakpoint(ret, BreakpointKind::Software).unwrap();

    // And the next iteration reaches model_release again.
    t.resume().unwrap();
    assert_eq!(
        t.wait_for_stop(WAIT).unwrap(),
        Some(StopReason::Breakpoint(release))
    );
    // Continuing straight from the breakpoint also works (no immediate re-stop loop).
    let started = Instant::now();
    for _ in 0..3 {
        t.resume().unwrap();
        assert_eq!(
            t.wait_for_stop(WAIT).unwrap(),
            Some(StopReason::Breakpoint(release))
        );
    }
    assert!(started.elapsed() < WAIT);
    assert_eq!(t.inserted(), vec![(release, BreakpointKind::Software)]);

    // Single steps move the pc off the breakpoint.
    assert_eq!(t.step().unwrap(), StopReason::Step);
    assert_ne!(t.read_register(Register::ProgramCounter).unwrap(), release);

    // Hardware breakpoints too.
    t.remove_breakpoint(release, BreakpointKind::Software)
        .unwrap();
    t.add_breakpoint(release, BreakpointKind::Hardware).unwrap();
    t.resume().unwrap();
    assert_eq!(
        t.wait_for_stop(WAIT).unwrap(),
        Some(StopReason::Breakpoint(release))
    );
    t.resume().unwrap();
    assert_eq!(
        t.wait_for_stop(WAIT).unwrap(),
        Some(StopReason::Breakpoint(release))
    );
}

#[test]
fn memory_write_watchpoint_and_unmapped() {
    let (_qemu, mut t, elf) = start();
    let word = symbol(&elf, "xFreeBytesRemaining");
    assert!(is_ram(word));

    let original = t.read_u32(word).unwrap();
    t.write(word, &0xdead_beefu32.to_le_bytes()).unwrap();
    assert_eq!(t.read_u32(word).unwrap(), 0xdead_beef);
    t.write(word, &original.to_le_bytes()).unwrap();
    assert_eq!(t.read_u32(word).unwrap(), original);
    // A write larger than one packet, read back.
    let scratch: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
    let saved = t.read_vec(0x2001_0000, scratch.len()).unwrap();
    t.write(0x2001_0000, &scratch).unwrap();
    assert_eq!(t.read_vec(0x2001_0000, scratch.len()).unwrap(), scratch);
    t.write(0x2001_0000, &saved).unwrap();

    // Unmapped memory is an error, not a hang.
    let err = t.read_vec(0xf000_0000, 16).unwrap_err();
    assert!(
        matches!(
            err,
            TargetError::Unmapped {
                addr: 0xf000_0000,
                ..
            }
        ),
        "{err:?}"
    );
    // The link is still fine afterwards.
    assert_eq!(t.read_u32(word).unwrap(), original);

    t.add_watchpoint(word, 4, WatchKind::Write).unwrap();
    t.resume().unwrap();
    let hit = t.wait_for_stop(WAIT).unwrap();
    assert_eq!(
        hit,
        Some(StopReason::Watchpoint {
            addr: word,
            kind: WatchKind::Write
        })
    );
    let pc1 = t.read_register(Register::ProgramCounter).unwrap();
    let v1 = t.read_u32(word).unwrap();
    // Resuming after a watchpoint runs on to the next store, not the same one again.
    t.resume().unwrap();
    let hit2 = t.wait_for_stop(WAIT).unwrap();
    assert!(
        matches!(hit2, Some(StopReason::Watchpoint { .. })),
        "{hit2:?}"
    );
    let pc2 = t.read_register(Register::ProgramCounter).unwrap();
    let v2 = t.read_u32(word).unwrap();
    assert!(pc1 != pc2 || v1 != v2, "second hit is a new store");
    t.remove_watchpoint(word, 4, WatchKind::Write).unwrap();
}

#[test]
fn halt_reset_and_drop() {
    let (qemu, mut t, _) = start();
    let reset_pc = t.read_register(Register::ProgramCounter).unwrap();
    t.resume().unwrap();
    assert_eq!(t.wait_for_stop(Duration::from_millis(200)).unwrap(), None);
    assert!(matches!(
        t.read_u32(0x2000_0000),
        Err(TargetError::NotHalted)
    ));
    assert_eq!(t.halt().unwrap(), StopReason::Halted);
    assert!(t.is_halted());
    let pc = t.read_register(Register::ProgramCounter).unwrap();
    assert_eq!(pc >> 24, 0x08);

    t.reset(true).unwrap();
    assert!(t.is_halted());
    assert_eq!(t.read_register(Register::ProgramCounter).unwrap(), reset_pc);
    // QEMU was recognised during the handshake: its own reset word, no `monitor help`.
    assert_eq!(t.reset_command(), Some("system_reset"));
    // Monitor commands bring back QEMU's console output.
    let out = t.monitor("info registers").unwrap();
    assert!(out.contains(&format!("R15={reset_pc:08x}")), "{out}");
    t.reset(false).unwrap();
    assert!(!t.is_halted());
    assert_eq!(t.halt().unwrap(), StopReason::Halted);

    let pid = qemu.pid();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    drop(t);
    drop(qemu);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "QEMU {pid} still runs after drop"
    );
}

#[test]
fn missing_elf_is_a_clear_error() {
    let err =
        QemuProcess::start(MACHINE, std::path::Path::new("/nonexistent.elf"), &[]).unwrap_err();
    assert!(err.to_string().contains("/nonexistent.elf"), "{err}");
}

/// A firmware that asks the host for a file (SYS_OPEN "w", then SYS_WRITE) gets an error code,
/// and no file appears; its console output and SYS_EXIT status still come through. With
/// QEMU's native semihosting the same firmware created the file and exited 7.
#[test]
fn firmware_semihosting_cannot_create_host_files() {
    let probe = std::path::Path::new("/tmp/memlife-semihost-probe.txt");
    let _ = std::fs::remove_file(probe);
    let elf = memlife_testkit::firmware::elf("hostile", "semihost-open");
    let qemu = QemuProcess::start(MACHINE, &elf, &[]).unwrap();
    let mut t = qemu.connect().unwrap();
    t.resume().unwrap();
    let stop = t.wait_for_stop(WAIT).unwrap();
    assert_eq!(
        stop,
        Some(StopReason::Exited(0)),
        "0 = the open was refused"
    );
    assert!(!probe.exists(), "the firmware created {}", probe.display());
}

/// QEMU killed by SIGTERM still sends `W00`; memlife reports the signal, not "exited with
/// status 0".
#[test]
fn qemu_killed_by_sigterm_is_reported_as_such() {
    let (qemu, mut t, _) = start();
    t.resume().unwrap();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &qemu.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let stop = t.wait_for_stop(WAIT).unwrap();
    assert_eq!(stop, Some(StopReason::Terminated(15)), "{}", qemu.stderr());
    let err = t.read_u32(0x2000_0000).unwrap_err();
    assert!(
        err.to_string().contains("QEMU was killed by signal 15"),
        "{err}"
    );
}

/// A fresh directory for one test, with an outside directory next to it.
fn semihosting_scratch(tag: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let base = std::env::temp_dir().join(format!("memlife-shdir-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let dir = base.join("dir");
    let outside = base.join("outside");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    (dir, outside)
}

/// With a semihosting directory the firmware writes, reads back (after a seek) and removes
/// files in it; an absolute path, `..`, a linked folder and a linked file planted in it are
/// refused, and nothing outside it is created or changed. The firmware's exit status has a bit
/// for every expectation that failed (see `firmware/hostile/semihost_dir.c`).
#[test]
fn semihosting_dir_confines_the_firmware_to_it() {
    let (dir, outside) = semihosting_scratch("confine");
    let victim = outside.join("victim.txt");
    std::fs::write(&victim, "the user's file\n").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("link")).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("linkfile")).unwrap();
    let absolute = std::path::Path::new("/tmp/memlife-semihost-dir-absolute.txt");
    let _ = std::fs::remove_file(absolute);

    let elf = memlife_testkit::firmware::elf("hostile", "semihost-dir");
    let qemu = QemuProcess::start(MACHINE, &elf, &[]).unwrap();
    let mut t = qemu.connect().unwrap();
    t.set_semihosting_dir(Some(memlife_rsp::SemihostingDir::open(&dir).unwrap()));
    t.resume().unwrap();
    let stop = t.wait_for_stop(WAIT).unwrap();
    assert_eq!(
        stop,
        Some(StopReason::Exited(0)),
        "bits of failed expectations"
    );

    assert_eq!(
        std::fs::read_to_string(dir.join("out.txt")).unwrap(),
        "written by the firmware under the directory\n"
    );
    assert!(
        !dir.join("gone.txt").exists(),
        "the firmware's remove did nothing"
    );
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "the user's file\n"
    );
    let mut left: Vec<_> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, vec![std::ffi::OsString::from("victim.txt")]);
    assert!(!dir.parent().unwrap().join("escape.txt").exists());
    assert!(!absolute.exists());
    assert_eq!(t.semihosting_dir().unwrap().written(), 44);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

/// The same firmware without a directory gets no file at all: every open is refused.
#[test]
fn without_semihosting_dir_the_same_firmware_gets_no_file() {
    let elf = memlife_testkit::firmware::elf("hostile", "semihost-dir");
    let qemu = QemuProcess::start(MACHINE, &elf, &[]).unwrap();
    let mut t = qemu.connect().unwrap();
    t.resume().unwrap();
    let stop = t.wait_for_stop(WAIT).unwrap();
    // 1 (no write), 2 (no read back), 64 (no file to remove); nothing escaped.
    assert_eq!(stop, Some(StopReason::Exited(1 | 2 | 64)));
}

/// The write cap holds: a firmware past it gets an error and the file stops growing.
#[test]
fn semihosting_dir_caps_what_the_firmware_writes() {
    let (dir, _outside) = semihosting_scratch("cap");
    let elf = memlife_testkit::firmware::elf("hostile", "semihost-dir");
    let qemu = QemuProcess::start(MACHINE, &elf, &[]).unwrap();
    let mut t = qemu.connect().unwrap();
    t.set_semihosting_dir(Some(
        memlife_rsp::SemihostingDir::with_max_write(&dir, 10).unwrap(),
    ));
    t.resume().unwrap();
    let stop = t.wait_for_stop(WAIT).unwrap();
    // The write came up short (1) and the read past the cap found too little (2); no link is
    // planted here, so "linkfile" is a plain new file inside the directory (32).
    assert_eq!(stop, Some(StopReason::Exited(1 | 2 | 32)));
    assert_eq!(
        std::fs::read_to_string(dir.join("out.txt")).unwrap(),
        "written by"
    );
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

/// SYS_FLEN (QEMU's `fstat`) and SYS_RENAME (`rename`) are served inside the semihosting
/// directory; renames out of it, through a linked folder, of a link or a hard-linked file, and
/// over a hard-linked file are refused, and nothing outside changes. The firmware's exit status
/// has a bit for every expectation that failed (see `firmware/hostile/semihost_meta.c`).
#[test]
fn semihosting_dir_serves_flen_and_rename_inside_it_only() {
    let (dir, outside) = semihosting_scratch("meta");
    let victim = outside.join("victim.txt");
    std::fs::write(&victim, "the user's file\n").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("link")).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("linkfile")).unwrap();
    std::fs::hard_link(&victim, dir.join("hardfile")).unwrap();
    let absolute = std::path::Path::new("/tmp/memlife-semihost-meta-absolute.txt");
    let _ = std::fs::remove_file(absolute);

    let elf = memlife_testkit::firmware::elf("hostile", "semihost-meta");
    let qemu = QemuProcess::start(MACHINE, &elf, &[]).unwrap();
    let mut t = qemu.connect().unwrap();
    t.set_semihosting_dir(Some(memlife_rsp::SemihostingDir::open(&dir).unwrap()));
    t.resume().unwrap();
    let stop = t.wait_for_stop(WAIT).unwrap();
    assert_eq!(
        stop,
        Some(StopReason::Exited(0)),
        "bits of failed expectations"
    );

    assert_eq!(
        std::fs::read_to_string(dir.join("renamed.txt")).unwrap(),
        "0123456789abcdefghij"
    );
    assert!(!dir.join("data.txt").exists());
    let mut inside: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    inside.sort();
    assert_eq!(inside, ["hardfile", "link", "linkfile", "renamed.txt"]);
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "the user's file\n"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    assert!(!dir.parent().unwrap().join("escaped.txt").exists());
    assert!(!absolute.exists());
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

/// Without a directory the same firmware gets neither: its file is never written, so nothing
/// to measure or rename, and every rename is refused.
#[test]
fn without_semihosting_dir_flen_and_rename_are_refused() {
    let elf = memlife_testkit::firmware::elf("hostile", "semihost-meta");
    let qemu = QemuProcess::start(MACHINE, &elf, &[]).unwrap();
    let mut t = qemu.connect().unwrap();
    t.resume().unwrap();
    let stop = t.wait_for_stop(WAIT).unwrap();
    assert_eq!(stop, Some(StopReason::Exited(1 | 2 | 4 | 8)));
}
