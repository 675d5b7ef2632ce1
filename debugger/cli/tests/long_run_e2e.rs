//! Long runs fold their middle cycles and lose no figure, end to end: the same 8 traced
//! lifecycles audited with `--keep-cycles 2` and with `--keep-cycles all` give the same verdict,
//! the same whole-run totals, the same late frees and the same heap map; the folded run keeps
//! cycles 1, 2, 7 and 8 in full, and its folded totals are exactly what the other run recorded
//! for cycles 3 to 6.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use common::*;
use serde_json::Value;

const CYCLES: u64 = 8;

/// leak.rhai over `CYCLES` traced cycles of the heap4 build of `scenario`, with the healthy
/// example's settings, keeping `keep` cycles; gives the exit code, stdout, the JSON report and
/// the HTML page.
fn audit(dir: &std::path::Path, scenario: &str, keep: &str) -> (i32, String, Value, String) {
    let name = format!("{scenario}-keep-{keep}");
    let json = dir.join(format!("{name}.json"));
    let report = dir.join(format!("{name}-report"));
    let out = run_memlife(&[
        "audit",
        "--config",
        repo()
            .join("examples/healthy/memlife.toml")
            .to_str()
            .unwrap(),
        "--elf",
        elf("heap4", scenario).to_str().unwrap(),
        repo().join("scripts/leak.rhai").to_str().unwrap(),
        "--budget",
        &format!("cycles={CYCLES}"),
        "--budget",
        "more_cycles=0",
        "--keep-cycles",
        keep,
        "--json",
        json.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap())
        .unwrap_or_else(|e| panic!("{name}: {e}\n{text}\n{}", stderr(&out)));
    let html = std::fs::read_to_string(report.join("index.html")).unwrap();
    (out.status.code().unwrap_or(-1), text, value, html)
}

fn leak_line(text: &str) -> String {
    text.lines()
        .find(|l| l.contains(" leak:"))
        .unwrap_or("")
        .to_string()
}

/// The two runs of `example` agree on everything folding must keep.
fn folded_run_keeps_the_figures(example: &str) -> (Value, Value) {
    let dir = tempdir(&format!("long-run-{example}"));
    let (code_all, text_all, all, _) = audit(&dir, example, "all");
    let (code, text, folded, html) = audit(&dir, example, "2");
    assert_eq!(code, code_all, "{example}: {text}\n---\n{text_all}");
    assert_eq!(leak_line(&text), leak_line(&text_all), "{example}");
    assert!(
        all.get("folded").is_none(),
        "{example}: nothing folds with all"
    );
    for key in ["totals", "cycles", "deferred", "heap_map", "checks"] {
        assert_eq!(folded[key], all[key], "{example}: {key}");
    }
    assert_eq!(folded["cycles"], CYCLES, "{example}");

    // Cycles 1, 2, 7 and 8 kept in full; 3 to 6 folded.
    let f = &folded["folded"];
    assert_eq!(
        (f["first_cycle"].as_u64(), f["last_cycle"].as_u64()),
        (Some(3), Some(6))
    );
    let kept: Vec<u64> = folded["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["cycle"].as_u64())
        .collect();
    assert!(
        kept.iter().all(|c| [1, 2, 7, 8].contains(c)) && kept.contains(&1) && kept.contains(&8),
        "{example}: kept cycles {kept:?}"
    );
    let all_phases = all["phases"].as_array().unwrap();
    let kept_phases: Vec<&Value> = all_phases
        .iter()
        .filter(|p| {
            p["cycle"]
                .as_u64()
                .is_none_or(|c| ![3, 4, 5, 6].contains(&c))
        })
        .collect();
    assert_eq!(
        folded["phases"]
            .as_array()
            .unwrap()
            .iter()
            .collect::<Vec<_>>(),
        kept_phases,
        "{example}: the kept phases are the unfolded run's"
    );

    // The folded totals are the unfolded run's events and phases of cycles 3 to 6.
    let (begin, end) = (
        f["seq_begin"].as_u64().unwrap(),
        f["seq_end"].as_u64().unwrap(),
    );
    let inside: Vec<&Value> = all["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| (begin..end).contains(&e["seq"].as_u64().unwrap()))
        .collect();
    let count = |kind: &str| inside.iter().filter(|e| e["kind"] == kind).count() as u64;
    let bytes = |kind: &str| -> u64 {
        inside
            .iter()
            .filter(|e| e["kind"] == kind)
            .map(|e| e["size"].as_u64().unwrap())
            .sum()
    };
    let t = &f["totals"];
    assert_eq!(t["events"].as_u64(), Some(inside.len() as u64), "{example}");
    assert!(!inside.is_empty(), "{example}: cycles 3 to 6 traced events");
    assert_eq!(t["allocs"].as_u64(), Some(count("alloc")), "{example}");
    assert_eq!(t["frees"].as_u64(), Some(count("free")), "{example}");
    assert_eq!(t["alloc_bytes"].as_u64(), Some(bytes("alloc")), "{example}");
    assert_eq!(t["free_bytes"].as_u64(), Some(bytes("free")), "{example}");
    let folded_phases = all_phases
        .iter()
        .filter(|p| p["cycle"].as_u64().is_some_and(|c| (3..=6).contains(&c)))
        .count() as u64;
    assert_eq!(t["phases"].as_u64(), Some(folded_phases), "{example}");
    // And the kept events are the unfolded run's outside the fold.
    let outside: Vec<&Value> = all["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !(begin..end).contains(&e["seq"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        folded["events"]
            .as_array()
            .unwrap()
            .iter()
            .collect::<Vec<_>>(),
        outside,
        "{example}"
    );

    // The series: one bucket per folded cycle, with the free bytes at its end.
    let series = f["series"].as_array().unwrap();
    assert_eq!(series.len(), 4, "{example}: {series:?}");
    assert!(
        html.contains("Folded cycles 3&ndash;6") && html.contains("[cycles 3&ndash;6 folded:"),
        "{example}: the page names the folded cycles"
    );
    (all, folded)
}

#[test]
fn a_leak_found_over_folded_cycles_is_the_same_leak() {
    let (all, folded) = folded_run_keeps_the_figures("leak-on-switch");
    // 368 B lost per switch, seen in the folded series too: free at each folded cycle's end
    // falls by the same step.
    let series = folded["folded"]["series"].as_array().unwrap();
    let ends: Vec<i64> = series
        .iter()
        .map(|b| b["end_free_min"].as_i64().unwrap())
        .collect();
    for w in ends.windows(2) {
        assert_eq!(w[0] - w[1], 368, "{ends:?}");
    }
    assert_eq!(folded["exit_code"], 1);
    assert_eq!(all["exit_code"], 1);
}

#[test]
fn late_frees_across_folded_cycles_are_all_found() {
    let (_, folded) = folded_run_keeps_the_figures("deferred-release");
    // Every cycle's summary is freed in the next one: 7 late frees over 8 cycles, 4 of them
    // allocated in folded cycles.
    let deferred = folded["deferred"].as_array().unwrap();
    assert_eq!(deferred.len(), CYCLES as usize - 1, "{deferred:?}");
    for (i, d) in deferred.iter().enumerate() {
        assert_eq!(d["allocated_cycle"].as_u64(), Some(i as u64 + 1));
        assert_eq!(d["freed_cycle"].as_u64(), Some(i as u64 + 2));
    }
}

/// A soak run on the leaking firmware outlives its heap: after about a hundred switches the
/// firmware fails and halts. leak.rhai still judges the cycles it saw, then the audit ends in
/// the error (exit 2), which says where the firmware stopped.
#[test]
fn a_leak_that_runs_the_heap_out_is_reported_with_where_the_firmware_stopped() {
    let dir = tempdir("long-run-exhausted");
    let json = dir.join("audit.json");
    let out = run_memlife(&[
        "audit",
        "--config",
        repo()
            .join("examples/leak-on-switch/memlife.toml")
            .to_str()
            .unwrap(),
        repo().join("scripts/leak.rhai").to_str().unwrap(),
        "--budget",
        "cycles=1000",
        "--budget",
        "more_cycles=0",
        // Long enough that a loaded machine does not end the run before the heap runs out
        // (the firmware is still allocating, not parked); the last wait costs this once.
        "--timeout",
        "6",
        "--json",
        json.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let (text, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{text}\n{err}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let check = &report["checks"][0];
    let message = check["message"].as_str().unwrap();
    assert_eq!(check["verdict"], "fail", "{message}");
    assert!(
        message.contains("368 B lost per switch") && message.contains("the firmware stopped after"),
        "{message}"
    );
    let error = report["error"]["message"].as_str().unwrap();
    assert!(
        error.contains("not reached within 6.0 s; the target was halted at pc 0x")
            && error.contains("fw_fail"),
        "{error}"
    );
    // The run was long enough to fold: its totals are the whole run's.
    assert!(report["folded"].is_object(), "{report}");
    assert!(report["totals"]["events"].as_u64().unwrap() > 10_000);
}
