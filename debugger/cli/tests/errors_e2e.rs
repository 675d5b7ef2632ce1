//! Bad input gets a clear message and exit code 2, never a panic or a hang.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use std::time::Duration;

use common::*;
use memlife_rsp::QemuProcess;

fn expect_exit_2(args: &[&str], needle: &str) -> String {
    let out = run_memlife(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "memlife {args:?}: {err}");
    assert!(
        err.contains(needle),
        "memlife {args:?}: expected `{needle}` in: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn missing_file() {
    expect_exit_2(
        &["symbols", "--elf", "/nonexistent/fw.elf"],
        "cannot read /nonexistent/fw.elf",
    );
}

#[test]
fn not_an_elf() {
    let cargo = repo().join("Cargo.toml");
    expect_exit_2(
        &["symbols", "--elf", cargo.to_str().unwrap()],
        "is not an ELF file",
    );
}

#[test]
fn no_dwarf() {
    let dir = std::env::temp_dir().join(format!("memlife-strip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stripped = dir.join("stripped.elf");
    let status = std::process::Command::new("arm-none-eabi-strip")
        .arg("--strip-debug")
        .arg(elf("heap4", "healthy"))
        .arg("-o")
        .arg(&stripped)
        .status()
        .unwrap();
    assert!(status.success());
    expect_exit_2(
        &["symbols", "--elf", stripped.to_str().unwrap()],
        "has no DWARF debug information",
    );
}

#[test]
fn allocator_not_found_names_what_was_looked_for() {
    // A real ELF with DWARF and no embedded allocator: this very binary.
    let me = env!("CARGO_BIN_EXE_memlife");
    let err = expect_exit_2(
        &["symbols", "--elf", me],
        "no supported heap allocator found",
    );
    assert!(
        err.contains("xStart") && err.contains("__malloc_free_list"),
        "{err}"
    );
    let heap4 = elf("heap4", "healthy");
    let err = expect_exit_2(
        &[
            "symbols",
            "--elf",
            heap4.to_str().unwrap(),
            "--allocator",
            "nano",
        ],
        "__malloc_free_list",
    );
    assert!(err.contains("newlib-nano"), "{err}");
    expect_exit_2(
        &[
            "symbols",
            "--elf",
            heap4.to_str().unwrap(),
            "--allocator",
            "tlsf9",
        ],
        "unknown allocator",
    );
}

#[test]
fn nothing_listening() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let heap4 = elf("heap4", "healthy");
    expect_exit_2(
        &[
            "heap",
            "--elf",
            heap4.to_str().unwrap(),
            "--gdb",
            &format!("127.0.0.1:{port}"),
        ],
        "cannot connect to the GDB server",
    );
}

#[test]
fn a_breakpoint_never_reached_times_out_and_leaves_no_breakpoint() {
    let heap4 = elf("heap4", "healthy");
    let qemu = QemuProcess::start("netduinoplus2", &heap4, &[]).unwrap();
    let server = qemu.addr().to_string();
    let e = heap4.to_str().unwrap();
    expect_exit_2(
        &[
            "heap",
            "--elf",
            e,
            "--gdb",
            &server,
            "--at",
            "fw_oom",
            "--timeout",
            "1",
        ],
        "not reached within 1.0 s",
    );
    // The breakpoint is gone: the next session runs to model_release without stopping at fw_oom,
    // and gdb sees no breakpoints of ours.
    let out = run_memlife(&[
        "heap",
        "--elf",
        e,
        "--gdb",
        &server,
        "--at",
        "model_release",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pc"]["function"], "model_release");
}

#[test]
fn a_target_that_dies_mid_session() {
    let heap4 = elf("heap4", "healthy");
    let qemu = QemuProcess::start("netduinoplus2", &heap4, &[]).unwrap();
    let server = qemu.addr().to_string();
    let mut cmd = memlife();
    cmd.args([
        "heap",
        "--elf",
        heap4.to_str().unwrap(),
        "--gdb",
        &server,
        "--at",
        "fw_oom",
        "--timeout",
        "60",
    ]);
    let handle = std::thread::spawn(move || run_with_timeout(cmd, Duration::from_secs(60)));
    std::thread::sleep(Duration::from_millis(1500));
    drop(qemu);
    let out = handle.join().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("gone") || err.contains("connection"), "{err}");
}

#[test]
fn an_unknown_function_for_at() {
    let heap4 = elf("heap4", "healthy");
    expect_exit_2(
        &[
            "heap",
            "--elf",
            heap4.to_str().unwrap(),
            "--qemu",
            "netduinoplus2",
            "--at",
            "no_such_fn",
        ],
        "function `no_such_fn` is not in the ELF",
    );
}

#[test]
fn a_snapshot_that_is_not_one() {
    let heap4 = elf("heap4", "healthy");
    let cargo = repo().join("Cargo.toml");
    expect_exit_2(
        &[
            "heap",
            "--elf",
            heap4.to_str().unwrap(),
            "--snapshot",
            cargo.to_str().unwrap(),
        ],
        "not a memlife snapshot",
    );
}

#[test]
fn help_and_version() {
    let out = run_memlife(&["--help"]);
    assert!(out.status.success());
    let text = stdout(&out);
    for cmd in ["symbols", "heap", "snapshot"] {
        assert!(text.contains(cmd), "{text}");
    }
    let out = run_memlife(&["--version"]);
    assert_eq!(
        stdout(&out).trim(),
        format!("memlife {}", env!("CARGO_PKG_VERSION"))
    );
}
