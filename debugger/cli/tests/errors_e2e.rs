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

/// Issue 30, round-2 red team: `--elf /dev/zero` read without bound (24 GB, then the kernel's
/// OOM killer) and a FIFO blocked forever. Only regular files are read, and only up to a size.
#[test]
fn devices_and_fifos_are_refused_as_elf_and_snapshot() {
    expect_exit_2(
        &["symbols", "--elf", "/dev/zero"],
        "cannot read /dev/zero: not a regular file (a character device)",
    );
    let dir = tempdir("fifo-elf");
    let fifo = dir.join("fw.elf");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let fifo_s = fifo.to_str().unwrap();
    expect_exit_2(&["symbols", "--elf", fifo_s], "not a regular file (a FIFO)");
    let elf = elf("heap4", "healthy");
    expect_exit_2(
        &["heap", "--elf", elf.to_str().unwrap(), "--snapshot", fifo_s],
        "not a regular file (a FIFO)",
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

/// A heap near 2^64 would overflow the walkers' address additions: refused up front.
#[test]
fn heap_symbols_above_4_gib() {
    let dir = memlife_testkit::process::tempdir("cli-heap-above-4gib");
    let high = memlife_testkit::host_elf::heap4_near_top_of_64_bits(&dir);
    expect_exit_2(
        &["symbols", "--elf", high.to_str().unwrap()],
        "`ucHeap` at 0xffffffffffffc000 (8192 bytes) ends above 4 GiB",
    );
    let _ = std::fs::remove_dir_all(&dir);
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
            "fw_halted",
            "--timeout",
            "1",
        ],
        "not reached within 1.0 s",
    );
    // The breakpoint is gone: the next session runs to model_release without stopping at fw_halted,
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
        "fw_halted",
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

#[test]
fn ctrl_c_ends_an_audit_cleanly_and_keeps_its_reports() {
    let dir = tempdir("interrupt");
    let script = dir.join("forever.rhai");
    std::fs::write(
        &script,
        "let t = target();\ncheck(\"started\", true, \"before the loop\");\nloop { t.phase(\"inference_run\"); }\n",
    )
    .unwrap();
    let json = dir.join("audit.json");
    let junit = dir.join("junit.xml");
    let mut cmd = memlife();
    cmd.arg("audit")
        .arg("--elf")
        .arg(elf("heap4", "healthy"))
        .args(["--qemu", "netduinoplus2", "--json"])
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .arg(&script)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut guard = ChildGuard(cmd.spawn().unwrap());
    let pid = guard.0.id();
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        guard.0.try_wait().unwrap().is_none(),
        "the endless audit ended by itself"
    );
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = guard.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "memlife did not end after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut guard.0.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // What the script found before the interrupt is on disk, with the reason it stopped.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let text = report.to_string();
    assert!(text.contains("\"started\""), "{text}");
    assert!(text.contains("interrupted by the user"), "{text}");
    assert!(std::fs::read_to_string(&junit).unwrap().contains("started"));
}

