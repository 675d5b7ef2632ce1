//! Allocation-failure injection end to end (`t.fail_alloc`): memlife makes graph_build's arena
//! allocation return NULL on the `error-path` firmware, whose clean-up after that failure
//! forgets `op_contexts`, and on the healthy firmware, whose clean-up frees everything. The
//! failed call, the phase's leak and its allocation site come out of a short script.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use common::*;

/// Fails the arena allocation in graph_build, then checks what the firmware's own error path
/// left behind once it released the model.
const SCRIPT: &str = r#"
let t = target();
t.fail_alloc("planner_plan");
let load = t.phase("load");
let build = t.phase("build");
let release = t.phase("release");
let inj = t.injected();
if inj.len() != 1 { throw `expected one failed allocation, got ${inj.len()}`; }
let f = inj[0];
print(`failed: ${f.request} B at ${f.site} in ${f.phase}, which returned ${f.returned}`);
let left = t.leaks(build.before, release.after);
let names = [];
for l in left { names.push(`${l.size} B allocated at ${l.site}`); }
check("error-path", left.is_empty(),
      if left.is_empty() { `after ${f.site} failed, the release left nothing behind` }
      else { `after ${f.site} failed, the release left ${left.len()} block(s): ${names}` });
"#;

fn run(dir: &std::path::Path, alloc: &str, scenario: &str) -> (i32, String) {
    let script = dir.join("fail-arena.rhai");
    std::fs::write(&script, SCRIPT).unwrap();
    let json = dir.join(format!("{alloc}-{scenario}.json"));
    let out = run_memlife(&[
        "audit",
        "--json",
        json.to_str().unwrap(),
        "--config",
        repo()
            .join("examples/healthy/memlife.toml")
            .to_str()
            .unwrap(),
        "--elf",
        elf(alloc, scenario).to_str().unwrap(),
        script.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    // The JSON report lists the failure with what the phase returned.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["injected"][0]["request"], 24576, "{alloc}: {text}");
    assert_eq!(report["injected"][0]["returned"], "-12", "{alloc}: {text}");
    assert_eq!(
        report["injected"][0]["site"]["line"], 110,
        "{alloc}: {text}"
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn a_failed_arena_leaks_op_contexts_on_error_path_only() {
    let dir = tempdir("fail-alloc");
    // The arena: 24576 B asked; op_contexts: 360 asked, 368 in heap4's and nano's accounting,
    // 364 in tlsf's.
    for (alloc, lost) in [("heap4", 368), ("nano", 368), ("tlsf", 364)] {
        let (code, text) = run(&dir, alloc, "error-path");
        assert_eq!(code, 1, "{alloc}: {text}");
        assert!(
            text.contains(
                "failed: 24576 B at planner_plan (planner.c:110) in graph_build, which returned -12"
            ),
            "{alloc}: {text}"
        );
        assert!(
            text.contains("FAIL error-path: after planner_plan (planner.c:") && text.contains(&format!(
                "the release left 1 block(s): [\"{lost} B allocated at build_graph (engine.c:51)\"]"
            )),
            "{alloc}: {text}"
        );
        let (code, text) = run(&dir, alloc, "healthy");
        assert_eq!(code, 0, "{alloc} healthy: {text}");
        assert!(
            text.contains("PASS error-path: after planner_plan (planner.c:")
                && text.contains("the release left nothing behind"),
            "{alloc} healthy: {text}"
        );
    }
}

#[test]
fn fail_alloc_refuses_an_empty_site() {
    let dir = tempdir("fail-alloc-bad");
    let script = dir.join("bad.rhai");
    std::fs::write(&script, "let t = target();\nt.fail_alloc(\"\");\n").unwrap();
    let out = run_memlife(&[
        "audit",
        "--config",
        repo()
            .join("examples/healthy/memlife.toml")
            .to_str()
            .unwrap(),
        script.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("fail_alloc needs a site"), "{err}");
}

/// `scripts/error-paths.rhai`: every allocation site of the load and the build made to fail in
/// turn, after a reset each, and the firmware run on through its own error handling: on
/// `error-path` only the arena's failure leaves a block behind (op_contexts), named with the site
/// made to fail and what graph_build returned; on `healthy` every error path cleans up, and a
/// failed load (the loader checks its allocations) is given back before the next cycle.
#[test]
fn error_paths_script_finds_the_one_path_that_forgets_a_buffer() {
    let dir = tempdir("error-paths");
    let script = repo().join("scripts/error-paths.rhai");
    for (alloc, lost) in [("heap4", 368), ("nano", 368), ("tlsf", 364)] {
        for scenario in ["error-path", "healthy"] {
            let junit = dir.join(format!("{alloc}-{scenario}.xml"));
            let out = run_memlife(&[
                "audit",
                "--config",
                repo()
                    .join("examples/healthy/memlife.toml")
                    .to_str()
                    .unwrap(),
                "--elf",
                elf(alloc, scenario).to_str().unwrap(),
                script.to_str().unwrap(),
                "--junit",
                junit.to_str().unwrap(),
                "--out",
                dir.to_str().unwrap(),
            ]);
            let text = stdout(&out);
            let name = format!("{alloc}-{scenario}");
            let xml = std::fs::read_to_string(&junit).unwrap();
            let mut cases: Vec<&str> = xml
                .split("<testcase name=\"")
                .skip(1)
                .map(|c| c.split('"').next().unwrap())
                .collect();
            cases.sort_unstable();
            // One case per phase and site: the chunked loader's staging buffer and weight
            // blocks (src/loader.c), the build's context array, quantisation tables and arena.
            assert_eq!(
                cases,
                [
                    "error-path build engine.c:51",
                    "error-path build ops.c:65",
                    "error-path build planner.c:110",
                    "error-path load loader.c:188",
                    "error-path load loader.c:230",
                ],
                "{name}: {text}"
            );
            assert!(
                text.contains("PASS error-path load loader.c:230: after the allocation of 1024 B at loader_load (loader.c:230) failed, model_load returned -12; when the firmware went on to the next cycle (model_load), everything the failed call took was free"),
                "{name}: {text}"
            );
            assert!(
                text.contains("PASS error-path build engine.c:51: after the allocation of 360 B at build_graph (engine.c:51) failed, graph_build returned -12; the release freed everything"),
                "{name}: {text}"
            );
            if scenario == "healthy" {
                assert_eq!(out.status.code(), Some(0), "{name}: {text}");
                assert!(text.contains("5 passed, 0 failed"), "{name}: {text}");
            } else {
                assert_eq!(out.status.code(), Some(1), "{name}: {text}");
                assert!(text.contains("4 passed, 1 failed"), "{name}: {text}");
                assert!(
                    text.contains(&format!(
                        "FAIL error-path build planner.c:110: after the allocation of 24576 B at planner_plan (planner.c:110) failed, graph_build returned -12; the release left 1 block(s): [\"{lost} B allocated at build_graph (engine.c:51)\"]"
                    )),
                    "{name}: {text}"
                );
            }
        }
    }
}

/// Runs `script` on `elf` with the healthy example's configuration; exit code and stdout.
fn audit_with(
    dir: &std::path::Path,
    elf: &std::path::Path,
    name: &str,
    script: &str,
) -> (i32, String) {
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    let out = run_memlife(&[
        "audit",
        "--config",
        repo()
            .join("examples/healthy/memlife.toml")
            .to_str()
            .unwrap(),
        "--elf",
        elf.to_str().unwrap(),
        path.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    (out.status.code().unwrap_or(-1), text)
}

/// `t.alloc_sites`, `t.fail_alloc` by phase and k-th allocation or by site, and
/// `t.after_failure` ending at the next cycle (a failed load) or at the release (a failed
/// build), with what the phase returned and what the error path lost.
const CHOOSE: &str = r#"
let t = target();
t.cycle();
let n = 0;
let keys = [];
for s in t.alloc_sites("build") { keys.push(s.key); n += s.count; }
let load = [];
for s in t.alloc_sites("load") { load.push(s.key); }
print(`build sites: ${keys}; load sites: ${load}; build allocations: ${n}`);
fn show(tag, r) {
    let f = r.injected;
    let lost = [];
    for l in r.leaks { lost.push(`${l.size} B at ${l.site}`); }
    print(`${tag}: ${f.request} B at ${f.site}, ${f.phase} returned ${f.returned}; end ${r.end}; lost ${lost}`);
}
t.reset();
t.fail_alloc(#{ phase: "load", nth: 1 });
show("load #1", t.after_failure());
t.reset();
t.fail_alloc(#{ phase: "build", nth: n });
show(`build #${n}`, t.after_failure());
t.reset();
t.fail_alloc(#{ site: "planner.c:110", nth: 1 });
show("site", t.after_failure());
"#;

#[test]
fn failures_are_chosen_by_phase_and_kth_allocation_and_their_handling_is_awaited() {
    let dir = tempdir("fail-choose");
    let (code, text) = audit_with(&dir, &elf("heap4", "error-path"), "choose.rhai", CHOOSE);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("build sites: [\"engine.c:51\", \"ops.c:65\"")
            && text
                .contains("\"planner.c:110\"]; load sites: [\"loader.c:230\", \"loader.c:188\"]"),
        "{text}"
    );
    // The chunked loader's first allocation is its 1 KiB staging buffer: model_load gives it
    // back and returns -12, and main goes on with the next cycle.
    assert!(
        text.contains(
            "load #1: 1024 B at loader_load (loader.c:230), model_load returned -12; end next-cycle; lost []"
        ),
        "{text}"
    );
    // The build's last allocation is the arena; error-path's clean-up forgets op_contexts.
    let arena = "24576 B at planner_plan (planner.c:110), graph_build returned -12; end release; lost [\"368 B at build_graph (engine.c:51)\"]";
    assert!(text.contains(&format!("site: {arena}")), "{text}");
    let by_nth = text
        .lines()
        .find(|l| l.starts_with("build #"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(by_nth.ends_with(arena), "{text}");
}

#[test]
fn fail_alloc_refuses_an_unknown_key() {
    let dir = tempdir("fail-alloc-key");
    let (code, text) = audit_with(
        &dir,
        &elf("heap4", "healthy"),
        "bad.rhai",
        "let t = target();\nt.fail_alloc(#{ phase: \"build\", nht: 2 });\n",
    );
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("unknown key `nht`"), "{text}");
}

/// A test build exits after its last cycle: a load that fails in that cycle is handled (main
/// goes on, the loop ends, the program exits with status 0), and `after_failure` ends at the
/// exit with what the error path lost, from the trace (the heap can no longer be walked).
/// `error-paths.rhai` on it learns its sites from the one cycle, which ends in the exit; memlife
/// started this QEMU, so it starts it again for each site after an exit: every site runs, and
/// the arena's failure leaks op_contexts as on the looping build. (Where memlife cannot start
/// the target again, the sites left are skipped: `lifecycle_ends_e2e`.)
#[test]
fn a_firmware_that_exits_after_a_failed_phase_is_handled() {
    let dir = tempdir("fail-exit");
    let elf = memlife_testkit::firmware::exiting_elf("heap4", "error-path", 1);
    let script = r#"
let t = target();
t.fail_alloc(#{ phase: "load", nth: 2 });
let r = t.after_failure();
print(`end ${r.end} status ${r.status} during ${r.during}: ${r.injected.request} B at ${r.injected.site}, returned ${r.injected.returned}; lost ${r.leaks.len()}; ${r.ended}`);
"#;
    let (code, text) = audit_with(&dir, &elf, "exit.rhai", script);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("end exit status 0 during : ")
            && text.contains("at parse_model (loader.c:188), returned -12; lost 0; the firmware exited with status 0"),
        "{text}"
    );
    let junit = dir.join("exit.xml");
    let out = run_memlife(&[
        "audit",
        "--config",
        repo()
            .join("examples/healthy/memlife.toml")
            .to_str()
            .unwrap(),
        "--elf",
        elf.to_str().unwrap(),
        repo().join("scripts/error-paths.rhai").to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("error-path build planner.c:110"), "{xml}");
    assert!(!xml.contains("not run"), "{xml}");
    assert!(
        text.contains("FAIL error-path build planner.c:110: after the allocation of 24576 B at planner_plan (planner.c:110) failed, graph_build returned -12; the release left 1 block(s)"),
        "{text}"
    );
    assert!(text.contains("4 passed, 1 failed"), "{text}");
}

/// A firmware that does not come back from a failed allocation, three ways: `app_load` trusts
/// malloc and calls through the NULL block's function pointer (the word at address 0, the
/// initial stack pointer, has no Thumb bit: a fault); `app_build` waits for a flag nothing sets
/// when its table is missing (parked), and exits with status 3 when its arena is.
const UNHANDLED_C: &str = r#"
#include <stdint.h>
#include <stdlib.h>
#include "semihost.h"
void fw_halted(void) { for (;;) {} }
void fw_fail(const char *why, uint32_t code) { (void)why; (void)code; for (;;) {} }
typedef struct { void (*done)(void); uint8_t data[28]; } job_t;
static job_t *volatile job;
static uint8_t *volatile table;
static uint8_t *volatile arena;
static volatile uint32_t runs, never;
static void finished(void) { runs++; }
__attribute__((noinline)) int app_load(void) {
    job = malloc(sizeof(job_t));
    job->done = finished;
    job->done();
    return 0;
}
__attribute__((noinline)) int app_build(void) {
    table = malloc(96);
    if (table == NULL) { while (!never) {} }
    arena = malloc(512);
    if (arena == NULL) sh_exit_fail(3);
    return 0;
}
__attribute__((noinline)) void app_release(void) { free(arena); free(table); free(job); }
int main(void) {
    for (;;) { app_load(); app_build(); app_release(); }
}
"#;

#[test]
fn faults_hangs_and_exits_after_a_failure_name_the_site() {
    let dir = tempdir("fail-unhandled");
    let elf = build_test_firmware(&dir, "unhandled", UNHANDLED_C, true);
    let cfg = write_test_config(
        &dir,
        &elf,
        "[phases]\nload = \"app_load\"\nbuild = \"app_build\"\nrelease = \"app_release\"\n",
    );
    let junit = dir.join("j.xml");
    let out = run_memlife(&[
        "audit",
        "--config",
        cfg.to_str().unwrap(),
        repo().join("scripts/error-paths.rhai").to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
        // Long: a hang is found parked, not by this timeout.
        "--timeout",
        "60",
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    let line = |prefix: &str| {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` in:\n{text}"))
            .to_string()
    };
    let load = line("FAIL error-path load unhandled.c:");
    assert!(
        load.contains("after the allocation of 32 B at app_load (unhandled.c:")
            && load.contains("the firmware faulted: HardFault")
            && load.contains("during phase app_load"),
        "{load}"
    );
    let build: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("FAIL error-path build unhandled.c:"))
        .collect();
    assert_eq!(build.len(), 2, "{text}");
    assert!(
        build[0].contains("after the allocation of 96 B at app_build (unhandled.c:")
            && build[0].contains("the firmware hung: ")
            && build[0].contains("parked at pc ")
            && build[0].contains(" in app_build (unhandled.c:"),
        "{}",
        build[0]
    );
    assert!(
        build[1].contains("after the allocation of 512 B at app_build (unhandled.c:")
            && build[1].contains("the firmware exited with status 3 during app_build"),
        "{}",
        build[1]
    );
}
