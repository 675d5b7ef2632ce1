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
print(`failed: ${f.request} B at ${f.site} in ${f.phase}`);
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
        "--out",
        dir.to_str().unwrap(),
    ]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
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
            text.contains("failed: 24576 B at planner_plan (planner.c:")
                && text.contains("in graph_build"),
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

/// `scripts/error-paths.rhai`: every allocation site of the build made to fail in turn, after a
/// reset each: on `error-path` only the arena's failure leaves a block behind (op_contexts), on
/// `healthy` every error path cleans up.
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
            assert_eq!(
                cases,
                [
                    "error-path build engine.c:51",
                    "error-path build ops.c:65",
                    "error-path build planner.c:110"
                ],
                "{name}: {text}"
            );
            if scenario == "healthy" {
                assert_eq!(out.status.code(), Some(0), "{name}: {text}");
                assert!(text.contains("3 passed, 0 failed"), "{name}: {text}");
            } else {
                assert_eq!(out.status.code(), Some(1), "{name}: {text}");
                assert!(text.contains("2 passed, 1 failed"), "{name}: {text}");
                assert!(
                    text.contains(&format!(
                        "FAIL error-path build planner.c:110: after the allocation of 24576 B at planner_plan (planner.c:110) failed, the release left 1 block(s): [\"{lost} B allocated at build_graph (engine.c:51)\"]"
                    )),
                    "{name}: {text}"
                );
            }
        }
    }
}
