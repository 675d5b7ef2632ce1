//! The probe-rs target without hardware: listing probes, chip validation, probe selection and
//! the errors a user without (the right) probe gets. Nothing here needs a board; the checks that
//! depend on "no probe attached" run only when `memlife probes` finds none.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use common::*;

fn expect_exit_2(args: &[&str], needles: &[&str]) -> String {
    let out = run_memlife(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "memlife {args:?}: {err}");
    for needle in needles {
        assert!(
            err.contains(needle),
            "memlife {args:?}: expected `{needle}` in: {err}"
        );
    }
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// True when no debug probe is visible on this machine (always so on the build machines).
fn no_probe_attached() -> bool {
    let out = run_memlife(&["probes"]);
    stdout(&out).starts_with("no debug probes found")
}

#[test]
fn probes_lists_or_says_none_and_exits_0() {
    let out = run_memlife(&["probes"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    if text.starts_with("no debug probes found") {
        assert!(text.contains("udev"), "{text}");
    } else {
        // A machine with probes: every probe line carries the value for --probe.
        for line in text.lines().filter(|l| !l.starts_with('(')) {
            assert!(line.contains("--probe "), "{text}");
        }
    }
    let esp32_note = text.contains("without --features esp32");
    assert_eq!(esp32_note, !cfg!(feature = "esp32"), "{text}");
}

#[test]
fn heap_without_a_probe_names_what_was_looked_for() {
    if !no_probe_attached() {
        eprintln!("a debug probe is attached: skipping the no-probe case");
        return;
    }
    let elf = elf("heap4", "healthy");
    expect_exit_2(
        &[
            "heap",
            "--elf",
            elf.to_str().unwrap(),
            "--chip",
            "STM32F405RGTx",
        ],
        &["no debug probe found", "ST-Link", "memlife probes"],
    );
}

#[test]
fn heap_with_a_selector_nothing_matches() {
    // ffff:fffe is no probe's id, so this holds on machines with probes too.
    let elf = elf("heap4", "healthy");
    expect_exit_2(
        &[
            "heap",
            "--elf",
            elf.to_str().unwrap(),
            "--chip",
            "STM32F405RGTx",
            "--probe",
            "ffff:fffe:NOPE",
        ],
        &["no debug probe found matching --probe ffff:fffe:NOPE"],
    );
}

#[test]
fn every_target_command_takes_chip() {
    let elf = elf("heap4", "healthy");
    let elf = elf.to_str().unwrap();
    let out_dir = tempdir("probe-audit");
    let snap = out_dir.join("x.mlsnap");
    let script = repo().join("scripts/lifecycle.rhai");
    let sel = ["--chip", "STM32F405RGTx", "--probe", "ffff:fffe"];
    let mut snapshot = vec!["snapshot", "--elf", elf, "-o", snap.to_str().unwrap()];
    snapshot.extend(sel);
    let mut audit = vec!["audit", "--elf", elf, script.to_str().unwrap()];
    audit.extend(sel);
    audit.extend(["--out", out_dir.to_str().unwrap()]);
    let mut serve = vec!["serve", "--elf", elf, "--listen", "127.0.0.1:0"];
    serve.extend(sel);
    for args in [snapshot, audit, serve] {
        expect_exit_2(&args, &["no debug probe found matching --probe ffff:fffe"]);
    }
}

#[test]
fn unknown_chip_gets_suggestions() {
    let elf = elf("heap4", "healthy");
    expect_exit_2(
        &[
            "heap",
            "--elf",
            elf.to_str().unwrap(),
            "--chip",
            "STM32F405RGTX1",
        ],
        &[
            "unknown chip `STM32F405RGTX1`",
            "did you mean",
            "STM32F405RGTx",
        ],
    );
    expect_exit_2(
        &[
            "heap",
            "--elf",
            elf.to_str().unwrap(),
            "--chip",
            "nosuchchip",
        ],
        &["unknown chip `nosuchchip`", "STM32F405RGTx"],
    );
}

#[test]
fn bad_probe_selector_is_a_usage_error() {
    expect_exit_2(
        &[
            "heap",
            "--elf",
            "x.elf",
            "--chip",
            "STM32F405RGTx",
            "--probe",
            "1234:zz",
        ],
        &["--probe", "product id `zz` is not 1 to 4 hex digits"],
    );
    expect_exit_2(
        &["heap", "--elf", "x.elf", "--probe", "1234:5678"],
        &["--chip"],
    );
}

#[test]
fn esp32s3_resolves_in_an_esp32_build_only() {
    let elf = elf("heap4", "healthy");
    let args = [
        "heap",
        "--elf",
        elf.to_str().unwrap(),
        "--chip",
        "esp32s3",
        "--probe",
        "ffff:fffe",
    ];
    if cfg!(feature = "esp32") {
        // The chip resolves; what fails is finding the probe.
        expect_exit_2(&args, &["no debug probe found matching --probe ffff:fffe"]);
    } else {
        expect_exit_2(&args, &["unknown chip `esp32s3`", "--features esp32"]);
    }
}

#[test]
fn serve_refuses_chips_that_are_not_cortex_m() {
    if !cfg!(feature = "esp32") {
        return;
    }
    let elf = elf("heap4", "healthy");
    expect_exit_2(
        &[
            "serve",
            "--elf",
            elf.to_str().unwrap(),
            "--chip",
            "esp32s3",
            "--listen",
            "127.0.0.1:0",
        ],
        &["not a Cortex-M chip"],
    );
}

#[test]
fn memlife_toml_names_the_chip() {
    let dir = tempdir("probe-toml");
    let cfg = dir.join("memlife.toml");
    let elf = elf("heap4", "healthy");
    std::fs::write(
        &cfg,
        format!(
            "elf = \"{}\"\n[target]\nchip = \"STM32F405RGTx\"\nprobe = \"ffff:fffe\"\nspeed = 1000\n",
            elf.display()
        ),
    )
    .unwrap();
    let script = repo().join("scripts/lifecycle.rhai");
    expect_exit_2(
        &[
            "audit",
            "--config",
            cfg.to_str().unwrap(),
            script.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ],
        &["no debug probe found matching --probe ffff:fffe"],
    );
    std::fs::write(
        &cfg,
        "[target]\nchip = \"STM32F405RGTx\"\nprobe = \"1:zz\"\n",
    )
    .unwrap();
    expect_exit_2(
        &[
            "audit",
            "--config",
            cfg.to_str().unwrap(),
            "--elf",
            elf.to_str().unwrap(),
            script.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ],
        &["memlife.toml [target] probe", "product id"],
    );
}

#[test]
fn hardware_examples_parse_and_name_known_chips() {
    // The examples' firmware is built for the board; the QEMU ELF stands in, since what is
    // checked is the configuration: it parses, and its chip resolves (or needs `esp32`).
    if !no_probe_attached() {
        eprintln!("a debug probe is attached: skipping");
        return;
    }
    let elf = elf("heap4", "healthy");
    let out = tempdir("probe-examples");
    for (example, script, needs_esp32) in [
        ("stm32-hardware", "lifecycle.rhai", false),
        ("esp32s3-hardware", "load-peak.rhai", true),
    ] {
        let cfg = repo().join("examples").join(example).join("memlife.toml");
        let script = repo().join("scripts").join(script);
        let args = [
            "audit",
            "--config",
            cfg.to_str().unwrap(),
            "--elf",
            elf.to_str().unwrap(),
            script.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        if needs_esp32 && !cfg!(feature = "esp32") {
            expect_exit_2(&args, &["unknown chip `esp32s3`", "--features esp32"]);
        } else {
            expect_exit_2(&args, &["no debug probe found"]);
        }
    }
}
