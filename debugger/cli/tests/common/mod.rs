//! What the end-to-end tests of the memlife binary share: running memlife itself, and the
//! scenarios; the rest (firmware, guards, gdb) is memlife-testkit's.
#![allow(dead_code, unused_imports, clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

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

pub mod browser;
pub mod serve;

pub use memlife_testkit::firmware::repo;
pub use memlife_testkit::process::{
    ChildGuard, gdb_batch, lldb_batch, run_with_timeout, stderr, stdout, tempdir,
};

/// A bundled script's path (`scripts/NAME`), as an argument.
pub fn bundled_script(name: &str) -> String {
    repo()
        .join("scripts")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

/// Every bundled script (`scripts/*.rhai`), sorted by name.
pub fn bundled_scripts() -> Vec<PathBuf> {
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(repo().join("scripts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rhai"))
        .collect();
    scripts.sort();
    scripts
}

/// Runs an ELF that exits (through semihosting) on QEMU netduinoplus2, at most 120 s: its exit
/// status and its output.
pub fn run_exiting_elf(elf: &Path) -> (Option<i32>, String) {
    let mut cmd = Command::new("qemu-system-arm");
    cmd.args([
        "-M",
        "netduinoplus2",
        "-display",
        "none",
        "-monitor",
        "none",
        "-serial",
        "null",
        "-semihosting-config",
        "enable=on,target=native",
        "-kernel",
    ])
    .arg(elf);
    let out = run_with_timeout(cmd, Duration::from_secs(120));
    (
        out.status.code(),
        format!("{}{}", stdout(&out), stderr(&out)),
    )
}

/// A firmware ELF, built on first use.
pub fn elf(alloc: &str, scenario: &str) -> PathBuf {
    memlife_testkit::firmware::elf(alloc, scenario)
}

/// `memlife` as a child in a process group of its own, so that a guard that kills it also
/// kills the QEMU it started (which is in the same group).
pub fn memlife() -> Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memlife"));
    cmd.process_group(0);
    cmd
}

/// `memlife ARGS` with a 120 s deadline.
pub fn run_memlife(args: &[&str]) -> Output {
    let mut cmd = memlife();
    cmd.args(args);
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

/// The free list's block addresses of a `memlife heap --json` output.
pub fn free_list(v: &serde_json::Value) -> Vec<u64> {
    v["free_list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// Blocks as (addr, size, free), without newlib's unclaimed tail (not a block to gdb).
pub fn blocks(v: &serde_json::Value) -> Vec<(u64, u64, bool)> {
    v["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| !b["unclaimed"].as_bool().unwrap_or(false))
        .map(|b| {
            (
                b["addr"].as_u64().unwrap(),
                b["size"].as_u64().unwrap(),
                b["free"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// `memlife ARGS` that must succeed, its stdout parsed as JSON.
pub fn memlife_json(args: &[&str]) -> serde_json::Value {
    let out = run_memlife(args);
    assert!(
        out.status.success(),
        "memlife {args:?} failed: {}",
        stderr(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Builds a test-written firmware for QEMU netduinoplus2 with newlib-nano: `source` is written
/// to DIR/NAME.c and linked with the bundled start-up code, `_sbrk` and, when `semihosting`,
/// the semihosting exit; returns DIR/NAME.elf.
pub fn build_test_firmware(dir: &Path, name: &str, source: &str, semihosting: bool) -> PathBuf {
    let fw = repo().join("firmware");
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, source).unwrap();
    let elf = dir.join(format!("{name}.elf"));
    let mut gcc = Command::new("arm-none-eabi-gcc");
    gcc.args([
        "-mcpu=cortex-m4",
        "-mthumb",
        "-mfloat-abi=soft",
        "-O2",
        "-g",
        "-std=c11",
    ])
    .arg(&c)
    .arg(fw.join("src/startup.c"))
    .arg(fw.join("src/sysmem.c"));
    if semihosting {
        gcc.arg(fw.join("src/semihost.c"));
    }
    let out = gcc
        .arg(format!("-I{}", fw.join("src").display()))
        .args(["--specs=nano.specs", "-nostartfiles"])
        .arg(format!("-L{}", fw.join("ld").display()))
        .arg(format!("-T{}", fw.join("ld/netduinoplus2.ld").display()))
        .args(["-Wl,--gc-sections", "-Wl,--no-warn-rwx-segments"])
        .arg("-Wl,--defsym=_Min_Heap_Size=98304")
        .arg("-o")
        .arg(&elf)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    elf
}

/// Writes DIR/memlife.toml for `elf` on QEMU netduinoplus2 with the given sections
/// (`[phases]` and the rest) and returns its path.
pub fn write_test_config(dir: &Path, elf: &Path, sections: &str) -> PathBuf {
    let cfg = dir.join("memlife.toml");
    std::fs::write(
        &cfg,
        format!(
            "elf = {:?}\n[target]\nqemu = \"netduinoplus2\"\n{sections}",
            elf.display().to_string()
        ),
    )
    .unwrap();
    cfg
}
