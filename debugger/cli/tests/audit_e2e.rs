//! `memlife audit` end to end: every example against every allocator's firmware in QEMU, checked
//! against the expected verdict and the figures of firmware/README.md.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use std::path::PathBuf;

use common::*;

fn example(name: &str) -> PathBuf {
    repo().join("examples").join(name).join("memlife.toml")
}

/// `[expect]` of an example's memlife.toml.
fn expectation(name: &str) -> (i32, Vec<String>) {
    let text = std::fs::read_to_string(example(name)).unwrap();
    let value: toml_like::Table = toml_like::parse(&text);
    (value.exit, value.failing)
}

/// A tiny reader for the two `[expect]` keys, so the test does not need a TOML dependency.
mod toml_like {
    pub struct Table {
        pub exit: i32,
        pub failing: Vec<String>,
    }
    pub fn parse(text: &str) -> Table {
        let section = text.split("[expect]").nth(1).expect("[expect] section");
        let mut t = Table {
            exit: -1,
            failing: Vec::new(),
        };
        for line in section.lines() {
            let line = line.trim();
            if let Some(v) = line.strip_prefix("exit = ") {
                t.exit = v.trim().parse().unwrap();
            } else if let Some(v) = line.strip_prefix("failing = ") {
                t.failing = v
                    .trim_matches(|c| c == '[' || c == ']')
                    .split(',')
                    .map(|s| s.trim().trim_matches('"').to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
            }
        }
        t
    }
}

/// The failing test cases of a JUnit file, by name.
fn junit_failures(xml: &str) -> Vec<String> {
    let mut out = Vec::new();
    for case in xml.split("<testcase ").skip(1) {
        let name = case.split('"').nth(1).unwrap().to_string();
        let body = case.split("</testcase>").next().unwrap();
        if body.contains("<failure") || body.contains("<error") {
            out.push(name);
        }
    }
    out
}

fn junit_cases(xml: &str) -> Vec<String> {
    xml.split("<testcase ")
        .skip(1)
        .map(|c| c.split('"').nth(1).unwrap().to_string())
        .collect()
}

/// The figures each faulty scenario must report (firmware/README.md, measured with gdb).
fn expected_figures(alloc: &str, scenario: &str) -> Vec<&'static str> {
    match (scenario, alloc) {
        // tlsf counts a 4-byte size word per block where heap4 counts an 8-byte header.
        ("load-peak", "tlsf") => vec!["peaks 78328 B above its baseline"],
        ("reorder", "tlsf") => vec![
            "largest build step 9480 B at conv_b",
            "resident build memory 36192 B",
        ],
        ("branch-peak", "tlsf") => {
            vec!["inference peak 10764 B above entry at layer 13 head_p5"]
        }
        ("leak-on-switch", "tlsf") => vec![
            "drops 364 B per switch",
            "allocated at build_graph (engine.c:51)",
        ],
        ("fragmentation", "tlsf") => vec!["after release = 0.336"],
        ("load-peak", "heap4") => vec!["peaks 78384 B above its baseline"],
        ("load-peak", _) => vec!["peaks 78380 B above its baseline"],
        ("reorder", _) => vec![
            "largest build step 9488 B at conv_b",
            "resident build memory 36248 B",
        ],
        ("branch-peak", _) => vec!["inference peak 10776 B above entry at layer 13 head_p5"],
        ("leak-on-switch", _) => vec![
            "drops 368 B per switch",
            "allocated at build_graph (engine.c:51)",
        ],
        ("fragmentation", "heap4") => vec!["after release = 0.407"],
        ("fragmentation", _) => vec!["after release = 0.279"],
        ("overlap", _) => vec![
            "head_p3_out [layers 11..14] and head_p4_out [layers 12..14] share",
            "(2048 B)",
        ],
        _ => vec![],
    }
}

