//! The observed lifecycle end to end, on real QEMU: cycles record every call of every role in
//! the firmware's order (the C++ firmware's four `Invoke()` per cycle), the overlap check
//! works from a tensor table described in memlife.toml or from traced allocations, and span
//! labels come from a chosen argument, a name table or a string argument.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// Runs `memlife audit` with `cfg` and `script`, a JSON report into `dir`; stdout, exit code
/// and the report.
fn audit(
    dir: &Path,
    cfg: &Path,
    script: &str,
    elf: Option<&Path>,
) -> (String, i32, serde_json::Value) {
    let json = dir.join("report.json");
    let mut args = vec![
        "audit".to_string(),
        "--config".into(),
        cfg.to_str().unwrap().into(),
        script.into(),
        "--json".into(),
        json.to_str().unwrap().into(),
        "--out".into(),
        dir.to_str().unwrap().into(),
    ];
    if let Some(elf) = elf {
        args.push("--elf".into());
        args.push(elf.to_str().unwrap().into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_memlife(&args);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    let report = std::fs::read_to_string(&json)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(serde_json::Value::Null);
    (text, out.status.code().unwrap_or(-1), report)
}

/// The roles of the recorded phases of `cycle`, in order.
fn roles_of_cycle(report: &serde_json::Value, cycle: u64) -> Vec<String> {
    report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["cycle"] == cycle)
        .map(|p| p["alias"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[test]
fn cycles_record_all_four_invocations_of_the_cpp_firmware() {
    let dir = tempdir("cycles-cpp");
    let cfg = repo().join("examples/cpp-interpreter/memlife.toml");
    let (text, code, report) = audit(&dir, &cfg, &bundled_script("lifecycle.rhai"), None);
    assert_eq!(code, 1, "{text}");
    // Every call in the firmware's order: Setup, AllocateTensors, four Invoke(), Teardown.
    for cycle in 1..=3 {
        assert_eq!(
            roles_of_cycle(&report, cycle),
            ["load", "build", "run", "run", "run", "run", "release"],
            "cycle {cycle}: {text}"
        );
    }
    let invokes: Vec<u64> = report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["function"] == "tinyml::Interpreter::Invoke()")
        .map(|p| p["call"].as_u64().unwrap())
        .collect();
    assert_eq!(invokes, (1..=12).collect::<Vec<u64>>(), "{text}");
    assert!(text.contains("the worst of 4 calls in the cycle"), "{text}");
    assert!(text.contains("152 B per cycle"), "{text}");

    // Cycles may start at another role (every call of it begins one); an unknown role is a
    // configuration error.
    let starts_at_run = dir.join("run.toml");
    let base = std::fs::read_to_string(&cfg).unwrap().replace(
        "elf = \"../../firmware/build/cpp-leak.elf\"",
        &format!(
            "elf = {:?}",
            memlife_testkit::firmware::elf("cpp", "leak")
                .display()
                .to_string()
        ),
    );
    std::fs::write(
        &starts_at_run,
        format!("{base}\n[lifecycle]\ncycle_starts = \"release\"\n"),
    )
    .unwrap();
    let (text, code, report) = audit(
        &dir,
        &starts_at_run,
        &bundled_script("fragmentation.rhai"),
        None,
    );
    assert_eq!(code, 0, "{text}");
    // From the first Teardown: the next session's Setup, AllocateTensors and four Invoke().
    assert_eq!(
        roles_of_cycle(&report, 1),
        ["release", "load", "build", "run", "run", "run", "run"],
        "{text}"
    );
    assert!(text.contains("after release 3 = "), "{text}");
    let typo = dir.join("typo.toml");
    std::fs::write(
        &typo,
        format!("{base}\n[lifecycle]\ncycle_starts = \"rnu\"\n"),
    )
    .unwrap();
    let (text, code, _) = audit(&dir, &typo, &bundled_script("leak.rhai"), None);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("cycle_starts: `rnu` is not a role") && text.contains("did you mean `run`?"),
        "{text}"
    );
}

/// A small network of nobody here: `net_open`/`net_plan`/`net_run`/`net_close`, three runs per
/// cycle; `prepare_layer(name, bytes)` names its layer by a string argument (one name carries
/// a terminal escape), `layer_forward(index, net)` by its first argument, an index into
/// `layer_names`. Its own tensor table `g_plan` (fields `label`, `at`, `len`, `first_layer`,
/// `last_layer`) places `act_c` over the second half of `act_b` while both are in use.
const NET_C: &str = r#"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
void fw_halted(void) { for (;;) {} }
void fw_fail(const char *why, uint32_t code) { (void)why; (void)code; for (;;) {} }
typedef struct { const char *label; uint32_t at; uint32_t len; int16_t first_layer, last_layer; } plan_entry_t;
plan_entry_t g_plan[4];
volatile int g_plan_len;
const char *const layer_names[3] = { "conv_out", "dense_out", "softmax_out" };
typedef struct { uint8_t *arena; uint8_t *w[3]; } net_t;
static volatile int sink;
__attribute__((noinline)) uint8_t *prepare_layer(const char *name, int bytes) {
    uint8_t *w = malloc(bytes);
    memset(w, name[0], bytes);
    return w;
}
__attribute__((noinline)) void layer_forward(int idx, net_t *n) {
    uint8_t *tmp = malloc(48 + 16 * idx);
    memset(tmp, idx, 48);
    sink += tmp[1] + n->w[idx][0];
    free(tmp);
}
__attribute__((noinline)) net_t *net_open(void) {
    net_t *n = malloc(sizeof *n);
    memset(n, 0, sizeof *n);
    return n;
}
__attribute__((noinline)) void net_plan(net_t *n) {
    n->w[0] = prepare_layer("conv_in", 96);
    n->w[1] = prepare_layer("dense\x1b[2J", 160);
    n->w[2] = prepare_layer("softmax", 32);
    n->arena = malloc(384);
    uint32_t a = (uint32_t)n->arena;
    g_plan[0] = (plan_entry_t){ "act_a", a, 128, 0, 0 };
    g_plan[1] = (plan_entry_t){ "act_b", a + 128, 128, 0, 1 };
    g_plan[2] = (plan_entry_t){ "act_c", a + 192, 128, 1, 2 };   /* the defect */
    g_plan[3] = (plan_entry_t){ "act_d", 0, 64, 2, 2 };           /* not placed */
    g_plan_len = 4;
}
__attribute__((noinline)) void net_run(net_t *n) { for (int i = 0; i < 3; i++) layer_forward(i, n); }
__attribute__((noinline)) void net_close(net_t *n) {
    for (int i = 0; i < 3; i++) free(n->w[i]);
    free(n->arena);
    free(n);
    g_plan_len = 0;
}
int main(void) {
    for (;;) {
        net_t *n = net_open();
        net_plan(n);
        for (int k = 0; k < 3; k++) net_run(n);
        net_close(n);
    }
}
"#;

/// Builds [`NET_C`] for QEMU netduinoplus2 with newlib-nano.
fn build_net(dir: &Path) -> PathBuf {
    build_test_firmware(dir, "net", NET_C, false)
}

const NET_PHASES: &str = "[target]\nqemu = \"netduinoplus2\"\n[phases]\nload = \"net_open\"\nbuild = \"net_plan\"\nrun = \"net_run\"\nrelease = \"net_close\"\n[spans]\nbuild = \"prepare_layer\"\nrun = \"layer_forward\"\n[budgets]\ncycles = 2\nmore_cycles = 3\n";

const NET_TABLES: &str = "[labels.build]\narg = 0\nstring = true\n[labels.run]\narg = 0\nnames = \"layer_names\"\n[tensors]\ntable = \"g_plan\"\ncount = \"g_plan_len\"\nname = \"label\"\naddr = \"at\"\nsize = \"len\"\nfirst = \"first_layer\"\nlast = \"last_layer\"\n";

#[test]
fn overlap_from_a_described_tensor_table_and_from_traced_allocations() {
    let dir = tempdir("net-overlap");
    let elf = build_net(&dir);
    let head = format!("elf = {:?}\n{NET_PHASES}", elf.display().to_string());
    let described = dir.join("described.toml");
    std::fs::write(&described, format!("{head}{NET_TABLES}")).unwrap();
    for name in ["overlap.rhai", "lifecycle.rhai"] {
        let (text, code, _) = audit(&dir, &described, &bundled_script(name), None);
        assert_eq!(code, 1, "{name}: {text}");
        assert!(
            text.contains("FAIL overlap: act_b [layers 0..1] and act_c [layers 1..2] share 0x")
                && text.contains("(64 B)"),
            "{name}: {text}"
        );
        // Nothing else is wrong with this firmware.
        assert_eq!(text.matches("FAIL").count(), 1, "{name}: {text}");
    }
    // Without the table: the traced allocations, each alive from its malloc to its free; none
    // shares memory, and the check says so instead of being skipped.
    let traced = dir.join("traced.toml");
    std::fs::write(&traced, &head).unwrap();
    let (text, code, _) = audit(&dir, &traced, &bundled_script("overlap.rhai"), None);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("PASS overlap: ") && text.contains(" traced buffers, none shares memory"),
        "{text}"
    );
    assert!(!text.contains("SKIP"), "{text}");
    // A table the ELF does not have is a configuration error.
    let wrong = dir.join("wrong.toml");
    std::fs::write(&wrong, format!("{head}[tensors]\ntable = \"g_plans\"\n")).unwrap();
    let (text, code, _) = audit(&dir, &wrong, &bundled_script("overlap.rhai"), None);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("[tensors]: no global `g_plans` in the ELF"),
        "{text}"
    );
}

