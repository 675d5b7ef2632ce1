//! `memlife init` on firmware of the shapes users met (issue 30 item 5, issue 28 item 8, issue 29
//! item 8): TensorFlow Lite Micro whose application functions have no lifecycle words (found by
//! the TFLM functions they call; an audit with the file completes cycles), the RTOS firmware
//! (the inference task's lifecycle, never setup or kernel code), an RTOS firmware with no ML
//! lifecycle (said so, phases commented out, tasks proposed), the Rust firmware (its own
//! functions, not a registry crate's), and the red team's findings on init: strings written
//! raw into TOML, and `-o` through links and over existing files.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;

/// `memlife init --elf ELF -o DIR/memlife.toml`: the file's text, parsed, and stderr.
fn init(dir: &Path, elf: &Path) -> (String, toml::Table, String) {
    let cfg = dir.join("memlife.toml");
    let out = run_memlife(&[
        "init",
        "--elf",
        elf.to_str().unwrap(),
        "-o",
        cfg.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    (text, table, err)
}

fn phase<'a>(table: &'a toml::Table, role: &str) -> Option<&'a str> {
    table.get("phases")?.get(role)?.as_str()
}

/// The functions the file names for a role: the choices and the alternatives.
fn role_functions(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| {
            let l = l.strip_prefix("#   or ").unwrap_or(l);
            ["load", "build", "run", "switch", "release"]
                .iter()
                .find_map(|r| l.strip_prefix(&format!("{r} = \"")))
        })
        .filter_map(|rest| rest.split_once("\"    # ").map(|(name, _)| name))
        .collect()
}