/// Audits `alloc`'s build of `scenario` with `lifecycle.rhai` and that example's memlife.toml,
/// and asserts the exit code and the failing JUnit cases. Gives the run's name, its stdout, the
/// JUnit XML and the path of its JSON report.
fn audit_example(
    dir: &std::path::Path,
    alloc: &str,
    scenario: &str,
    exit: i32,
    failing: &[String],
) -> (String, String, String, std::path::PathBuf) {
    let elf = elf(alloc, scenario);
    let junit = dir.join(format!("{alloc}-{scenario}.xml"));
    let json = dir.join(format!("{alloc}-{scenario}.json"));
    let script = repo().join("scripts/lifecycle.rhai");
    let out = run_memlife(&[
        "audit",
        "--config",
        example(scenario).to_str().unwrap(),
        "--elf",
        elf.to_str().unwrap(),
        script.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let name = format!("{alloc}-{scenario}");
    let text = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(exit),
        "{name}: {text}\n{}",
        stderr(&out)
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(
        junit_failures(&xml),
        failing,
        "{name}: failing JUnit cases\n{xml}"
    );
    (name, text, xml, json)
}

#[test]
fn every_example_gives_its_verdict_on_every_allocator() {
    let dir = tempdir("audit");
    for scenario in SCENARIOS {
        let (exit, failing) = expectation(scenario);
        for alloc in ALLOCS {
            let (name, text, xml, json) = audit_example(&dir, alloc, scenario, exit, &failing);
            assert_eq!(
                junit_cases(&xml),
                [
                    "load-peak",
                    "build-step",
                    "inference-peak",
                    "overlap",
                    "fragmentation",
                    "leak",
                    "integrity"
                ],
                "{name}"
            );
            for figure in expected_figures(alloc, scenario) {
                assert!(
                    text.contains(figure),
                    "{name}: expected `{figure}` in:\n{text}"
                );
            }
            let report: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
            assert_eq!(report["exit_code"], exit, "{name}");
            assert_eq!(
                report["phases"].as_array().unwrap().len(),
                18,
                "{name}: 3 lifecycles of 6 phases"
            );
            // Trace accounting agrees with the walks at every phase boundary.
            for p in report["phases"].as_array().unwrap() {
                assert_eq!(p["accounting_drift"], 0, "{name}: {}", p["function"]);
            }
        }
    }
}

/// The two figures of leak.rhai's "fell from A to B B" message.
fn fell_from_to(text: &str) -> (u64, u64) {
    let rest = text
        .split("fell from ")
        .nth(1)
        .expect("a `fell from` message");
    let mut words = rest.split_whitespace();
    let from = words.next().unwrap().parse().unwrap();
    assert_eq!(words.next(), Some("to"));
    let to = words.next().unwrap().parse().unwrap();
    (from, to)
}

#[test]
fn leak_script_names_the_leak_over_the_configured_cycles_and_fifty_more() {
    let out = run_memlife(&[
        "audit",
        "--config",
        example("leak-on-switch").to_str().unwrap(),
        repo().join("scripts/leak.rhai").to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    // 368 B per switch over 52 switches. The starting figure is the heap's capacity less one
    // leak: 97920 with ucHeap 4 bytes off an 8-byte boundary, 8 more when the link places it
    // aligned (it moves with the other .bss variables).
    let (from, to) = fell_from_to(&text);
    assert!(from == 97920 || from == 97928, "{text}");
    assert_eq!(from - to, 52 * 368, "{text}");
    assert!(
        text.contains("over 52 switches: 368 B lost per switch"),
        "{text}"
    );
    assert!(text.contains("engine.c:51"), "{text}");
    // The ESP-IDF heap loses 364 B per switch (firmware/README.md: 70 switches leave 71208 of
    // 96688 B, i.e. 96324 after the first and 96324 - 52 x 364 after the 53rd: the example
    // sets `cycles = 3`, leak.rhai adds 50 more).
    let tlsf = elf("tlsf", "leak-on-switch");
    let out = run_memlife(&[
        "audit",
        "--config",
        example("leak-on-switch").to_str().unwrap(),
        "--elf",
        tlsf.to_str().unwrap(),
        repo().join("scripts/leak.rhai").to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        text.contains("fell from 96324 to 77396 B over 52 switches: 364 B lost per switch"),
        "{text}"
    );
    assert!(
        text.contains("allocated at build_graph (engine.c:51)"),
        "{text}"
    );
    let healthy = elf("heap4", "healthy");
    let out = run_memlife(&[
        "audit",
        "--config",
        example("healthy").to_str().unwrap(),
        "--elf",
        healthy.to_str().unwrap(),
        repo().join("scripts/leak.rhai").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn leak_script_runs_under_every_peak_method_and_events_carry_their_request() {
    let dir = tempdir("leak-methods");
    for method in ["sample", "watermark", "trace"] {
        let json = dir.join(format!("{method}.json"));
        let out = run_memlife(&[
            "audit",
            "--config",
            example("leak-on-switch").to_str().unwrap(),
            "--method",
            method,
            "--json",
            json.to_str().unwrap(),
            repo().join("scripts/leak.rhai").to_str().unwrap(),
        ]);
        let text = stdout(&out);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{method}: {text}{}",
            stderr(&out)
        );
        assert!(text.contains("368 B lost per switch"), "{method}: {text}");
        if method == "trace" {
            let report: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
            let allocs: Vec<&serde_json::Value> = report["events"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["kind"] == "alloc")
                .collect();
            assert!(!allocs.is_empty());
            // The size asked at the allocator's entry, at most the block's size.
            for e in allocs {
                let request = e["request"].as_u64().unwrap_or_else(|| panic!("{e}"));
                assert!(request > 0 && request <= e["size"].as_u64().unwrap(), "{e}");
            }
        }
    }
}

#[test]
fn script_errors_have_a_line_and_exit_2_and_reports_are_still_written() {
    let dir = tempdir("script-error");
    let script = dir.join("bad.rhai");
    std::fs::write(
        &script,
        "let t = target();\ncheck(\"first\", true, \"ok\");\nlet x = t.no_such_thing();\n",
    )
    .unwrap();
    let junit = dir.join("j.xml");
    let out = run_memlife(&[
        "audit",
        "--config",
        example("healthy").to_str().unwrap(),
        script.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("bad.rhai:3:"), "{err}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<testcase name=\"first\"") && xml.contains("<error"),
        "{xml}"
    );
    // A syntax error is reported before anything runs.
    std::fs::write(&script, "let = ;\n").unwrap();
    let out = run_memlife(&[
        "audit",
        "--config",
        example("healthy").to_str().unwrap(),
        script.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bad.rhai:1:"), "{}", stderr(&out));
}

#[test]
fn sandbox_refuses_eval_and_paths_outside_the_output_directory() {
    let dir = tempdir("sandbox");
    let script = dir.join("s.rhai");
    for (source, needle) in [
        ("eval(\"1\");", "eval"),
        (
            "let t = target(); dump(t.heap(), \"../escape.json\");",
            "under the output directory",
        ),
        (
            "let t = target(); dump(t.heap(), \"/tmp/abs.json\");",
            "under the output directory",
        ),
        ("import \"x\" as y;", "x"),
        ("fn f(n) { f(n + 1) } f(0);", "Stack overflow"),
    ] {
        std::fs::write(&script, source).unwrap();
        let out = run_memlife(&[
            "audit",
            "--config",
            example("healthy").to_str().unwrap(),
            script.to_str().unwrap(),
            "--out",
            dir.join("out").to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{source}");
        assert!(stderr(&out).contains(needle), "{source}: {}", stderr(&out));
    }
    assert!(!dir.join("escape.json").exists());
}

#[test]
fn on_break_dumps_and_typed_reads() {
    let dir = tempdir("hooks");
    let script = dir.join("h.rhai");
    std::fs::write(
        &script,
        r#"
let t = target();
t.on_break("model_release", |t| dump(t.heap(), `release-${t.calls("model_release")}.json`));
for i in 0..2 { for p in ["load", "build", "run", "switch", "run", "release"] { t.phase(p); } }
let e = t.var("g_engine");
check("typed", type_of(e) == "map" && e.n_ops == 0 && type_of(t.var("g_tensors")) == "array", `${e.n_ops}`);
"#,
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = run_memlife(&[
        "audit",
        "--config",
        example("leak-on-switch").to_str().unwrap(),
        script.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let free = |n: u32| -> u64 {
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out_dir.join(format!("release-{n}.json"))).unwrap(),
        )
        .unwrap();
        v["total_free"].as_u64().unwrap()
    };
    // Dumps at the entry of each model_release: the leak shows between them.
    assert_eq!(free(1) - free(2), 368);
}

#[test]
fn a_breakpoint_never_reached_is_exit_2() {
    let dir = tempdir("never");
    let script = dir.join("n.rhai");
    std::fs::write(&script, "let t = target();\nt.run_to(\"fw_halted\");\n").unwrap();
    let out = run_memlife(&[
        "audit",
        "--config",
        example("healthy").to_str().unwrap(),
        "--timeout",
        "1",
        script.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("breakpoint at fw_halted not reached within 1.0 s"),
        "{}",
        stderr(&out)
    );
}

/// The other two peak methods find the same inference peak on branch-peak; watermark needs an
/// allocator that keeps a low-water mark and says so otherwise. Flags override memlife.toml.
#[test]
fn sample_and_watermark_methods_and_flags() {
    let script = repo().join("scripts/layers.rhai");
    for method in ["sample", "watermark"] {
        let out = run_memlife(&[
            "audit",
            "--config",
            example("branch-peak").to_str().unwrap(),
            "--method",
            method,
            script.to_str().unwrap(),
        ]);
        let text = stdout(&out);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{method}: {text}{}",
            stderr(&out)
        );
        assert!(
            text.contains("inference peak 10776 B above entry"),
            "{method}: {text}"
        );
    }
    // A raised budget from the command line turns the verdict.
    let out = run_memlife(&[
        "audit",
        "--config",
        example("branch-peak").to_str().unwrap(),
        "--budget",
        "inference_peak=20000",
        script.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let nano = elf("nano", "branch-peak");
    let out = run_memlife(&[
        "audit",
        "--config",
        example("branch-peak").to_str().unwrap(),
        "--elf",
        nano.to_str().unwrap(),
        "--method",
        "watermark",
        script.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("keeps none"), "{}", stderr(&out));
    // ESP-IDF: sampling finds the same peak in its own accounting; one watermark per heap cannot
    // give one peak, and memlife says why.
    let tlsf = elf("tlsf", "branch-peak");
    let run = |method: &str| {
        run_memlife(&[
            "audit",
            "--config",
            example("branch-peak").to_str().unwrap(),
            "--elf",
            tlsf.to_str().unwrap(),
            "--method",
            method,
            script.to_str().unwrap(),
        ])
    };
    let out = run("sample");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("inference peak 10764 B above entry"),
        "{}",
        stdout(&out)
    );
    let out = run("watermark");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("one per heap"), "{}", stderr(&out));
}

/// Scripts see an ESP-IDF heap's regions (kind, caps, per-heap figures) and the largest
/// allocatable request; single-arena allocators have neither.
#[test]
fn scripts_see_esp_idf_regions() {
    let dir = tempdir("regions");
    let script = dir.join("r.rhai");
    std::fs::write(
        &script,
        r#"
let t = target();
t.run_to("model_release", 2);
let h = t.heap();
let total = 0;
let kinds = [];
for r in h.regions { total += r.free; kinds.push(r.kind); }
if h.allocator == "esp-idf-tlsf" {
    check("regions", kinds == ["DRAM", "PSRAM"] && total == h.free && h.regions[0].caps.contains("DMA")
        && h.largest_allocatable > 0 && h.largest_allocatable < h.largest_free, `${kinds} ${total} ${h.free}`);
} else {
    check("regions", h.regions.len() == 0 && type_of(h.largest_allocatable) == "()", `${h.regions}`);
}
"#,
    )
    .unwrap();
    for alloc in ["tlsf", "heap4"] {
        let fw = elf(alloc, "fragmentation");
        let out = run_memlife(&[
            "audit",
            "--config",
            example("fragmentation").to_str().unwrap(),
            "--elf",
            fw.to_str().unwrap(),
            script.to_str().unwrap(),
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{alloc}: {}{}",
            stdout(&out),
            stderr(&out)
        );
    }
}

/// The `overrun` scenario (an operator writes a few bytes past its output buffer): on the
/// heap-poisoning builds `lifecycle.rhai`'s `integrity` fails, naming the layer after which the
/// tail canary was first found broken, the block, its requested size and where it was
/// allocated; every other check and every other allocator passes (without canaries with a
/// warning that nothing could be checked).
#[test]
fn overrun_fails_integrity_only_where_the_heap_has_canaries() {
    let dir = tempdir("overrun");
    for alloc in [
        "heap4", "heap4p", "heap5", "heap5p", "nano", "tlsf", "tlsfp", "tlsfpc",
    ] {
        let elf = elf(alloc, "overrun");
        let json = dir.join(format!("{alloc}.json"));
        let script = repo().join("scripts/lifecycle.rhai");
        let (config, elf_s, script_s, json_s, dir_s) = (
            example("healthy"),
            elf.to_str().unwrap().to_string(),
            script.to_str().unwrap().to_string(),
            json.to_str().unwrap().to_string(),
            dir.to_str().unwrap().to_string(),
        );
        let args: Vec<&str> = vec![
            "audit",
            "--config",
            config.to_str().unwrap(),
            "--elf",
            &elf_s,
            &script_s,
            "--json",
            &json_s,
            "--out",
            &dir_s,
        ];
        let out = run_memlife(&args);
        let text = stdout(&out);
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let checks = report["checks"].as_array().unwrap();
        let failing: Vec<&str> = checks
            .iter()
            .filter(|c| c["verdict"] == "fail")
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        let integrity = checks.iter().find(|c| c["name"] == "integrity").unwrap();
        let message = integrity["message"].as_str().unwrap();
        if alloc.starts_with("tlsfp") {
            assert_eq!(
                out.status.code(),
                Some(1),
                "{alloc}: {text}{}",
                stderr(&out)
            );
            assert_eq!(failing, ["integrity"], "{alloc}: {text}");
            for want in [
                "overrun: first found after op_invoke #",
                "(layer 14 det_post)",
                " B requested)",
                "allocated at op_execute (ops.c:",
                "tail canary",
            ] {
                assert!(
                    message.contains(want),
                    "{alloc}: `{want}` not in: {message}"
                );
            }
            assert!(
                !message.contains("unknown site"),
                "{alloc}: the allocation site is traced: {message}"
            );
        } else {
            assert_eq!(
                out.status.code(),
                Some(0),
                "{alloc}: {text}{}",
                stderr(&out)
            );
            assert!(failing.is_empty(), "{alloc}: {failing:?}");
            assert_eq!(integrity["verdict"], "warn", "{alloc}: {message}");
        }
    }
}

/// The firmware's own figures in scripts: `h.firmware_view` and `t.heap_caps_*(caps)` (caps by
/// name or number) against `g_firmware_view`, which the firmware filled from its own API right
/// before the call to model_release, read through DWARF with `t.var`.
#[test]
fn scripts_read_the_firmwares_own_figures() {
    let dir = tempdir("fwview-script");
    let esp = dir.join("esp.rhai");
    std::fs::write(
        &esp,
        r#"
let t = target();
t.run_to("model_release", 2);
let fw = t.var("g_firmware_view");
let h = t.heap();
let v = h.firmware_view;
check("api", v.api == "esp-idf" && h.poisoning == "light", `${v.api} ${h.poisoning}`);
for j in 0..fw.caps_count {
    let c = fw.caps[j];
    check(`free ${c}`, t.heap_caps_free_size(c) == fw.caps_free_size[j], `${t.heap_caps_free_size(c)} ${fw.caps_free_size[j]}`);
    check(`largest ${c}`, h.heap_caps_largest_free_block(c) == fw.caps_largest_free_block[j], "");
    let i = t.heap_caps_info(c);
    check(`info ${c}`, i.total_allocated_bytes == fw.caps_info[j].total_allocated_bytes && i.total_blocks == fw.caps_info[j].total_blocks, "");
}
check("by name", t.heap_caps_free_size("8BIT") == t.heap_caps_free_size(4)
    && t.heap_caps_free_size("MALLOC_CAP_INTERNAL|8BIT") == t.heap_caps_free_size(2048 + 4), "");
check("heaps", v.heaps[0].info.free_blocks == fw.heaps[0].free_blocks, "");
"#,
    )
    .unwrap();
    let freertos = dir.join("freertos.rhai");
    std::fs::write(
        &freertos,
        r#"
let t = target();
t.run_to("model_release", 3);
let fw = t.var("g_firmware_view");
let s = t.heap().firmware_view.heap_stats;
check("captures", fw.captures == 3, `${fw.captures}`);
check("stats", s.xNumberOfFreeBlocks == fw.stats.xNumberOfFreeBlocks
    && s.xSizeOfSmallestFreeBlockInBytes == fw.stats.xSizeOfSmallestFreeBlockInBytes
    && s.xNumberOfSuccessfulAllocations == fw.stats.xNumberOfSuccessfulAllocations, "");
t.heap_caps_free_size("8BIT");
"#,
    )
    .unwrap();
    let esp_elf = elf("tlsfp", "fragmentation");
    let out = run_memlife(&[
        "audit",
        "--elf",
        esp_elf.to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
        esp.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("PASS free 4"), "{text}");
    assert!(!text.contains("FAIL"), "{text}");
    // heap_caps_* are ESP-IDF's: on FreeRTOS the script stops with a clear error.
    let heap5 = elf("heap5", "fragmentation");
    let out = run_memlife(&[
        "audit",
        "--elf",
        heap5.to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
        freertos.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert!(
        text.contains("PASS captures") && text.contains("PASS stats"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        stderr(&out).contains("heap_caps_* are ESP-IDF functions; this heap is freertos-heap5"),
        "{}",
        stderr(&out)
    );
}

/// heap_4 with the heap protector and heap_5's regions (with and without it) give every example
/// the verdict heap_4 gives: the same exit code and the same failing checks.
#[test]
fn option_builds_give_every_example_heap4s_verdict() {
    let dir = tempdir("audit-options");
    for scenario in SCENARIOS {
        let (exit, failing) = expectation(scenario);
        for alloc in ["heap4p", "heap5", "heap5p"] {
            audit_example(&dir, alloc, scenario, exit, &failing);
        }
    }
}

#[test]
fn leak_script_finds_the_cpp_firmwares_leak_per_cycle_by_configuration_only() {
    let leak = memlife_testkit::firmware::elf("cpp", "leak");
    let out = run_memlife(&[
        "audit",
        "--config",
        example("cpp-interpreter").to_str().unwrap(),
        "--elf",
        leak.to_str().unwrap(),
        repo().join("scripts/leak.rhai").to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    // No switch in this firmware: the loss is per cycle (firmware/README.md: 152 B).
    assert!(text.contains("152 B lost per cycle"), "{text}");
    assert!(!text.contains("per switch"), "{text}");
    // The kernel method by its C++ name, past `operator new` (a malloc wrapper).
    assert!(
        text.contains(
            "allocated at tinyml::ops::Conv2D::Eval(tinyml::Context&, tinyml::Node&) (conv.cpp:79)"
        ),
        "{text}"
    );
    let healthy = memlife_testkit::firmware::elf("cpp", "healthy");
    let out = run_memlife(&[
        "audit",
        "--config",
        example("cpp-interpreter").to_str().unwrap(),
        "--elf",
        healthy.to_str().unwrap(),
        repo().join("scripts/leak.rhai").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn every_script_runs_on_the_cpp_firmware_by_configuration_only() {
    let dir = tempdir("cpp-scripts");
    let leak = memlife_testkit::firmware::elf("cpp", "leak");
    let scripts = bundled_scripts();
    assert!(scripts.len() >= 7);
    for script in scripts {
        let junit = dir.join("j.xml");
        let out = run_memlife(&[
            "audit",
            "--config",
            example("cpp-interpreter").to_str().unwrap(),
            "--elf",
            leak.to_str().unwrap(),
            script.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
            // This firmware halts for good when operator new fails: error-paths.rhai finds it
            // parked in its halt loop in about a second per site (this bounds any other wait).
            "--timeout",
            "4",
        ]);
        let name = script.file_name().unwrap().to_string_lossy().to_string();
        let text = stdout(&out);
        let code = out.status.code();
        assert!(
            code == Some(0) || code == Some(1),
            "{name}: {code:?}\n{text}{}",
            stderr(&out)
        );
        let xml = std::fs::read_to_string(&junit).unwrap();
        // No tensor table in this firmware: overlap works from the traced allocations.
        if name == "overlap.rhai" || name == "lifecycle.rhai" {
            assert!(
                text.contains("PASS overlap: ") && text.contains("traced buffers"),
                "{name}: {text}"
            );
            assert!(!xml.contains("<skipped"), "{name}: {xml}");
        }
        if name == "error-paths.rhai" {
            // operator new without exceptions never returns NULL: its new_handler halts, so
            // every site is a hang, named with the site and where the firmware is parked.
            assert_eq!(code, Some(1), "{name}: {text}");
            let fails: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with("FAIL error-path "))
                .collect();
            assert!(!fails.is_empty(), "{name}: {text}");
            for l in &fails {
                assert!(
                    l.contains("after the allocation of ")
                        && l.contains("the firmware hung")
                        && l.contains("parked at")
                        && l.contains("board::Halt"),
                    "{name}: {l}"
                );
            }
        }
        if name == "leak.rhai" || name == "lifecycle.rhai" {
            assert_eq!(code, Some(1), "{name}: {text}");
            assert!(
                text.contains("152 B") && text.contains("per cycle"),
                "{name}: {text}"
            );
        }
    }
}

#[test]
fn init_then_audit_with_no_edits_finds_the_cpp_leak_and_load_peak() {
    let dir = tempdir("init");
    let elf = memlife_testkit::firmware::elf("cpp", "leak-load-peak");
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
    // The guesses, each with where it is and why.
    assert!(toml.contains("newlib-nano"), "{toml}");
    assert!(
        toml.contains("run = \"tinyml::Interpreter::Invoke()\"    # interpreter.cpp:"),
        "{toml}"
    );
    assert!(
        toml.contains("release = \"app::Teardown(app::Session*)\""),
        "{toml}"
    );
    assert!(toml.contains("#   or "), "alternatives as comments: {toml}");
    let out = run_memlife(&[
        "audit",
        "--config",
        cfg.to_str().unwrap(),
        repo().join("scripts/lifecycle.rhai").to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        text.contains("FAIL leak: free after release drops 152 B per cycle"),
        "{text}"
    );
    assert!(
        text.contains(
            "allocated at tinyml::ops::Conv2D::Eval(tinyml::Context&, tinyml::Node&) (conv.cpp:79)"
        ),
        "{text}"
    );
    // The load peak (firmware/README.md: about 68 KiB above the baseline, over the 60% budget).
    assert!(text.contains("FAIL load-peak"), "{text}");
    assert!(text.contains("peaks 698"), "{text}");
    assert!(
        !text.contains("FAIL build-step") && !text.contains("FAIL fragmentation"),
        "{text}"
    );
}

/// A small firmware of nobody here, written and built by the test: an int8 MLP with
/// `mlp_open`/`mlp_prepare`/`mlp_execute`/`mlp_close`, four executions per cycle, no switch, a
/// per-layer function whose first argument is the layer index, newlib-nano, and a 128-byte
/// activation buffer never freed.
const MLP_C: &str = r#"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "mem.h"
void fw_halted(void) { for (;;) {} }
void fw_fail(const char *why, uint32_t code) { (void)why; (void)code; for (;;) {} }
typedef struct { int8_t *w[3]; int8_t *act; } mlp_t;
static volatile int sink;
__attribute__((noinline)) void layer_forward(int idx, mlp_t *m) {
    int8_t *tmp = malloc(64 + 32 * idx);
    memset(tmp, idx, 64);
    sink += tmp[3] + m->w[idx][0];
    free(tmp);
}
__attribute__((noinline)) mlp_t *mlp_open(void) {
    mlp_t *m = malloc(sizeof *m);
    memset(m, 0, sizeof *m);
    return m;
}
__attribute__((noinline)) void mlp_prepare(mlp_t *m) {
    for (int i = 0; i < 3; i++) { m->w[i] = malloc(256); memset(m->w[i], i, 256); }
    m->act = malloc(128);
}
__attribute__((noinline)) void mlp_execute(mlp_t *m) { for (int i = 0; i < 3; i++) layer_forward(i, m); }
__attribute__((noinline)) void mlp_close(mlp_t *m) {
    for (int i = 0; i < 3; i++) free(m->w[i]);
    free(m); /* m->act is never freed */
}
int main(void) {
    for (;;) {
        mlp_t *m = mlp_open();
        mlp_prepare(m);
        for (int k = 0; k < 4; k++) mlp_execute(m);
        mlp_close(m);
    }
}
"#;

#[test]
fn every_script_runs_on_a_third_firmware_with_names_of_its_own() {
    let dir = tempdir("mlp");
    let elf = build_test_firmware(&dir, "mlp", MLP_C, false);
    let cfg = write_test_config(
        &dir,
        &elf,
        "[phases]\nload = \"mlp_open\"\nbuild = \"mlp_prepare\"\nrun = \"mlp_execute\"\nrelease = \"mlp_close\"\n[spans]\nrun = \"layer_forward\"\n[budgets]\ncycles = 3\nmore_cycles = 5\n",
    );
    let scripts = bundled_scripts();
    for script in scripts {
        let name = script.file_name().unwrap().to_string_lossy().to_string();
        let out = run_memlife(&[
            "audit",
            "--config",
            cfg.to_str().unwrap(),
            script.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ]);
        let text = stdout(&out);
        let code = out.status.code();
        assert!(
            code == Some(0) || code == Some(1),
            "{name}: {code:?}\n{text}{}",
            stderr(&out)
        );
        if name == "leak.rhai" || name == "lifecycle.rhai" {
            assert_eq!(code, Some(1), "{name}: {text}");
            // 128 B asked, a 136-byte newlib chunk (its size word, 8-byte aligned).
            assert!(
                text.contains("136 B") && text.contains("per cycle"),
                "{name}: {text}"
            );
            assert!(
                text.contains("allocated at mlp_prepare (mlp.c:"),
                "{name}: {text}"
            );
        }
    }
}
