//! Firmware nobody here wrote, end to end on QEMU (issue 30): a test build that exits after N
//! cycles still gets every bundled script's verdict over the cycles it ran; an error-path audit
//! on a firmware whose `main` exits after a failed open starts QEMU again for every site (and
//! says so, or fails with `--fail-on-skip`, when it cannot); a firmware alternating models has
//! its leak told per model; a cycle that never completes ends at `--timeout` naming the roles
//! it saw; a script looping over the target ends at `max_cycles`, its report folded.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use memlife_rsp::QemuProcess;
use serde_json::Value;

/// `memlife audit ARGS --json DIR/NAME.json --out DIR`: stdout and stderr, exit code, report.
fn audit(dir: &Path, name: &str, args: &[&str]) -> (String, i32, Value) {
    let json = dir.join(format!("{name}.json"));
    let mut all = vec!["audit"];
    all.extend_from_slice(args);
    all.extend_from_slice(&[
        "--json",
        json.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let out = run_memlife(&all);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    let report = std::fs::read_to_string(&json)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    (text, out.status.code().unwrap_or(-1), report)
}

/// Every bundled script on the C firmware's test build that runs 3 cycles and exits, asked for
/// 10: each gives its verdict over the 3 (exit 0 or 1, never the error it was), and those that
/// asked for more cycles than they saw say how many they saw.
#[test]
fn every_bundled_script_judges_the_cycles_of_a_firmware_that_exits() {
    let dir = tempdir("exits-all");
    let elf = memlife_testkit::firmware::exiting_elf("heap4", "leak-on-switch", 3);
    let cfg = repo().join("examples/leak-on-switch/memlife.toml");
    let scripts = bundled_scripts();
    assert!(scripts.len() >= 8);
    for path in scripts {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let (text, code, report) = audit(
            &dir,
            &name,
            &[
                "--config",
                cfg.to_str().unwrap(),
                "--elf",
                elf.to_str().unwrap(),
                path.to_str().unwrap(),
                "--budget",
                "cycles=10",
            ],
        );
        assert!(code == 0 || code == 1, "{name}: exit {code}\n{text}");
        assert!(report["error"].is_null(), "{name}: {}", report["error"]);
        if ["leak", "lifecycle", "fragmentation"].contains(&name.as_str()) {
            assert!(
                text.contains("WARN cycles: the firmware exited with status 0 after 3 of the 10"),
                "{name}: {text}"
            );
        }
        if name == "leak" || name == "lifecycle" {
            // The leak is there in the three cycles seen: 368 B per switch.
            assert_eq!(code, 1, "{name}: {text}");
            assert!(text.contains("FAIL leak: free"), "{name}: {text}");
            assert!(text.contains("368 B"), "{name}: {text}");
        }
    }
}

/// The TFLM firmware's lifecycle, as `memlife init` would map it.
const TFLM_PHASES: &str = "[phases]\nload = \"app::LoadModel\"\nbuild = \"app::BuildInterpreter\"\nrun = \"app::RunInference\"\nrelease = \"app::ReleaseModel\"\n[trace]\nskip = [\"malloc\", \"free\", \"calloc\"]\n";

/// The TFLM op-leak firmware runs its three models in turn and leaks 24 B in every
/// micro_speech cycle only. Its test build exits after 6 cycles: leak.rhai and lifecycle.rhai
/// give their verdict over the 6 with a warning, and tell the leak as micro_speech's, every 3rd
/// cycle, not averaged; the JSON report lists the models, and `memlife diff` against the
/// healthy build names the model whose cycles leak.
#[test]
fn tflm_models_in_turn_have_their_leak_told_per_model() {
    let dir = tempdir("tflm-models");
    let leaking = memlife_testkit::firmware::exiting_elf("tflm", "op-leak", 6);
    let cfg = write_test_config(&dir, &leaking, TFLM_PHASES);
    let common = ["--config", cfg.to_str().unwrap(), "--budget", "cycles=10"];
    let (text, code, report) = audit(
        &dir,
        "leak",
        &[
            &common[..],
            &[&bundled_script("leak.rhai"), "--budget", "more_cycles=5"],
        ]
        .concat(),
    );
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("24 B per cycle of micro_speech (every 3rd cycle)")
            && text.contains("nothing lost in the cycles of")
            && text.contains("WARN cycles: the firmware exited with status 0 after 6 of the 10"),
        "{text}"
    );
    let models = report["models"]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"));
    let names: Vec<&str> = models.iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["hello_world", "micro_speech", "magic_wand"],
        "{report}"
    );
    let ms = &models[1];
    assert_eq!(
        (&ms["cycles"], &ms["every"], &ms["most"], &ms["lost"]),
        (
            &Value::from(2),
            &Value::from(3),
            &Value::from(24),
            &Value::from(48)
        ),
        "{ms}"
    );
    assert_eq!(models[2]["most"], 0, "{report}");
    let (text, code, _) = audit(
        &dir,
        "lifecycle",
        &[&common[..], &[&bundled_script("lifecycle.rhai")]].concat(),
    );
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(
            "FAIL leak: free after release drops 24 B per cycle of micro_speech (every 3rd cycle)"
        ),
        "{text}"
    );
    // The healthy build, looping, as the base: the diff names the model whose cycles leak.
    let healthy = elf("tflm", "healthy");
    let (text, code, _) = audit(
        &dir,
        "base",
        &[
            &common[..],
            &[
                "--elf",
                healthy.to_str().unwrap(),
                &bundled_script("leak.rhai"),
            ],
            &["--budget", "cycles=6", "--budget", "more_cycles=0"],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{text}");
    let out = run_memlife(&[
        "diff",
        dir.join("base.json").to_str().unwrap(),
        dir.join("leak.json").to_str().unwrap(),
    ]);
    let diff = stdout(&out);
    assert!(
        diff.contains("leak per cycle of model micro_speech"),
        "{diff}{}",
        stderr(&out)
    );
}

/// A newlib firmware whose `main` exits (status 0) when `dev_open` fails. Each site of
/// `dev_open` fails in turn: the first (the device) is handled, the second (its buffer) returns
/// without freeing the device allocated just before, the third frees both.
const OPEN_EXITS_C: &str = r#"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "semihost.h"
void fw_halted(void) { for (;;) {} }
void fw_fail(const char *why, uint32_t code) { (void)why; (void)code; for (;;) {} }
typedef struct { uint8_t *buf; uint8_t *table; uint32_t runs; } dev_t;
static dev_t *volatile dev;
static uint8_t *volatile work;
__attribute__((noinline)) int dev_open(void) {
    dev = malloc(sizeof(dev_t));
    if (dev == NULL) return -1;
    dev->buf = malloc(256);
    if (dev->buf == NULL) return -1;
    dev->table = malloc(64);
    if (dev->table == NULL) { free(dev->buf); free(dev); dev = NULL; return -1; }
    return 0;
}
__attribute__((noinline)) int dev_prepare(void) {
    work = malloc(512);
    if (work == NULL) return -1;
    memset(work, 0, 512);
    return 0;
}
__attribute__((noinline)) void dev_run(void) { dev->runs++; memset(dev->buf, 1, 256); }
__attribute__((noinline)) void dev_close(void) {
    free(work); work = NULL;
    free(dev->table); free(dev->buf); free(dev); dev = NULL;
}
int main(void) {
    for (int k = 0; k < 3; k++) {
        if (dev_open() != 0) sh_exit_ok();
        if (dev_prepare() != 0) { dev_close(); continue; }
        dev_run();
        dev_close();
    }
    sh_exit_ok();
}
"#;

const OPEN_EXITS_PHASES: &str = "[phases]\nload = \"dev_open\"\nbuild = \"dev_prepare\"\nrun = \"dev_run\"\nrelease = \"dev_close\"\n";

/// error-paths.rhai starts QEMU again after each exit, so every site runs and the second
/// site's leak is found; through a GDB server memlife did not start, the sites after the exit
/// are skipped, the summary says the pass is partial, and `--fail-on-skip` makes it exit 1.
#[test]
fn the_error_path_audit_restarts_a_firmware_that_exits_and_finds_the_second_sites_leak() {
    let dir = tempdir("open-exits");
    let elf = build_test_firmware(&dir, "openexits", OPEN_EXITS_C, true);
    let cfg = write_test_config(&dir, &elf, OPEN_EXITS_PHASES);
    let (text, code, report) = audit(
        &dir,
        "restarted",
        &[
            "--config",
            cfg.to_str().unwrap(),
            &bundled_script("error-paths.rhai"),
        ],
    );
    assert_eq!(code, 1, "{text}");
    let line = |prefix: &str| {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` in:\n{text}"))
            .to_string()
    };
    let first = line("PASS error-path load openexits.c:");
    assert!(
        first.contains("the firmware exited with status 0"),
        "{first}"
    );
    let second = line("FAIL error-path load openexits.c:");
    assert!(
        second.contains("after the allocation of 256 B at dev_open (openexits.c:")
            && second.contains("dev_open returned -1")
            && second.contains("1 block(s) it took were still live")
            && second.contains("allocated at dev_open (openexits.c:"),
        "{second}"
    );
    assert!(!text.contains("SKIP"), "{text}");
    assert!(!text.contains("not every check ran"), "{text}");
    // Every site ran: three of the load, one of the build.
    let cases: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(cases.len(), 4, "{report}");

    // Through a GDB server memlife did not start: it cannot start it again.
    let qemu = QemuProcess::start("netduinoplus2", &elf, &[]).unwrap();
    let server = qemu.addr().to_string();
    let gdb_args = [
        "--config",
        cfg.to_str().unwrap(),
        "--gdb",
        &server,
        &bundled_script("error-paths.rhai"),
    ];
    let (text, code, _) = audit(&dir, "skipped", &gdb_args);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("SKIP error-path load openexits.c:")
            && text.contains("not run: the target could not be reset")
            && text.contains(
                "not every check ran: 3 skipped, so this is a pass of the checks that ran only"
            ),
        "{text}"
    );
    drop(qemu);
    let qemu = QemuProcess::start("netduinoplus2", &elf, &[]).unwrap();
    let server = qemu.addr().to_string();
    let gdb_args = [
        "--config",
        cfg.to_str().unwrap(),
        "--gdb",
        &server,
        &bundled_script("error-paths.rhai"),
        "--fail-on-skip",
    ];
    let (text, code, report) = audit(&dir, "failed-on-skip", &gdb_args);
    assert_eq!(code, 1, "{text}");
    assert_eq!(report["exit_code"], 1, "{report}");
    assert!(text.contains("(--fail-on-skip: exit 1)"), "{text}");
    drop(qemu);

    // memlife.toml's `fail_on_skip = true` does what the flag does.
    let qemu = QemuProcess::start("netduinoplus2", &elf, &[]).unwrap();
    let server = qemu.addr().to_string();
    let strict = dir.join("strict.toml");
    std::fs::write(
        &strict,
        format!(
            "fail_on_skip = true\n{}",
            std::fs::read_to_string(&cfg).unwrap()
        ),
    )
    .unwrap();
    let gdb_args = [
        "--config",
        strict.to_str().unwrap(),
        "--gdb",
        &server,
        &bundled_script("error-paths.rhai"),
    ];
    let (text, code, report) = audit(&dir, "failed-on-skip-key", &gdb_args);
    assert_eq!(code, 1, "{text}");
    assert_eq!(report["exit_code"], 1, "{report}");
}

/// The same audit through probe-rs and the virtual SWD probe (`--chip ... --probe qemu`): the
/// exit seen under the probe is the firmware's end, and the QEMU memlife started behind the
/// probe is started again for every site, so the second site's leak is found there too.
#[test]
fn the_error_path_audit_through_the_virtual_probe_restarts_the_firmware_too() {
    let dir = tempdir("open-exits-probe");
    let elf = build_test_firmware(&dir, "openexits", OPEN_EXITS_C, true);
    let cfg = dir.join("probe.toml");
    std::fs::write(
        &cfg,
        format!("elf = {:?}\n{OPEN_EXITS_PHASES}", elf.display().to_string()),
    )
    .unwrap();
    let (text, code, report) = audit(
        &dir,
        "probe-restarted",
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--chip",
            "STM32F405RGTx",
            "--probe",
            "qemu",
            &bundled_script("error-paths.rhai"),
        ],
    );
    assert_eq!(code, 1, "{text}");
    assert!(
        report["run"]["target"]
            .as_str()
            .is_some_and(|t| t.contains("virtual SWD probe")),
        "{}",
        report["run"]["target"]
    );
    let second = text
        .lines()
        .find(|l| l.starts_with("FAIL error-path load openexits.c:"))
        .unwrap_or_else(|| panic!("no failing load site in:\n{text}"));
    assert!(
        second.contains("dev_open returned -1")
            && second.contains("1 block(s) it took were still live"),
        "{second}"
    );
    assert!(!text.contains("SKIP"), "{text}");
    let cases = report["checks"].as_array().unwrap();
    assert_eq!(cases.len(), 4, "{report}");
}

/// A firmware whose `main` calls `app_init` once, then `app_step` forever.
const INIT_ONCE_C: &str = r#"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
void fw_halted(void) { for (;;) {} }
void fw_fail(const char *why, uint32_t code) { (void)why; (void)code; for (;;) {} }
static uint8_t *volatile state;
static uint8_t *volatile scratch;
__attribute__((noinline)) void app_init(void) { state = malloc(32); memset(state, 0, 32); }
__attribute__((noinline)) void app_step(void) { scratch = malloc(64); memset(scratch, 1, 64); free(scratch); state[0]++; }
int main(void) {
    app_init();
    for (;;) { app_step(); }
}
"#;

/// With `app_init` as the load role, the cycle starts at its one call and never completes
/// while `app_step` runs on: the audit ends at --timeout naming the roles it saw and how often,
/// instead of running until the deadline.
#[test]
fn a_cycle_that_never_completes_ends_at_the_timeout_naming_the_roles_seen() {
    let dir = tempdir("never-completes");
    let elf = build_test_firmware(&dir, "initonce", INIT_ONCE_C, false);
    let cfg = write_test_config(
        &dir,
        &elf,
        "[phases]\nload = \"app_init\"\nrun = \"app_step\"\n",
    );
    let started = Instant::now();
    let (text, code, _) = audit(
        &dir,
        "never",
        &[
            "--config",
            cfg.to_str().unwrap(),
            &bundled_script("leak.rhai"),
            "--timeout",
            "5",
        ],
    );
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("no cycle completed within 5.0 s (--timeout): a cycle runs from one call of load (app_init) to the next, and the firmware called load (app_init) 1 time, run (app_step) ")
            && text.contains(" times; map [lifecycle] cycle_starts"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(60), "{text}");
}

/// The red team's loop of `t.fail_alloc` + `t.after_failure`, and a site that names nothing.
#[test]
fn a_script_looping_over_failures_ends_at_max_cycles_with_a_folded_report() {
    let dir = tempdir("failure-loop");
    let looping = dir.join("loop.rhai");
    std::fs::write(
        &looping,
        "let t = target();\nloop { t.fail_alloc(#{ phase: \"load\", nth: 1 }); t.after_failure(); }\n",
    )
    .unwrap();
    let healthy = repo().join("examples/healthy/memlife.toml");
    let (text, code, report) = audit(
        &dir,
        "loop",
        &[
            "--config",
            healthy.to_str().unwrap(),
            looping.to_str().unwrap(),
            "--budget",
            "max_cycles=24",
            "--keep-cycles",
            "3",
        ],
    );
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("more than 24 runs of the target") && text.contains("max_cycles"),
        "{text}"
    );
    // Folded as cycles are: the first and last three runs kept.
    assert!(report["folded"].is_object(), "{report}");
    let kept: std::collections::BTreeSet<u64> = report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["cycle"].as_u64())
        .collect();
    assert!(kept.len() <= 6, "{kept:?}");
    assert_eq!(report["cycles"], 24, "{}", report["cycles"]);
    assert_eq!(report["injected"].as_array().unwrap().len(), 24);

    let misspelt = dir.join("misspelt.rhai");
    std::fs::write(
        &misspelt,
        "let t = target();\nt.fail_alloc(\"plannr_plan\");\nt.after_failure();\n",
    )
    .unwrap();
    let started = Instant::now();
    let (text, code, _) = audit(
        &dir,
        "misspelt",
        &[
            "--config",
            healthy.to_str().unwrap(),
            misspelt.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("fail_alloc: site `plannr_plan`: no function `plannr_plan` in the ELF")
            && text.contains("did you mean `planner_plan`?"),
        "{text}"
    );
    // Refused before the target ran: no phase was recorded.
    assert!(started.elapsed() < Duration::from_secs(30), "{text}");
}
