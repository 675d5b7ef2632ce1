//! `memlife audit --report DIR --trace FILE` end to end: the healthy and the faulty scenarios
//! audited once each in QEMU (shared by the tests below), the page checked against the JSON of
//! the same run, the trace against what the trace viewers need, and the page opened in
//! headless Chromium.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::browser::*;
use common::*;
use serde_json::Value;

/// One audited scenario: its directory, the JSON report and the page.
struct Run {
    dir: PathBuf,
    json: Value,
    html: String,
}

const RUNS: &[&str] = &["healthy", "leak-on-switch", "reorder", "branch-peak"];

fn runs() -> &'static Vec<(&'static str, Run)> {
    static RUNS_DONE: OnceLock<Vec<(&'static str, Run)>> = OnceLock::new();
    RUNS_DONE.get_or_init(|| {
        let base = tempdir("report");
        RUNS.iter()
            .map(|ex| {
                let dir = base.join(ex);
                let cfg = repo().join("examples").join(ex).join("memlife.toml");
                let script = repo().join("scripts/lifecycle.rhai");
                let out = run_memlife(&[
                    "audit",
                    "--config",
                    cfg.to_str().unwrap(),
                    script.to_str().unwrap(),
                    "--json",
                    dir.join("audit.json").to_str().unwrap(),
                    "--report",
                    dir.join("report").to_str().unwrap(),
                    "--trace",
                    dir.join("run.trace.json").to_str().unwrap(),
                    "--out",
                    dir.join("out").to_str().unwrap(),
                ]);
                let code = out.status.code();
                assert!(
                    code == Some(0) || code == Some(1),
                    "{ex}: exit {code:?}\n{}\n{}",
                    stdout(&out),
                    stderr(&out)
                );
                assert!(
                    stderr(&out).contains("report written to"),
                    "{}",
                    stderr(&out)
                );
                let json: Value =
                    serde_json::from_slice(&std::fs::read(dir.join("audit.json")).unwrap())
                        .unwrap();
                let html = std::fs::read_to_string(dir.join("report/index.html")).unwrap();
                (*ex, Run { dir, json, html })
            })
            .collect()
    })
}

fn run(name: &str) -> &'static Run {
    &runs().iter().find(|(n, _)| *n == name).unwrap().1
}

fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The peak label the page must show, worked out from the JSON alone.
fn expected_peak_label(json: &Value) -> String {
    let phases = json["phases"].as_array().unwrap();
    let mut best = &phases[0];
    for p in phases {
        if p["peak_used"].as_u64() > best["peak_used"].as_u64() {
            best = p;
        }
    }
    let at = &best["peak_at"];
    let what = match (at["span"].as_str(), at["span_arg1"].as_u64()) {
        (Some(span), Some(arg)) => {
            let function = span.split('#').next().unwrap();
            json["labels"][function][arg as usize]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("{function}({arg})"))
        }
        _ => at["site"]["function"].as_str().unwrap().to_string(),
    };
    format!(
        "peak {} in {} / {} (+{} above entry)",
        kib(best["peak_used"].as_u64().unwrap()),
        best["function"].as_str().unwrap(),
        what,
        kib(best["peak_above_before"].as_u64().unwrap())
    )
}

