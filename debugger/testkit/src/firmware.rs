//! The repository and its firmware. A test asks for the ELF it needs; when it is missing, the
//! first such ask in a process runs `make -C firmware`, holding an exclusive lock on a file
//! beside the build, so that several test binaries or test threads never run two makes over the
//! same files. An ELF that exists is used as it is (`make test` builds the firmware before the
//! Rust tests, so a present ELF is current there), which keeps a warm test run free of make.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `firmware/build/ALLOC-SCENARIO.elf`, built first when missing.
pub fn elf(alloc: &str, scenario: &str) -> PathBuf {
    let path = repo().join(format!("firmware/build/{alloc}-{scenario}.elf"));
    if !path.is_file() {
        build_once();
    }
    assert!(
        path.is_file(),
        "{} is not built by `make -C firmware`",
        path.display()
    );
    path
}

/// `firmware/build/iterN/ALLOC-SCENARIO.elf`, the build that runs N lifecycles and exits through
/// semihosting, brought up to date by make (`make -C firmware ITERATIONS=N` builds only this
/// file, under the build lock).
pub fn exiting_elf(alloc: &str, scenario: &str, iterations: u32) -> PathBuf {
    let rel = format!("build/iter{iterations}/{alloc}-{scenario}.elf");
    let path = repo().join("firmware").join(&rel);
    // Always through make, unlike `elf`: `make -C firmware` (what `make test` runs first) does
    // not build these, so a present one may predate the sources; make's own check is cheap.
    {
        let _lock = build_lock();
        let out = std::process::Command::new("make")
            .arg("-C")
            .arg(repo().join("firmware"))
            .arg(format!("ITERATIONS={iterations}"))
            .arg(&rel)
            .output()
            .expect("running make (is it installed?)");
        assert!(
            out.status.success(),
            "make -C firmware ITERATIONS={iterations} {rel} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    path
}

/// `firmware/build/iter1/tflm-arena-[SCENARIO-]MODEL-BYTES.elf`: the TFLM firmware's SCENARIO
/// application (`healthy`, or `scratch`: its operator asks for a scratch buffer) with MODEL
/// alone and a BYTES-byte arena, running one cycle and exiting (0: built and ran; 5:
/// AllocateTensors failed), built by `make -C firmware tflm-arena` under the build lock.
pub fn tflm_arena_elf(scenario: &str, model: &str, arena_bytes: u64) -> PathBuf {
    let name = match scenario {
        "healthy" => format!("{model}-{arena_bytes}"),
        other => format!("{other}-{model}-{arena_bytes}"),
    };
    let rel = format!("build/iter1/tflm-arena-{name}.elf");
    let _lock = build_lock();
    let out = std::process::Command::new("make")
        .arg("-C")
        .arg(repo().join("firmware"))
        .args(["tflm-arena", "ITERATIONS=1"])
        .arg(format!("SCENARIO={scenario}"))
        .arg(format!("MODEL={model}"))
        .arg(format!("ARENA_BYTES={arena_bytes}"))
        .output()
        .expect("running make (is it installed?)");
    assert!(
        out.status.success(),
        "make -C firmware tflm-arena SCENARIO={scenario} MODEL={model} ARENA_BYTES={arena_bytes} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    repo().join("firmware").join(rel)
}

/// `firmware/build/iter1/tflm-current-arena-BYTES.elf`: the current-TFLM model firmware
/// (firmware/tflm-current) with a BYTES-byte arena, running one cycle and exiting (0: built and
/// ran; 5: AllocateTensors failed), built by `make -C firmware tflm-current-arena` under the
/// build lock.
pub fn tflm_current_arena_elf(arena_bytes: u64) -> PathBuf {
    let rel = format!("build/iter1/tflm-current-arena-{arena_bytes}.elf");
    let _lock = build_lock();
    let out = std::process::Command::new("make")
        .arg("-C")
        .arg(repo().join("firmware"))
        .args(["tflm-current-arena", "ITERATIONS=1"])
        .arg(format!("ARENA_BYTES={arena_bytes}"))
        .output()
        .expect("running make (is it installed?)");
    assert!(
        out.status.success(),
        "make -C firmware tflm-current-arena ARENA_BYTES={arena_bytes} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    repo().join("firmware").join(rel)
}

/// The exclusive lock beside the build, held while the file lives.
fn build_lock() -> std::fs::File {
    let lock_path = repo().join("firmware/build/.make.lock");
    std::fs::create_dir_all(lock_path.parent().unwrap()).unwrap();
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).unwrap();
    lock
}

/// The ELF named by the environment variable `var` when set (to work on a crate with another
/// firmware), else [`elf`]`(alloc, scenario)`.
pub fn elf_or_env(var: &str, alloc: &str, scenario: &str) -> PathBuf {
    match std::env::var_os(var) {
        Some(p) => PathBuf::from(p),
        None => elf(alloc, scenario),
    }
}

/// Runs `make -C firmware -j2` once per process, under the build lock.
fn build_once() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = repo().join("firmware");
        let _lock = build_lock();
        let out = std::process::Command::new("make")
            .arg("-C")
            .arg(&dir)
            .arg("-j2")
            .output()
            .expect("running make (is it installed?)");
        assert!(
            out.status.success(),
            "make -C firmware failed (see firmware/README.md for the toolchain):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The lock is released when `_lock` is dropped here.
    });
}
