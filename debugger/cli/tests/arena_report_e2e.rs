//! TFLM's arenas in the outputs of `memlife audit` (issue 28 item 7), on the TFLM firmware in
//! QEMU: the HTML report's section per model (figures equal to the JSON's, the arena map, the
//! tail per operator, the tensor lifetimes, the activation curve), the Perfetto trace's arena
//! thread, shared-tensor's overlapping tensors marked red and named, and the page opened in
//! headless Chromium without console errors.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use std::path::PathBuf;

use common::browser::{check_console_capture, require_chromium, screenshot};
use common::*;
use serde_json::Value;

struct Audit {
    dir: PathBuf,
    json: Value,
    html: String,
    trace: Value,
}

/// `memlife audit scripts/arena.rhai` on `tflm-SCENARIO.elf` with `--json`, `--report` and
/// `--trace`.
fn audit(scenario: &str) -> Audit {
    let dir = tempdir(&format!("arena-report-{scenario}"));
    let elf = elf("tflm", scenario);
    let script = repo().join("scripts/arena.rhai");
    let out = run_memlife(&[
        "audit",
        "--elf",
        elf.to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
        "--json",
        dir.join("audit.json").to_str().unwrap(),
        "--report",
        dir.join("report").to_str().unwrap(),
        "--trace",
        dir.join("run.trace.json").to_str().unwrap(),
        script.to_str().unwrap(),
    ]);
    let code = out.status.code();
    assert!(
        code == Some(0) || code == Some(1),
        "{scenario}: exit {code:?}\n{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    Audit {
        json: serde_json::from_slice(&read("audit.json")).unwrap(),
        html: String::from_utf8(read("report/index.html")).unwrap(),
        trace: serde_json::from_slice(&read("run.trace.json")).unwrap(),
        dir,
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page's section of `model`.
fn section<'a>(html: &'a str, model: &str) -> &'a str {
    let start = html
        .find(&format!("class=\"arena\" data-model=\"{}\"", escape(model)))
        .unwrap_or_else(|| panic!("no arena section for {model}"));
    let rest = &html[start..];
    &rest[..rest.find("</section>").unwrap()]
}

/// The build a model's figures come from.
fn build_of<'a>(json: &'a Value, m: &Value) -> &'a Value {
    json["arenas"]["builds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["index"] == m["build"])
        .unwrap()
}

fn figure(section: &str, key: &str) -> String {
    let tag = format!("data-figure=\"{key}\">");
    let at = section
        .find(&tag)
        .unwrap_or_else(|| panic!("no figure {key}"));
    let rest = &section[at + tag.len()..];
    rest[..rest.find('<').unwrap()].to_string()
}

