//! Late frees are not leaks, end to end: the `deferred-release` firmware keeps a 64-byte summary
//! from one cycle to the next; `lifecycle.rhai` passes its leak check and names the block as
//! deferred, in the message, the JSON report and the HTML report, while `leak-on-switch` still
//! fails with its leak and has no deferred block.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use common::*;

/// Audits `alloc`'s `scenario` build with lifecycle.rhai and the healthy example's settings;
/// gives the exit code, stdout and the JSON report.
fn audit(dir: &std::path::Path, alloc: &str, scenario: &str) -> (i32, String, serde_json::Value) {
    let json = dir.join(format!("{alloc}-{scenario}.json"));
    let out = run_memlife(&[
        "audit",
        "--config",
        repo()
            .join("examples/healthy/memlife.toml")
            .to_str()
            .unwrap(),
        "--elf",
        elf(alloc, scenario).to_str().unwrap(),
        repo().join("scripts/lifecycle.rhai").to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--report",
        dir.join(format!("{alloc}-{scenario}-report"))
            .to_str()
            .unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    let report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap())
        .unwrap_or_else(|e| panic!("{alloc}-{scenario}: {e}\n{text}\n{}", stderr(&out)));
    (out.status.code().unwrap_or(-1), text, report)
}

/// The `leak` line of the summary.
fn leak_line(text: &str) -> &str {
    text.lines().find(|l| l.contains("leak")).unwrap_or("")
}

#[test]
fn a_block_freed_one_cycle_later_is_deferred_not_leaked() {
    let dir = tempdir("deferred");
    // The summary's block: 64 B asked, 72 in heap4's and nano's accounting, 68 in tlsf's.
    for (alloc, size) in [("heap4", 72), ("nano", 72), ("tlsf", 68)] {
        let (code, text, report) = audit(&dir, alloc, "deferred-release");
        let name = format!("{alloc}-deferred-release");
        assert_eq!(code, 0, "{name}: {text}");
        let line = leak_line(&text);
        assert!(
            line.contains("not leaks: 2 deferred block(s)")
                && line.contains(&format!(
                    "{size} B allocated at release_summary_keep (loader.c:"
                ))
                && line.contains("in model_release and freed 1 cycle(s) later in model_load"),
            "{name}: {text}"
        );
        // Three traced cycles: the summaries of cycles 1 and 2 are freed in cycles 2 and 3.
        let deferred = report["deferred"].as_array().unwrap();
        assert_eq!(deferred.len(), 2, "{name}: {deferred:?}");
        for (i, d) in deferred.iter().enumerate() {
            assert_eq!(d["size"], size, "{name}");
            assert_eq!(d["request"], 64, "{name}");
            assert_eq!(d["allocated_cycle"], i + 1, "{name}");
            assert_eq!(d["freed_cycle"], i + 2, "{name}");
            assert_eq!(d["cycles"], 1, "{name}");
            assert_eq!(d["site"]["function"], "release_summary_keep", "{name}");
        }
        // The last cycle's summary, still live at the end, is deferred in the map, not leaked.
        let map = &report["heap_map"];
        assert_eq!(map["leaked_blocks"], 0, "{name}: {map}");
        let marked: Vec<_> = map["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["deferred"] == true)
            .collect();
        assert_eq!(marked.len(), 1, "{name}: {map}");
        assert_eq!(marked[0]["size"], size, "{name}");
        let html =
            std::fs::read_to_string(dir.join(format!("{name}-report")).join("index.html")).unwrap();
        assert_eq!(html.matches("<tr class=\"deferred\">").count(), 2, "{name}");
    }
}

#[test]
fn a_leak_stays_a_leak_and_is_not_deferred() {
    let dir = tempdir("deferred-leak");
    for alloc in ["heap4", "nano", "tlsf"] {
        let (code, text, report) = audit(&dir, alloc, "leak-on-switch");
        let name = format!("{alloc}-leak-on-switch");
        assert_eq!(code, 1, "{name}: {text}");
        let line = leak_line(&text);
        assert!(
            line.contains("allocated at build_graph (engine.c:51)") && !line.contains("deferred"),
            "{name}: {text}"
        );
        assert!(
            report.get("deferred").is_none(),
            "{name}: {}",
            report["deferred"]
        );
        assert!(
            report["heap_map"]["leaked_blocks"].as_u64().unwrap() > 0,
            "{name}"
        );
    }
}