#[test]
fn the_page_shows_the_phases_the_peak_and_the_numbers_of_the_json() {
    for (name, r) in runs() {
        let h = &r.html;
        for id in [
            "checks",
            "water-level",
            "build-stairs",
            "layers",
            "heap-map",
            "leak-trend",
            "run",
        ] {
            assert!(
                h.contains(&format!("<section id=\"{id}\">")),
                "{name}: no section {id}"
            );
        }
        // Self-contained: nothing is fetched, nothing runs.
        for bad in ["<script", "<link", "@import", "url(", "src=", "https://"] {
            assert!(!h.contains(bad), "{name}: the page contains `{bad}`");
        }
        // Phases: every role in the legend, every phase call as a row with its figures.
        for role in ["load", "build", "run", "switch", "release"] {
            assert!(
                h.contains(&format!("></span>{role}")),
                "{name}: no {role} in the legend"
            );
        }
        for p in r.json["phases"].as_array().unwrap() {
            let row = format!(
                "<td>{}#{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:+}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
                p["function"].as_str().unwrap(),
                p["call"],
                p["alias"].as_str().unwrap(),
                p["before"]["used"],
                p["after"]["used"],
                p["delta_used"].as_i64().unwrap(),
                p["peak_used"],
                p["peak_above_before"],
            );
            assert!(h.contains(&row), "{name}: no phase row {row}");
        }
        // The peak, in the chart and in the text.
        let label = escape(&expected_peak_label(&r.json));
        assert!(
            h.matches(&label).count() >= 2,
            "{name}: `{label}` not in the chart and the text"
        );
        // Checks with their verdicts and messages.
        for c in r.json["checks"].as_array().unwrap() {
            let word = c["verdict"].as_str().unwrap().to_uppercase();
            let row = format!(
                "<tr><td>{}</td><td><span class=\"verdict {}\">{word}</span>",
                c["name"].as_str().unwrap(),
                c["verdict"].as_str().unwrap()
            );
            assert!(h.contains(&row), "{name}: no check row {row}");
            assert!(
                h.contains(&escape(c["message"].as_str().unwrap())),
                "{name}: message of {}",
                c["name"]
            );
        }
        // Free after each release, as the JSON has it.
        let frees: Vec<String> = r.json["phases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["function"] == "model_release")
            .map(|p| p["after"]["free"].to_string())
            .collect();
        assert_eq!(frees.len(), 3, "{name}");
        let list = format!("<span class=\"frees\">{}</span>", frees.join(" &rarr; "));
        assert!(h.contains(&list), "{name}: no {list}");
        // The heap map's figures.
        let map = &r.json["heap_map"];
        let ratio = format!(
            "<b class=\"ratio\">{:.3}</b> ({} of {} B",
            map["summary"]["largest_free_ratio"].as_f64().unwrap(),
            map["summary"]["largest_free"],
            map["summary"]["free"]
        );
        assert!(h.contains(&ratio), "{name}: no {ratio}");
        // (The peak composition section draws the heap at a peak as blocks too.)
        let map_section = &h[h.find("<section id=\"heap-map\">").unwrap()..];
        assert_eq!(
            map_section.matches("<rect class=\"block").count(),
            map["blocks"].as_array().unwrap().len(),
            "{name}: one rectangle per block"
        );
        // The facts.
        let run = &r.json["run"];
        for key in ["elf", "allocator", "memlife", "date", "board"] {
            let v = run[key].as_str().unwrap();
            assert!(
                h.contains(&format!("<dd>{}</dd>", escape(v))),
                "{name}: fact {key} = {v}"
            );
        }
    }
}

#[test]
fn healthy_and_faulty_reports_differ_where_the_fault_is() {
    let healthy = run("healthy");
    assert_eq!(healthy.json["heap_map"]["leaked_blocks"], 0);
    assert!(healthy.html.contains("No block is left behind"));
    assert!(healthy.html.contains("flat over 3 releases: no leak"));
    assert!(
        healthy
            .html
            .contains("buffer reuse effective: no layer keeps memory")
    );

    // leak-on-switch: the leaked blocks, highlighted, with their site on hover and in the table.
    let leak = run("leak-on-switch");
    let map = &leak.json["heap_map"];
    assert!(map["leaked_blocks"].as_u64().unwrap() >= 2, "{map}");
    let leaked: Vec<&Value> = map["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["leaked"] == true)
        .collect();
    for b in &leaked {
        assert_eq!(b["size"], 368);
        assert_eq!(b["site"]["function"], "build_graph");
        assert_eq!(b["site"]["line"], 51);
        let addr = format!("{:#010x}", b["addr"].as_u64().unwrap());
        assert!(
            leak.html.contains(&format!(
                "<title>{addr}  368 B  LEAKED\nallocated at build_graph (engine.c:51)"
            )),
            "no hover title for {addr}"
        );
        assert!(leak.html.contains(&format!(
            "<tr class=\"leak\"><td>{addr}</td><td class=\"num\">368</td><td class=\"site\">build_graph (engine.c:51)</td>"
        )));
    }
    assert!(
        leak.html
            .contains("-736 B over 3 releases (-368 B per lifecycle on average)")
    );
    assert!(leak.html.contains("<b>+736 B lost</b>"));

    // reorder: conv_b's step stands out and is named with its size.
    let reorder = run("reorder");
    assert!(reorder.html.contains("largest step: conv_b +9.3 KiB"));
    assert!(
        reorder
            .html
            .contains("<b class=\"largest-step\">conv_b</b> +9.3 KiB (9488 B)")
    );
    assert!(!healthy.html.contains("largest step: conv_b"));

    // branch-peak: the inference peak at the head.
    let bp = run("branch-peak");
    assert!(
        bp.html
            .contains("in inference_run / head_p5 (+10.5 KiB above entry)"),
        "branch-peak peak label"
    );
    assert!(bp.html.contains("no reuse across"));
}

#[test]
fn the_trace_has_what_trace_viewers_need() {
    for (name, r) in runs() {
        let trace: Value =
            serde_json::from_slice(&std::fs::read(r.dir.join("run.trace.json")).unwrap()).unwrap();
        assert_eq!(trace["displayTimeUnit"], "ms");
        let events = trace["traceEvents"].as_array().unwrap();
        let of = |ph: &str| events.iter().filter(|e| e["ph"] == ph).collect::<Vec<_>>();
        for e in events {
            assert!(e["name"].is_string(), "{name}: {e}");
            assert!(e["pid"].is_u64() && e["tid"].is_u64(), "{name}: {e}");
            if e["ph"] != "M" {
                assert!(e["ts"].is_u64(), "{name}: {e}");
            }
        }
        let slices = of("X");
        assert!(slices.iter().all(|e| e["dur"].is_u64()));
        let phases: Vec<_> = slices.iter().filter(|e| e["cat"] == "phase").collect();
        assert_eq!(
            phases.len(),
            r.json["phases"].as_array().unwrap().len(),
            "{name}"
        );
        for (p, j) in phases.iter().zip(r.json["phases"].as_array().unwrap()) {
            assert!(
                p["name"]
                    .as_str()
                    .unwrap()
                    .starts_with(j["function"].as_str().unwrap())
            );
            assert_eq!(p["args"]["peak_used"], j["peak_used"]);
        }
        let spans: usize = r.json["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["spans"].as_array().unwrap().len())
            .sum();
        assert_eq!(
            slices.iter().filter(|e| e["cat"] == "span").count(),
            spans,
            "{name}"
        );
        // Slices on one thread nest or follow each other: the viewers draw them as stacks.
        let instants = of("i");
        assert_eq!(
            instants.len(),
            r.json["events"].as_array().unwrap().len(),
            "{name}"
        );
        for (i, j) in instants.iter().zip(r.json["events"].as_array().unwrap()) {
            assert_eq!(i["args"]["size"], j["size"]);
            assert_eq!(i["args"]["seq"], j["seq"]);
            assert_eq!(i["s"], "t");
            assert!(i["args"]["site"].is_string() && i["args"]["addr"].is_string());
        }
        let counters = of("C");
        assert!(counters.iter().any(|c| c["args"]["used"].is_u64()));
        assert!(counters.iter().any(|c| c["args"]["free"].is_u64()));
        let peak = r.json["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["peak_used"].as_u64().unwrap())
            .max()
            .unwrap();
        let counter_peak = counters
            .iter()
            .filter_map(|c| c["args"]["used"].as_u64())
            .max()
            .unwrap();
        assert_eq!(
            counter_peak, peak,
            "{name}: the used track reaches the peak"
        );
        let mut ts: Vec<u64> = counters.iter().map(|c| c["ts"].as_u64().unwrap()).collect();
        let sorted = ts.windows(2).all(|w| w[0] <= w[1]);
        ts.dedup();
        assert!(sorted, "{name}: counter timestamps go forward");
        let names: Vec<&str> = of("M")
            .iter()
            .filter(|m| m["name"] == "thread_name")
            .map(|m| m["args"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["phases", "spans", "allocator"]);
    }
}

#[test]
fn the_report_opens_in_headless_chromium_without_console_errors() {
    let Some(browser) = require_chromium() else {
        return;
    };
    let r = run("leak-on-switch");
    let dir = tempdir("chromium");
    let profile = dir.join("profile");
    check_console_capture(&browser, &dir, &profile);

    let page = r.dir.join("report/index.html").canonicalize().unwrap();
    let png = dir.join("report.png");
    let console = screenshot(&browser, &page, &png, &profile, "1040,4000");
    assert!(console.is_empty(), "console messages: {console:?}");
    let (total, ink, colours) = pixels(&png);
    // The charts: bands, curve, bars, heap strip and text cover well over a tenth of the page
    // in many colours; a blank or unstyled page does not.
    assert!(
        ink * 10 > total,
        "only {ink} of {total} pixels are not white"
    );
    assert!(colours >= 40, "only {colours} colours");
    // And the red of the leak (heap map, trend) is on screen.
    let red = count_pixels(&png, |r, g, b| r > 180 && g < 70 && b < 70);
    assert!(red > 200, "only {red} red pixels: the leak is not drawn");
}

/// `memlife heap --svg`: the map of one walk, one rectangle per block of the JSON, to scale.
#[test]
fn heap_svg_draws_every_block_to_scale() {
    let dir = tempdir("heap-svg");
    let svg_path = dir.join("map.svg");
    let elf = elf("nano", "fragmentation");
    let out = run_memlife(&[
        "heap",
        "--elf",
        elf.to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
        "--at",
        "model_load",
        "--hit",
        "2",
        "--json",
        "--svg",
        svg_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.ends_with("</svg>"));
    let blocks = json["blocks"].as_array().unwrap();
    assert!(blocks.len() > 3, "fragmentation leaves several blocks");
    let rects: Vec<&str> = svg.split("<rect class=\"block").skip(1).collect();
    assert_eq!(rects.len(), blocks.len());
    let attr = |r: &str, name: &str| -> f64 {
        r.split(&format!(" {name}=\""))
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let heap_size = json["heap_size"].as_f64().unwrap();
    let heap_start = json["heap_start"].as_f64().unwrap();
    let strip = 940.0;
    for (r, b) in rects.iter().zip(blocks) {
        let (addr, size) = (b["addr"].as_f64().unwrap(), b["size"].as_f64().unwrap());
        assert!((attr(r, "x") - (10.0 + (addr - heap_start) * strip / heap_size)).abs() < 0.01);
        assert!((attr(r, "width") - (size * strip / heap_size).max(1.0)).abs() < 0.01);
        let title = format!("<title>{:#010x}  {} B  ", addr as u64, size as u64);
        assert!(r.contains(&title), "{title}");
        let state = if b["free"] == true { "free" } else { "used" };
        assert!(r.contains(&format!("B  {state}")) || b["unclaimed"] == true);
    }
    let ratio = format!(
        "largest free / total free = {:.3}",
        json["largest_free_ratio"].as_f64().unwrap()
    );
    assert!(svg.contains(&ratio), "{ratio}");
    assert!(svg.contains("model_load (hit 2)"));
}

/// Report paths that cannot be written are refused before the audit starts (exit 2).
#[test]
fn unwritable_report_paths_are_refused_up_front() {
    let dir = tempdir("report-paths");
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let cfg = repo().join("examples/healthy/memlife.toml");
    let script = repo().join("scripts/lifecycle.rhai");
    for (flag, path, why) in [
        ("--report", &file, "is not a directory"),
        ("--trace", &dir, "is a directory"),
    ] {
        let out = run_memlife(&[
            "audit",
            "--config",
            cfg.to_str().unwrap(),
            script.to_str().unwrap(),
            flag,
            path.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(why), "{}", stderr(&out));
        assert!(
            !stderr(&out).contains("phases"),
            "the audit ran: {}",
            stderr(&out)
        );
    }
}