#[test]
fn healthy_report_has_a_section_per_model_with_the_jsons_figures_and_the_trace_an_arena_track() {
    let a = audit("healthy");
    let models = a.json["arenas"]["models"].as_array().unwrap();
    let names: Vec<&str> = models
        .iter()
        .map(|m| m["model"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "g_hello_world_tflite",
            "g_micro_speech_tflite",
            "g_magic_wand_tflite"
        ]
    );
    for m in models {
        let name = m["model"].as_str().unwrap();
        let s = section(&a.html, name);
        for key in [
            "arena_bytes",
            "persistent_bytes",
            "head_bytes",
            "temp_peak",
            "needs",
            "spare",
        ] {
            assert_eq!(figure(s, key), m[key].to_string(), "{name} {key}");
        }
        for class in [
            "arena-map",
            "arena-stairs",
            "arena-lifetimes",
            "arena-activation",
        ] {
            assert!(
                s.contains(&format!("class=\"{class}\"")),
                "{name}: no {class}"
            );
        }
        let b = build_of(&a.json, m);
        let plan = &b["plan"];
        assert!(plan.is_object(), "{name}: no plan in the JSON");
        assert_eq!(plan["head_bytes"], m["head_bytes"], "{name}");
        assert_eq!(plan["overlaps_total"], 0, "{name}");
        assert_eq!(
            figure(s, "planned_bytes"),
            plan["planned_bytes"].to_string()
        );
        assert_eq!(
            figure(s, "peak_live_bytes"),
            plan["peak_live_bytes"].to_string()
        );
        assert_eq!(
            plan["operators"].as_array().unwrap().len(),
            m["operators"].as_array().unwrap().len(),
            "{name}"
        );
        // Every planned tensor is a bar of the lifetime chart, none red.
        let planned = plan["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["kind"] == "planned" && t["first_op"].is_u64())
            .count();
        assert!(planned > 0, "{name}");
        assert_eq!(s.matches(" data-tensor=\"").count(), planned, "{name}");
        assert!(!s.contains("class=\"overlap\""), "{name}");
        // Each operator's step total is in the table, as in the JSON.
        for o in b["operators"].as_array().unwrap() {
            let cell = format!("data-step=\"{}\">{}<", o["node"], o["bytes"]);
            assert!(s.contains(&cell), "{name}: {cell}");
        }
    }

    // The trace: the arena thread, one slice per listed step, and the persistent counter
    // ending at each build's persistent bytes.
    let ev = a.trace["traceEvents"].as_array().unwrap();
    let tid = ev
        .iter()
        .find(|e| e["ph"] == "M" && e["args"]["name"] == "tflm arena")
        .map(|e| e["tid"].clone())
        .expect("no tflm arena thread");
    for b in a.json["arenas"]["builds"].as_array().unwrap() {
        let index = &b["index"];
        let steps = b["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["failed"] != true)
            .count();
        let slices = ev
            .iter()
            .filter(|e| e["ph"] == "X" && e["tid"] == tid && e["args"]["build"] == *index)
            .count();
        assert_eq!(slices, steps, "build {index}");
        let counter = format!(
            "arena persistent (B): build {index} {}",
            b["model"].as_str().unwrap()
        );
        let last = ev
            .iter()
            .rfind(|e| e["ph"] == "C" && e["name"] == counter.as_str())
            .unwrap_or_else(|| panic!("no counter {counter}"));
        // A build still going when the run ended has no persistent figure yet.
        if b["steps_unlisted"] == 0 && b["status"] != "building" {
            assert_eq!(
                last["args"]["persistent"], b["persistent_bytes"],
                "{counter}"
            );
        }
    }

    // And the page opens in headless Chromium without console errors.
    let Some(browser) = require_chromium() else {
        return;
    };
    let dir = tempdir("arena-report-chromium");
    let profile = dir.join("profile");
    check_console_capture(&browser, &dir, &profile);
    let page = a.dir.join("report/index.html").canonicalize().unwrap();
    let console = screenshot(
        &browser,
        &page,
        &dir.join("report.png"),
        &profile,
        "1040,6000",
    );
    assert!(console.is_empty(), "console messages: {console:?}");
}

#[test]
fn shared_tensor_marks_the_two_overlapping_tensors_red_and_names_them() {
    let a = audit("shared-tensor");
    let m = a.json["arenas"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == "g_hello_world_tflite")
        .unwrap();
    let plan = &build_of(&a.json, m)["plan"];
    assert_eq!(plan["overlaps_total"], 1, "{plan}");
    let o = &plan["overlaps"][0];
    // firmware/README.md: t4 (dense_2) and t7 (dense_3) share 16 bytes at node 2.
    let mut pair = [
        o["a"]["index"].as_u64().unwrap(),
        o["b"]["index"].as_u64().unwrap(),
    ];
    pair.sort_unstable();
    assert_eq!(pair, [4, 7], "{o}");
    assert_eq!(
        o["end"].as_u64().unwrap() - o["start"].as_u64().unwrap(),
        16
    );
    let s = section(&a.html, "g_hello_world_tflite");
    assert!(
        s.contains("class=\"overlap\" data-tensor=\"4\""),
        "t4 not red"
    );
    assert!(
        s.contains("class=\"overlap\" data-tensor=\"7\""),
        "t7 not red"
    );
    assert_eq!(s.matches("class=\"overlap\" data-tensor=").count(), 2);
    for side in ["a", "b"] {
        let name = escape(o[side]["name"].as_str().unwrap());
        assert!(s.contains(&format!("<b>{name}</b>")), "{name} not listed");
    }
    // The other models are clean.
    let other = section(&a.html, "g_micro_speech_tflite");
    assert!(!other.contains("class=\"overlap\""));
}