#[test]
fn span_labels_from_an_index_argument_a_name_table_and_a_string_argument() {
    let dir = tempdir("net-labels");
    let elf = build_net(&dir);
    let head = format!("elf = {:?}\n{NET_PHASES}", elf.display().to_string());
    let cfg = dir.join("memlife.toml");
    std::fs::write(&cfg, format!("{head}{NET_TABLES}")).unwrap();
    // The build's operators by their string argument, the escape shown, not sent.
    let (text, code, report) = audit(&dir, &cfg, &bundled_script("build-stairs.rhai"), None);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("conv_in: +"), "{text}");
    assert!(text.contains("dense\\u{1b}[2J: +"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text}");
    let spans = report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["function"] == "net_plan")
        .unwrap()["spans"]
        .clone();
    assert_eq!(spans[2]["label"], "softmax", "{spans}");
    // The layers by their first argument, an index into `layer_names`: three runs per cycle.
    let (text, code, report) = audit(&dir, &cfg, &bundled_script("layers.rhai"), None);
    assert_eq!(code, 0, "{text}");
    for (i, name) in ["conv_out", "dense_out", "softmax_out"].iter().enumerate() {
        assert!(
            text.contains(&format!("layer {i} {name}: delta 0 B")),
            "{text}"
        );
    }
    assert_eq!(
        text.matches("layer 2 softmax_out: delta").count(),
        3,
        "{text}"
    );
    // The largest temporary is layer 2's: the peak is named by the table too.
    assert!(
        text.contains("above entry at layer 2 softmax_out"),
        "{text}"
    );
    let runs = report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["function"] == "net_run")
        .count();
    assert_eq!(runs, 3, "{text}");
    // Without [labels]: the second argument (here the net pointer) is no name; the index is
    // shown instead, and nothing is read from the table.
    let plain = dir.join("plain.toml");
    std::fs::write(&plain, &head).unwrap();
    let (text, code, _) = audit(&dir, &plain, &bundled_script("layers.rhai"), None);
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("softmax_out"), "{text}");
    // A label key that is neither a role nor a function is an error naming the nearest.
    let typo = dir.join("typo.toml");
    std::fs::write(&typo, format!("{head}[labels.rnu]\narg = 0\n")).unwrap();
    let (text, code, _) = audit(&dir, &typo, &bundled_script("layers.rhai"), None);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("[labels] `rnu` is neither a role") && text.contains("did you mean `run`?"),
        "{text}"
    );
}