#[test]
fn tflm_lifecycle_functions_are_found_by_the_tflm_functions_they_call_and_cycles_complete() {
    // The application's functions are named as no vocabulary would (ReadModelImage,
    // MakeInterpreter, Classify, DropSession); TFLM's own have every word (Init, Prepare,
    // AllocateTensors, Invoke). Before: load was tflite::MicroAllocator::InitGraphAndContextTensorData().
    let dir = tempdir("init-tflm-names");
    let elf = memlife_testkit::firmware::elf("tflm", "names");
    let (text, table, err) = init(&dir, &elf);
    for (role, function, why) in [
        (
            "load",
            "app::ReadModelImage(app::ModelSpec const&)",
            "reads the model (tflite::GetModel)",
        ),
        (
            "build",
            "app::MakeInterpreter(app::Session&)",
            "calls tflite::MicroInterpreter::AllocateTensors",
        ),
        (
            "run",
            "app::Classify(app::Session&)",
            "calls tflite::MicroInterpreter::Invoke",
        ),
        (
            "release",
            "app::DropSession(app::Session*)",
            "destroys the interpreter",
        ),
    ] {
        assert_eq!(phase(&table, role), Some(function), "{text}");
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{role} = ")))
            .unwrap();
        assert!(
            line.contains(why) && line.contains("which main's loop calls"),
            "{line}"
        );
        assert!(
            err.contains(&format!("{role} = {function}")) && err.contains(why),
            "{err}"
        );
    }
    assert!(phase(&table, "switch").is_none(), "{text}");
    assert!(
        !role_functions(&text).iter().any(|f| f.contains("tflite::")),
        "a TFLM function proposed: {text}"
    );
    assert!(
        text.contains("functions whose names have a role's word")
            && text.contains("of TensorFlow Lite Micro"),
        "{text}"
    );
    // The audit with the file as written: three cycles of load, build, run, release.
    let json = dir.join("r.json");
    let out = run_memlife(&[
        "audit",
        "--config",
        dir.join("memlife.toml").to_str().unwrap(),
        &bundled_script("lifecycle.rhai"),
        "--qemu",
        "netduinoplus2",
        "--json",
        json.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let out_text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{out_text}{}", stderr(&out));
    assert!(
        out_text.contains("PASS leak: free after release stays at")
            && out_text.contains("over 3 cycles"),
        "{out_text}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for cycle in 1..=3u64 {
        let roles: Vec<&str> = report["phases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["cycle"] == cycle)
            .map(|p| p["alias"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["load", "build", "run", "release"], "cycle {cycle}");
    }
}

#[test]
fn tflm_named_lifecycle_no_framework_function_anywhere_and_runners_up_said() {
    // Before: TFLM's InitGraphAndContextTensorData, kernels' Init and AllocateTensors stood as
    // alternatives, and its kernel Run and FindOp as the span candidates.
    let dir = tempdir("init-tflm");
    let elf = memlife_testkit::firmware::elf("tflm", "healthy");
    let (text, table, err) = init(&dir, &elf);
    assert_eq!(
        phase(&table, "build"),
        Some("app::BuildInterpreter(app::Session&)")
    );
    assert_eq!(
        phase(&table, "run"),
        Some("app::RunInference(app::Session&)")
    );
    assert_eq!(
        phase(&table, "load"),
        Some("app::LoadModel(app::ModelSpec const&)")
    );
    assert_eq!(
        phase(&table, "release"),
        Some("app::ReleaseModel(app::Session*)")
    );
    let functions = role_functions(&text);
    assert_eq!(functions.len(), 5, "{text}");
    assert!(!functions.iter().any(|f| f.contains("tflite::")), "{text}");
    // The error path has the word `build` but does not build: the runner-up, said so.
    assert!(
        text.contains("#   or build = \"app::HandleBuildFailure(app::Session*)\""),
        "{text}"
    );
    assert!(
        err.contains("runner-up: app::HandleBuildFailure(app::Session*)"),
        "{err}"
    );
    // Per-operator spans: TFLM's kernels, as comments (one function per operator type).
    assert!(
        text.contains(
            "#   \"tflite::ops::micro::fully_connected::Eval(TfLiteContext*, TfLiteNode*)\""
        ),
        "{text}"
    );
    assert!(!text.contains("FindOp"), "{text}");
}

#[test]
fn rtos_firmware_lifecycle_comes_from_the_inference_task_never_setup_kernel_or_trace_hooks() {
    // Before: mem_init, board_init and vTaskSwitchContext stood as alternatives.
    let dir = tempdir("init-rtos");
    let elf = memlife_testkit::firmware::elf("rtos-mps2-an385", "healthy");
    let (text, table, err) = init(&dir, &elf);
    for (role, function) in [
        ("load", "model_load"),
        ("build", "graph_build"),
        ("run", "inference_run"),
        ("switch", "model_switch"),
        ("release", "model_release"),
    ] {
        assert_eq!(phase(&table, role), Some(function), "{text}");
    }
    let functions = role_functions(&text);
    assert!(functions.len() >= 10, "{text}");
    for never in [
        "mem_init",
        "board_init",
        "infer_start",
        "infer_task",
        "vPortSetupTimerInterrupt",
        "vTaskSwitchContext",
    ] {
        assert!(!functions.contains(&never), "{never}: {text}");
    }
    assert!(!functions.iter().any(|f| f.starts_with("xTrace")), "{text}");
    assert!(
        text.contains("load = \"model_load\"    # engine.c:")
            && text.contains("called in task `infer_task`'s loop"),
        "{text}"
    );
    assert!(
        text.contains("called once, before the loops (setup): `mem_init`"),
        "{text}"
    );
    assert!(
        err.contains("main, which sets up and starts the scheduler")
            && err.contains("task `infer_task`'s loop"),
        "{err}"
    );
}

#[test]
fn rtos_firmware_without_a_lifecycle_says_so_comments_every_phase_out_and_proposes_tasks() {
    // The official demos' shape: tasks, a trace hook on every switch, setup functions named
    // init. Before: load = mem_init (or vPortSetupTimerInterrupt), switch = xTraceTaskSwitch,
    // and the audit waited for cycles until its deadline.
    let dir = tempdir("init-rtos-no-ml");
    let elf = memlife_testkit::firmware::elf("rtos-mps2-an385", "no-ml");
    let (text, table, err) = init(&dir, &elf);
    assert!(!table.contains_key("phases"), "{text}");
    assert!(
        err.contains("no ML lifecycle found") && err.contains("task-based phases for 7 tasks"),
        "{err}"
    );
    assert!(err.contains("with every phase commented out"), "{err}");
    // The Spawner loads worker_task's address once, before its loop, and moves it into r0 for
    // each xTaskCreate (through app_create_task): still a task.
    assert!(
        err.contains("task `worker_task`") && err.contains("task `sleeper_task`'s loop"),
        "{err}"
    );
    assert!(text.contains("# No ML lifecycle found: "), "{text}");
    assert!(
        text.contains("# logger_task = \"mem_alloc\"")
            && text.contains("called in task `logger_task`'s loop"),
        "{text}"
    );
    for never in [
        "mem_init\"",
        "xTraceTaskSwitch\"",
        "vPortSetupTimerInterrupt",
        "vTaskSwitchContext\"",
    ] {
        assert!(!text.contains(never), "{never}: {text}");
    }
    assert!(text.contains("RTOS trace hooks (1 function)"), "{text}");
    // An audit with the file ends at once, saying why, instead of waiting for cycles.
    let started = Instant::now();
    let out = run_memlife(&[
        "audit",
        "--config",
        dir.join("memlife.toml").to_str().unwrap(),
        &bundled_script("lifecycle.rhai"),
        "--qemu",
        "mps2-an385",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let out_text = stdout(&out);
    assert!(
        out_text.contains("no lifecycle role maps to a function of this firmware"),
        "{out_text}{}",
        stderr(&out)
    );
    assert!(out_text.contains("0 phases"), "{out_text}");
    assert!(started.elapsed() < Duration::from_secs(60), "{out_text}");
}

/// A firmware whose lifecycle functions' names end in a combining acute accent (U+0301).
const ACCENTED: &str = r#"
#include <stdint.h>
#include <stdlib.h>
void fw_halted(void) { for (;;) {} }
void fw_fail(const char *why, uint32_t code) { (void)why; (void)code; for (;;) {} }
__attribute__((noinline)) void *model_load\u0301(void) { return malloc(64); }
__attribute__((noinline)) void model_release\u0301(void *p) { free(p); }
int main(void)
{
    for (;;) {
        model_release\u0301(model_load\u0301());
    }
}
"#;

#[test]
fn every_string_init_writes_parses_back_as_toml_exactly() {
    // Red team: a file name with newlines injected `target = { ..., semihosting_dir = "/" }`
    // through the header comment, and a name with a combining accent was written as
    // `\u{301}`, which TOML rejects.
    let dir = tempdir("init-strings");
    let built = build_test_firmware(&dir, "accent", ACCENTED, false);
    let evil =
        dir.join("fw\ntarget = { qemu = \"netduinoplus2\", semihosting_dir = \"/\" }\n#.elf");
    // (The `/` makes the part before it a folder, newlines and all.)
    std::fs::create_dir_all(evil.parent().unwrap()).unwrap();
    std::fs::copy(&built, &evil).unwrap();
    let (text, table, _) = init(&dir, &evil);
    assert!(!table.contains_key("target"), "{text}");
    let keys: Vec<&str> = table.keys().map(String::as_str).collect();
    assert_eq!(keys, ["budgets", "elf", "phases", "trace"], "{text}");
    let canonical = std::fs::canonicalize(&evil).unwrap();
    assert_eq!(table["elf"].as_str(), canonical.to_str(), "{text}");
    assert_eq!(phase(&table, "load"), Some("model_load\u{301}"), "{text}");
    assert_eq!(
        phase(&table, "release"),
        Some("model_release\u{301}"),
        "{text}"
    );
}

#[test]
fn init_output_is_never_written_through_a_link_nor_over_a_file_without_force() {
    // Red team: `init -o` followed a symbolic link and overwrote an existing file silently.
    let dir = tempdir("init-output");
    let elf = memlife_testkit::firmware::elf("heap4", "healthy");
    let elf = elf.to_str().unwrap();
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    let link = dir.join("link.toml");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let run = |out: &Path, force: bool| {
        let mut args = vec!["init", "--elf", elf, "-o", out.to_str().unwrap()];
        if force {
            args.push("--force");
        }
        run_memlife(&args)
    };
    for force in [false, true] {
        let out = run(&link, force);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("is a symbolic link"),
            "{}",
            stderr(&out)
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(link.is_symlink());
    }
    let existing = dir.join("memlife.toml");
    std::fs::write(&existing, "# mine\n").unwrap();
    let out = run(&existing, false);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("exists; pass --force to replace it"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "# mine\n");
    let out = run(&existing, true);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&existing).unwrap();
    assert!(text.contains("load = \"model_load\""), "{text}");
    // A new file: written, and nothing else left in the folder.
    let fresh = dir.join("new.toml");
    let out = run(&fresh, false);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["link.toml", "memlife.toml", "new.toml", "victim.txt"]
    );
}

#[test]
fn rust_firmware_release_is_its_own_not_a_registry_crate_s() {
    // Before: release = "<cortex_m::critical_section::SingleCoreCriticalSection as
    // critical_section::Impl>::release", a function of a crate from the registry.
    let dir = tempdir("init-rust");
    let elf = memlife_testkit::firmware::elf("rust-tlsf", "healthy");
    let (text, table, _) = init(&dir, &elf);
    for (role, function) in [
        ("load", "firmware::engine::model_load"),
        ("build", "firmware::engine::graph_build"),
        ("run", "firmware::engine::inference_run"),
        ("switch", "firmware::engine::model_switch"),
        ("release", "firmware::engine::model_release"),
    ] {
        assert_eq!(phase(&table, role), Some(function), "{text}");
    }
    assert!(
        !role_functions(&text)
            .iter()
            .any(|f| f.contains("critical_section")),
        "{text}"
    );
    // cortex-m-rt's main hands over to the firmware's own, whose loop is the device's.
    assert!(
        text.contains("called in the loop of `firmware::__cortex_m_rt_main` (main's)"),
        "{text}"
    );
}