#[test]
fn a_script_that_keeps_its_target_in_a_reference_cycle_ends_normally() {
    let dir = tempdir("cycle");
    let script = dir.join("cycle.rhai");
    std::fs::write(
        &script,
        "let t = target();\nlet m = #{t: t};\nlet f = || m;\nm.f = f;\n\
         let load = t.phase(\"model_load\");\ncheck(\"loaded\", load.allocs > 0, \"\");\n",
    )
    .unwrap();
    let json = dir.join("audit.json");
    let elf = elf("heap4", "healthy");
    let out = run_memlife(&[
        "audit",
        "--elf",
        elf.to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
        "--json",
        json.to_str().unwrap(),
        script.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["checks"][0]["name"], "loaded", "{report}");
}

#[test]
fn invalid_timeouts_are_refused_not_panicked_on() {
    let elf = elf("heap4", "healthy");
    let elf = elf.to_str().unwrap();
    for bad in ["-1", "nan", "inf", "1e30", "18446744073709551616", "0"] {
        let flag = format!("--timeout={bad}");
        expect_exit_2(
            &[
                "audit",
                "--elf",
                elf,
                "--gdb",
                "127.0.0.1:1",
                &flag,
                "x.rhai",
            ],
            "timeout",
        );
        expect_exit_2(
            &[
                "heap",
                "--elf",
                elf,
                "--gdb",
                "127.0.0.1:1",
                "--at",
                "main",
                &flag,
            ],
            "timeout",
        );
    }
    // The same values in memlife.toml: the file is named, before any target is touched.
    let dir = tempdir("timeout-config");
    for bad in ["-1", "nan", "inf", "1e30", "18446744073709551616.0"] {
        let config = dir.join("memlife.toml");
        std::fs::write(&config, format!("timeout = {bad}\n")).unwrap();
        let err = expect_exit_2(
            &[
                "audit",
                "--config",
                config.to_str().unwrap(),
                "--elf",
                elf,
                "--gdb",
                "127.0.0.1:1",
                "x.rhai",
            ],
            "timeout",
        );
        assert!(err.contains("memlife.toml"), "{bad}: {err}");
    }
}

/// A snapshot whose description carries terminal escape sequences: the text output shows them
/// escaped, so a file cannot clear the screen or retitle the terminal.
#[test]
fn text_output_escapes_control_characters_from_a_snapshot() {
    let dir = tempdir("snap-escape");
    let elf = elf("heap4", "healthy");
    let e = elf.to_str().unwrap();
    let file = dir.join("heap.mlsnap");
    let f = file.to_str().unwrap();
    let out = run_memlife(&[
        "snapshot",
        "--elf",
        e,
        "--qemu",
        "netduinoplus2",
        "--at",
        "model_release",
        "-o",
        f,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Rewrite the header's description: magic (8), version (4), header length (4), JSON.
    let bytes = std::fs::read(&file).unwrap();
    let len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&bytes[16..16 + len]).unwrap();
    header["description"] = "evil \u{1b}[2J\u{1b}]0;owned\u{7}\r".into();
    let json = serde_json::to_vec(&header).unwrap();
    let mut rewritten = bytes[..12].to_vec();
    rewritten.extend((json.len() as u32).to_le_bytes());
    rewritten.extend(&json);
    rewritten.extend(&bytes[16 + len..]);
    std::fs::write(&file, rewritten).unwrap();
    let out = run_memlife(&["heap", "--elf", e, "--snapshot", f]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("evil \\u{1b}[2J"), "{text}");
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{text:?}"
    );
}

/// Without `setpriv` on PATH a QEMU memlife starts would outlive a SIGKILL of memlife: memlife
/// says so instead of promising it.
#[test]
fn without_setpriv_memlife_says_qemu_may_outlive_a_sigkill() {
    let dir = tempdir("no-setpriv");
    let qemu = std::process::Command::new("sh")
        .args(["-c", "command -v qemu-system-arm"])
        .output()
        .unwrap();
    let qemu = String::from_utf8(qemu.stdout).unwrap();
    std::os::unix::fs::symlink(qemu.trim(), dir.join("qemu-system-arm")).unwrap();
    let elf = elf("heap4", "healthy");
    let mut cmd = memlife();
    cmd.env("PATH", &dir).args([
        "heap",
        "--elf",
        elf.to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
        "--at",
        "model_release",
    ]);
    let out = run_with_timeout(cmd, Duration::from_secs(120));
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("setpriv") && err.contains("SIGKILL"), "{err}");
}