#[test]
fn init_on_the_c_engine_picks_its_public_build_phase_and_the_audit_runs_unedited() {
    let dir = tempdir("init-c");
    let elf = memlife_testkit::firmware::elf("heap4", "leak-on-switch");
    let cfg = dir.join("memlife.toml");
    let out = run_memlife(&[
        "init",
        "--elf",
        elf.to_str().unwrap(),
        "-o",
        cfg.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let toml = std::fs::read_to_string(&cfg).unwrap();
    // graph_build is the phase main calls; build_graph its file-static helper.
    assert!(
        toml.contains("build = \"graph_build\"    # engine.c:"),
        "{toml}"
    );
    assert!(toml.contains("#   or build = \"build_graph\""), "{toml}");
    for (role, function) in [
        ("load", "model_load"),
        ("run", "inference_run"),
        ("switch", "model_switch"),
        ("release", "model_release"),
    ] {
        assert!(toml.contains(&format!("{role} = \"{function}\"")), "{toml}");
    }
    let json = dir.join("r.json");
    let out = run_memlife(&[
        "audit",
        "--config",
        cfg.to_str().unwrap(),
        &bundled_script("lifecycle.rhai"),
        "--qemu",
        "netduinoplus2",
        "--json",
        json.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    // The leak on the switch, found from the guessed roles alone.
    assert!(
        text.contains("FAIL leak: free after release drops 368 B per switch"),
        "{text}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        roles_of_cycle(&report, 1),
        ["load", "build", "run", "switch", "run", "release"],
        "{text}"
    );
    let builds: Vec<&str> = report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["alias"] == "build")
        .map(|p| p["function"].as_str().unwrap())
        .collect();
    assert_eq!(builds, ["graph_build"; 3], "{text}");
}

#[test]
fn every_script_runs_on_the_c_engine_and_observes_its_switch() {
    let dir = tempdir("c-scripts");
    let cfg = repo().join("examples/leak-on-switch/memlife.toml");
    let scripts = bundled_scripts();
    assert!(scripts.len() >= 7);
    for s in scripts {
        let name = s.file_name().unwrap().to_string_lossy().to_string();
        let (text, code, report) = audit(&dir, &cfg, s.to_str().unwrap(), None);
        assert!(code == 0 || code == 1, "{name}: {code}\n{text}");
        if name == "arena.rhai" {
            // TensorFlow Lite Micro's arenas only: on a firmware without TFLM it skips, saying
            // why, and observes no cycle.
            assert!(
                code == 0 && text.contains("SKIP arena-fit: no TensorFlow Lite Micro build"),
                "{text}"
            );
            continue;
        }
        // One cycle: load, build, run, switch, run again, release, in the firmware's order.
        assert_eq!(
            roles_of_cycle(&report, 1),
            ["load", "build", "run", "switch", "run", "release"],
            "{name}: {text}"
        );
        if name == "leak.rhai" || name == "lifecycle.rhai" {
            assert_eq!(code, 1, "{name}: {text}");
            assert!(
                text.contains("368 B") && text.contains("per switch"),
                "{name}: {text}"
            );
        }
    }
}

/// A firmware whose stale pointer writes a freed block's size word: newlib-nano then hands the
/// grown block to the next malloc, over a block still in use. No tensor table: only the traced
/// allocations can show it.
const STALE_C: &str = r#"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
void fw_halted(void) { for (;;) {} }
void fw_fail(const char *why, uint32_t code) { (void)why; (void)code; for (;;) {} }
static volatile int sink;
uint8_t *volatile kept_b, *volatile kept_c, *volatile kept_g;
__attribute__((noinline)) void step(int idx) {
    uint8_t *t = malloc(32 + 8 * idx);
    memset(t, idx, 32);
    sink += t[1];
    free(t);
}
__attribute__((noinline)) void app_start(void) { step(0); }
__attribute__((noinline)) void app_run(void) {
    kept_g = malloc(16);        /* keeps a's block apart from the free one before it */
    uint8_t *a = malloc(64);
    uint8_t *b = malloc(64);
    memset(a, 1, 64);
    memset(b, 2, 64);
    free(a);
    ((volatile int32_t *)a)[-2] = 200;   /* the defect: a stale write on the size word */
    uint8_t *c = malloc(150);
    memset(c, 3, 16);
    kept_b = b;
    kept_c = c;
    step(1);
}
__attribute__((noinline)) void app_stop(void) { step(2); }
int main(void) {
    int first = 1;
    for (;;) {
        app_start();
        if (first) app_run();
        first = 0;
        app_stop();
    }
}
"#;

#[test]
fn traced_allocations_show_a_block_handed_out_over_one_in_use() {
    let dir = tempdir("stale");
    let elf = build_test_firmware(&dir, "stale", STALE_C, false);
    let cfg = write_test_config(
        &dir,
        &elf,
        "[phases]\nload = \"app_start\"\nrun = \"app_run\"\nrelease = \"app_stop\"\n[spans]\nrun = \"step\"\n",
    );
    for name in ["overlap.rhai", "lifecycle.rhai"] {
        let (text, code, _) = audit(&dir, &cfg, &bundled_script(name), None);
        assert_eq!(code, 1, "{name}: {text}");
        // b (stale.c:19) is in use when c (stale.c:24) is handed the grown block over it.
        let fail = text
            .lines()
            .find(|l| l.starts_with("FAIL overlap: buffer 0x"))
            .unwrap_or_else(|| panic!("{name}: {text}"));
        assert!(
            fail.contains("(72 B, allocated at app_run (stale.c:19) in app_run) and buffer 0x")
                && fail.contains("(160 B, allocated at app_run (stale.c:24) in app_run) share 0x")
                && fail.contains("(72 B) while both are allocated"),
            "{name}: {fail}"
        );
    }
}

/// A firmware that runs three cycles and exits (semihosting `SYS_EXIT`), the way a test build
/// ends: each cycle's `app_stop` keeps 24 bytes.
const EXITS_C: &str = r#"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "semihost.h"
void fw_halted(void) { for (;;) {} }
void fw_fail(const char *why, uint32_t code) { (void)why; (void)code; for (;;) {} }
static uint8_t *volatile work;
static uint8_t *volatile kept[3];
static uint8_t *volatile scratch;
__attribute__((noinline)) void app_start(void) { work = malloc(200); memset(work, 1, 200); }
__attribute__((noinline)) void app_run(void) { scratch = malloc(64); memset(scratch, 2, 64); free(scratch); }
__attribute__((noinline)) void app_stop(int k) { free(work); kept[k] = malloc(24); }
int main(void) {
    for (int k = 0; k < 3; k++) {
        app_start();
        app_run();
        app_stop(k);
    }
    sh_exit_ok();
}
"#;

/// Builds [`EXITS_C`] for QEMU netduinoplus2 with newlib-nano; its memlife.toml.
fn build_exits(dir: &Path) -> PathBuf {
    let elf = build_test_firmware(dir, "exits", EXITS_C, true);
    write_test_config(
        dir,
        &elf,
        "[phases]\nload = \"app_start\"\nrun = \"app_run\"\nrelease = \"app_stop\"\n[budgets]\ncycles = 3\n",
    )
}

#[test]
fn the_programs_exit_closes_its_last_cycle() {
    let dir = tempdir("exits");
    let cfg = build_exits(&dir);
    // The third cycle ends when the program exits: complete, its calls all recorded.
    let all = dir.join("all.rhai");
    std::fs::write(
        &all,
        r#"
let t = target();
for c in t.cycles(3) {
    let roles = c.calls.map(|p| p.role);
    let exit = if c.exit == () { "none" } else { c.exit };
    print(`cycle ${c.index}: ${roles} free after ${c.after.free} exit ${exit}`);
}
"#,
    )
    .unwrap();
    let (text, code, report) = audit(&dir, &cfg, all.to_str().unwrap(), None);
    assert_eq!(code, 0, "{text}");
    for k in 1..=3 {
        assert_eq!(
            roles_of_cycle(&report, k),
            ["load", "run", "release"],
            "cycle {k}: {text}"
        );
        assert!(
            text.contains(&format!(
                "cycle {k}: [\"load\", \"run\", \"release\"] free after"
            )),
            "{text}"
        );
    }
    // Only the last cycle was ended by the exit, with its status.
    assert_eq!(text.matches("exit none").count(), 2, "{text}");
    assert!(text.contains("exit 0"), "{text}");
    // The bundled checks run on all three: 24 B kept per cycle.
    let (text, code, _) = audit(&dir, &cfg, &bundled_script("lifecycle.rhai"), None);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("FAIL leak: free after release drops ") && text.contains("over 3 cycles"),
        "{text}"
    );
    // More cycles than the firmware runs: said plainly by the script API.
    let more = dir.join("more.rhai");
    std::fs::write(&more, "let t = target();\nlet cs = t.cycles(5);\n").unwrap();
    let (text, code, _) = audit(&dir, &cfg, more.to_str().unwrap(), None);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("the firmware exited after 3 cycles"),
        "{text}"
    );
    assert!(!text.contains("panicked"), "{text}");
}