/// Without QEMU on PATH memlife says it is not installed, whether setpriv is there (and fails to
/// run it) or not.
#[test]
fn without_qemu_memlife_says_it_is_not_installed() {
    let dir = tempdir("no-qemu");
    let setpriv = std::process::Command::new("sh")
        .args(["-c", "command -v setpriv"])
        .output()
        .unwrap();
    let setpriv = String::from_utf8(setpriv.stdout).unwrap();
    let with_setpriv = dir.join("with-setpriv");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&with_setpriv).unwrap();
    std::fs::create_dir_all(&empty).unwrap();
    if !setpriv.trim().is_empty() {
        std::os::unix::fs::symlink(setpriv.trim(), with_setpriv.join("setpriv")).unwrap();
    }
    let elf = elf("heap4", "healthy");
    for path in [&with_setpriv, &empty] {
        let mut cmd = memlife();
        cmd.env("PATH", path).args([
            "heap",
            "--elf",
            elf.to_str().unwrap(),
            "--qemu",
            "netduinoplus2",
        ]);
        let out = run_with_timeout(cmd, Duration::from_secs(60));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("qemu-system-arm is not installed"),
            "{}: {err}",
            path.display()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--deadline` bounds the whole command, however patient `--timeout` is.
#[test]
fn the_whole_command_deadline_ends_a_long_wait() {
    let elf = elf("heap4", "healthy");
    let started = std::time::Instant::now();
    let err = expect_exit_2(
        &[
            "heap",
            "--elf",
            elf.to_str().unwrap(),
            "--qemu",
            "netduinoplus2",
            "--at",
            "model_release",
            "--hit",
            "100000",
            "--timeout",
            "600",
            "--deadline",
            "2",
        ],
        "--deadline",
    );
    assert!(started.elapsed() < Duration::from_secs(30), "{err}");
    expect_exit_2(&["heap", "--elf", "x", "--deadline", "nan"], "timeout");
}

/// A firmware that HardFaults in a phase: the audit ends at once (not at its timeout) with the
/// fault, where and when it happened, the status registers decoded and the call chain; the
/// JSON report carries the same message.
#[test]
fn a_faulting_firmware_is_reported_as_a_fault_not_a_missed_breakpoint() {
    let dir = tempdir("fault");
    let script = dir.join("load.rhai");
    std::fs::write(
        &script,
        "let t = target();\nlet load = t.phase(\"model_load\");\ncheck(\"loaded\", load.allocs > 0, \"\");\n",
    )
    .unwrap();
    let json = dir.join("audit.json");
    let elf = elf("hostile", "fault");
    let started = std::time::Instant::now();
    let err = expect_exit_2(
        &[
            "audit",
            "--elf",
            elf.to_str().unwrap(),
            "--qemu",
            "netduinoplus2",
            "--timeout",
            "60",
            "--json",
            json.to_str().unwrap(),
            script.to_str().unwrap(),
        ],
        "target faulted: HardFault at pc 0x",
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "waited for the timeout: {err}"
    );
    for part in [
        "in decode_layer (",
        "fault.c:",
        "during phase model_load",
        "CFSR 0x00010000: UNDEFINSTR",
        "HFSR 0x40000000: FORCED",
        "call chain: decode_layer",
    ] {
        assert!(err.contains(part), "`{part}` in: {err}");
    }
    assert!(!err.contains("not reached"), "{err}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let message = report["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("UNDEFINSTR"), "{report}");
}

/// Rhai's limits hold: an array past its bound and a script that piles up memory (every value
/// within bounds, their sum not) end as script errors with the line, exit 2, in bounded time.
#[test]
fn script_limits_end_a_script_with_its_line() {
    let dir = tempdir("rhai-limits");
    let elf = elf("heap4", "healthy");
    for (name, source, line, needle) in [
        (
            "push.rhai",
            "let a = [];\nfor i in 0..200000 { a.push(i); }\n",
            ":2:",
            "array",
        ),
        (
            "memory.rhai",
            "let s = \"x\";\nwhile s.len() < 500000 { s += s; }\nlet m = #{};\nfor i in 0..60000 {\n    m[\"k\" + i] = s + i;\n}\n",
            ":5:",
            "MiB of memory",
        ),
    ] {
        let script = dir.join(name);
        std::fs::write(&script, source).unwrap();
        let started = std::time::Instant::now();
        let err = expect_exit_2(
            &[
                "audit",
                "--elf",
                elf.to_str().unwrap(),
                "--qemu",
                "netduinoplus2",
                script.to_str().unwrap(),
            ],
            needle,
        );
        assert!(err.contains(&format!("{name}{line}")), "{err}");
        assert!(started.elapsed() < Duration::from_secs(60), "{name}: {err}");
    }
}

#[test]
fn serve_refuses_a_listen_address_that_is_neither_tcp_nor_unix() {
    let elf = elf("heap4", "healthy");
    expect_exit_2(
        &[
            "serve",
            "--elf",
            elf.to_str().unwrap(),
            "--qemu",
            "netduinoplus2",
            "--listen",
            "nope",
        ],
        "give HOST:PORT or unix:PATH",
    );
}

#[test]
fn bad_poisoning_or_caps() {
    let tlsf = elf("tlsf", "healthy");
    let tlsf = tlsf.to_str().unwrap();
    expect_exit_2(
        &["symbols", "--elf", tlsf, "--poisoning", "heavy"],
        "unknown heap poisoning `heavy` (none, light, comprehensive)",
    );
    expect_exit_2(
        &[
            "heap",
            "--elf",
            tlsf,
            "--qemu",
            "netduinoplus2",
            "--caps",
            "FAST",
        ],
        "unknown heap capability `FAST`",
    );
    let heap4 = elf("heap4", "healthy");
    expect_exit_2(
        &[
            "heap",
            "--elf",
            heap4.to_str().unwrap(),
            "--qemu",
            "netduinoplus2",
            "--caps",
            "8BIT",
        ],
        "--caps: heap capabilities are ESP-IDF's; this firmware's heap is freertos-heap4",
    );
}

#[test]
fn a_wrong_name_in_memlife_toml_exits_2_naming_it_and_the_nearest_valid_one() {
    let dir = tempdir("config-names");
    let elf = elf("heap4", "healthy");
    let script = repo().join("scripts/load-peak.rhai");
    for (toml, wanted) in [
        (
            "[budget]\ncycles = 1\n",
            "unknown table [budget]; did you mean `budgets`?",
        ),
        (
            "[trace]\nmethdo = \"trace\"\n",
            "unknown key `methdo` in [trace]; did you mean `method`?",
        ),
        (
            "[phases]\nload = \"model_lod\"\n",
            "[phases] load: no function `model_lod` in the ELF; did you mean `model_load`?",
        ),
        (
            "[spans]\nbiuld = \"op_init\"\n",
            "[spans] `biuld` is neither a role",
        ),
    ] {
        let cfg = dir.join("memlife.toml");
        std::fs::write(&cfg, toml).unwrap();
        let out = run_memlife(&[
            "audit",
            "--config",
            cfg.to_str().unwrap(),
            "--elf",
            elf.to_str().unwrap(),
            "--qemu",
            "netduinoplus2",
            script.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{toml}: {err}");
        assert!(err.contains(wanted), "{toml}: {err}");
    }
}

/// Runs the semihosting test firmware to its end (`--at` a handler it never enters) and returns
/// memlife's stderr; the firmware's exit status is in it.
fn run_semihost_dir(extra: &[&str]) -> String {
    let elf = elf("hostile", "semihost-dir");
    let mut args = vec![
        "heap",
        "--elf",
        elf.to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
        "--at",
        "Fault_Handler",
        "--timeout",
        "60",
    ];
    args.extend_from_slice(extra);
    expect_exit_2(&args, "before reaching Fault_Handler")
}

/// `--semihosting-dir DIR`: the firmware's file appears in DIR with its content, a file it
/// removes is gone, and an absolute path, `..`, a linked folder and a linked file planted in
/// DIR are refused (said once): nothing outside DIR is created or changed.
#[test]
fn semihosting_dir_lets_the_firmware_write_there_and_nowhere_else() {
    let base = tempdir("shdir-e2e");
    let dir = base.join("dir");
    let outside = base.join("outside");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let victim = outside.join("victim.txt");
    std::fs::write(&victim, "the user's file\n").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("link")).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("linkfile")).unwrap();
    let absolute = std::path::Path::new("/tmp/memlife-semihost-dir-absolute.txt");
    let _ = std::fs::remove_file(absolute);

    let err = run_semihost_dir(&["--semihosting-dir", dir.to_str().unwrap()]);
    assert!(err.contains("exited with status 0 before"), "{err}");
    assert_eq!(
        err.matches("refused the firmware's semihosting request")
            .count(),
        1,
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("out.txt")).unwrap(),
        "written by the firmware under the directory\n"
    );
    assert!(!dir.join("gone.txt").exists());
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "the user's file\n"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    assert!(!base.join("escape.txt").exists());
    assert!(!absolute.exists());
    let _ = std::fs::remove_dir_all(&base);
}

/// Without the flag the same firmware gets no file (status 1|2|64: nothing written, nothing
/// read back, nothing to remove), and a directory that is not one is the user's error.
#[test]
fn without_semihosting_dir_no_file_and_a_bad_dir_is_refused() {
    let err = run_semihost_dir(&[]);
    assert!(err.contains("exited with status 67 before"), "{err}");
    assert!(!std::path::Path::new("/tmp/memlife-semihost-dir-absolute.txt").exists());
    let elf = elf("hostile", "semihost-dir");
    expect_exit_2(
        &[
            "heap",
            "--elf",
            elf.to_str().unwrap(),
            "--qemu",
            "netduinoplus2",
            "--semihosting-dir",
            "/nonexistent/memlife-dir",
        ],
        "--semihosting-dir /nonexistent/memlife-dir: not a directory memlife can open",
    );
}

/// A GDB-remote proxy between memlife and QEMU that holds every memory reply (a packet of 64
/// hex digits or more) for `delay` before passing it on, and counts them: a slow server.
struct SlowReplies {
    addr: String,
    replies: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl SlowReplies {
    fn start(upstream: String, delay: Duration) -> SlowReplies {
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let replies = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = replies.clone();
        std::thread::spawn(move || {
            let Ok((mut client, _)) = listener.accept() else {
                return;
            };
            let mut server = std::net::TcpStream::connect(upstream).unwrap();
            let (mut client_w, mut server_w) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut client, &mut server_w);
            });
            let mut pending: Vec<u8> = Vec::new();
            let mut buf = [0u8; 16384];
            while let Ok(n) = server.read(&mut buf) {
                if n == 0 {
                    break;
                }
                pending.extend_from_slice(&buf[..n]);
                // Pass on whole packets (`$...#hh`) and what stands between them, one by one.
                loop {
                    let Some(end) = pending
                        .iter()
                        .position(|&b| b == b'#')
                        .filter(|&h| h + 3 <= pending.len())
                    else {
                        // Acknowledgements between packets go on at once.
                        if !pending.contains(&b'$') && !pending.is_empty() {
                            let _ = client_w.write_all(&pending);
                            pending.clear();
                        }
                        break;
                    };
                    let frame: Vec<u8> = pending.drain(..end + 3).collect();
                    let body_start = frame.iter().position(|&b| b == b'$').map_or(0, |p| p + 1);
                    let body = &frame[body_start..end];
                    if body.len() >= 64 && body.iter().all(u8::is_ascii_hexdigit) {
                        std::thread::sleep(delay);
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                    if client_w.write_all(&frame).is_err() {
                        return;
                    }
                }
            }
        });
        SlowReplies { addr, replies }
    }

    fn replies(&self) -> usize {
        self.replies.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Issue 30, round-2 red team: SIGTERM during a heap walk over a slow server (1 s per read)
/// was acted on only after the walk ended (71 s). The walk now stops at the next reply; the
/// replies still owed are dropped before the clean-up's requests, within a bound.
#[test]
fn sigterm_during_a_slow_walk_ends_it_at_the_next_reply() {
    let elf = elf("heap4", "healthy");
    let qemu = QemuProcess::start("netduinoplus2", &elf, &[]).unwrap();
    let delay = Duration::from_millis(400);
    let proxy = SlowReplies::start(qemu.addr().to_string(), delay);
    let mut cmd = memlife();
    cmd.arg("heap")
        .arg("--elf")
        .arg(&elf)
        .args([
            "--gdb",
            &proxy.addr,
            "--at",
            "model_release",
            "--walk",
            "bulk",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut guard = ChildGuard(cmd.spawn().unwrap());
    let started = std::time::Instant::now();
    let read_err = |guard: &mut ChildGuard| {
        let mut err = String::new();
        std::io::Read::read_to_string(guard.0.stderr.as_mut().unwrap(), &mut err).unwrap();
        err
    };
    // Into the walk of the 96 KiB arena: 48 replies of 2 KiB, 19 s at this pace.
    let before = proxy.replies();
    while proxy.replies() < before + 4 {
        assert!(started.elapsed() < Duration::from_secs(60), "no walk");
        if guard.0.try_wait().unwrap().is_some() {
            panic!("memlife ended before the walk: {}", read_err(&mut guard));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &guard.0.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let signalled = std::time::Instant::now();
    let status = loop {
        if let Some(s) = guard.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(60),
            "memlife did not end after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let ended = signalled.elapsed();
    let err = read_err(&mut guard);
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    // One reply in flight, the 2 s settle bound for the rest, QEMU and the exit: far below the
    // 40 replies (16 s) the walk still had to go.
    assert!(
        ended < Duration::from_secs(8),
        "ended {ended:?} after SIGTERM, {} replies passed: {err}",
        proxy.replies()
    );
}
