//! `memlife diff` end to end: the bundled firmware's scenarios audited once each in QEMU
//! (shared by the tests below; healthy twice, in two runs), then compared, and what the diff
//! says checked against the figures of the two JSON reports.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use std::path::PathBuf;
use std::process::Output;
use std::sync::OnceLock;

use common::browser::*;
use common::*;
use serde_json::Value;

/// (name, example directory, script)
const AUDITS: &[(&str, &str, &str)] = &[
    ("healthy", "healthy", "lifecycle.rhai"),
    ("healthy-again", "healthy", "lifecycle.rhai"),
    ("reorder", "reorder", "lifecycle.rhai"),
    ("branch-peak", "branch-peak", "lifecycle.rhai"),
    ("leak-on-switch", "leak-on-switch", "lifecycle.rhai"),
    ("cpp", "cpp-interpreter", "leak.rhai"),
];

/// The directory holding every audit's JSON report, made once for the whole test binary.
fn audits() -> &'static PathBuf {
    static DONE: OnceLock<PathBuf> = OnceLock::new();
    DONE.get_or_init(|| {
        let dir = tempdir("diff");
        for (name, example, script) in AUDITS {
            let cfg = repo().join("examples").join(example).join("memlife.toml");
            let script = repo().join("scripts").join(script);
            let json = dir.join(format!("{name}.json"));
            let out = run_memlife(&[
                "audit",
                "--config",
                cfg.to_str().unwrap(),
                script.to_str().unwrap(),
                "--json",
                json.to_str().unwrap(),
                "--out",
                dir.join("out").to_str().unwrap(),
            ]);
            let code = out.status.code();
            assert!(
                code == Some(0) || code == Some(1),
                "{name}: exit {code:?}\n{}\n{}",
                stdout(&out),
                stderr(&out)
            );
        }
        dir
    })
}

fn json_path(name: &str) -> PathBuf {
    audits().join(format!("{name}.json"))
}

fn report(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(json_path(name)).unwrap()).unwrap()
}

/// `memlife diff BASE HEAD EXTRA`, with the budgets of examples/diff/memlife.toml unless EXTRA
/// gives a `--config`.
fn diff(base: &str, head: &str, extra: &[&str]) -> Output {
    let (b, h) = (json_path(base), json_path(head));
    let example = repo().join("examples/diff/memlife.toml");
    let mut args = vec!["diff", b.to_str().unwrap(), h.to_str().unwrap()];
    if !extra.contains(&"--config") {
        args.extend(["--config", example.to_str().unwrap()]);
    }
    args.extend_from_slice(extra);
    run_memlife(&args)
}

/// The table row naming `figure` (its first column after the over-budget mark).
fn row<'a>(table: &'a str, figure: &str) -> &'a str {
    table
        .lines()
        .find(|l| {
            l.get(3..)
                .is_some_and(|r| r.starts_with(&format!("{figure} ")))
        })
        .unwrap_or_else(|| panic!("no row `{figure}` in\n{table}"))
}

/// The first phase of `role` in a report.
fn phase<'a>(r: &'a Value, role: &str) -> &'a Value {
    r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["alias"] == role)
        .unwrap()
}

/// A span's figure by its label, in the first phase of `role`.
fn span(r: &Value, role: &str, label: &str) -> Value {
    let p = phase(r, role);
    let function = p["spans"][0]["function"].as_str().unwrap();
    let names: Vec<&str> = r["labels"][function]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let index = names.iter().position(|n| *n == label).unwrap() as u64;
    p["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["args"][1] == index)
        .unwrap()
        .clone()
}

fn code(out: &Output) -> Option<i32> {
    out.status.code()
}

#[test]
fn healthy_against_reorder_fails_on_conv_b_build_step() {
    let out = diff("healthy", "reorder", &[]);
    let table = stdout(&out);
    assert_eq!(code(&out), Some(1), "{table}\n{}", stderr(&out));
    let (b, h) = (report("healthy"), report("reorder"));
    let (sb, sh) = (
        span(&b, "build", "conv_b")["delta"].as_i64().unwrap(),
        span(&h, "build", "conv_b")["delta"].as_i64().unwrap(),
    );
    assert!(
        sh > sb + 4096,
        "the reorder build's conv_b step is not larger: {sb} -> {sh}"
    );
    let r = row(&table, "build step conv_b");
    assert!(r.starts_with('!'), "not over budget: {r}");
    for want in [
        format!("{sb} B"),
        format!("{sh} B"),
        format!("+{} B", sh - sb),
    ] {
        assert!(r.contains(&want), "`{want}` missing: {r}");
    }
    assert!(r.contains("graph_build, cycles 1-3"), "{r}");
    // Judged against examples/diff/memlife.toml's own budget for a build step.
    assert!(r.contains("512 B / 10%"), "{r}");
    // No other operator's step changed.
    let steps = table
        .lines()
        .filter(|l| l.get(3..).is_some_and(|r| r.starts_with("build step ")))
        .count();
    assert_eq!(steps, 1, "{table}");
    assert!(table.contains("EXCEEDED"), "{table}");
}

#[test]
fn healthy_against_branch_peak_names_the_head_layers() {
    let out = diff("healthy", "branch-peak", &[]);
    let table = stdout(&out);
    assert_eq!(code(&out), Some(1), "{table}\n{}", stderr(&out));
    let h = report("branch-peak");
    for layer in ["head_p3", "head_p4", "head_p5"] {
        let delta = span(&h, "run", layer)["delta"].as_i64().unwrap();
        assert!(delta > 256, "{layer}: {delta}");
        let r = row(&table, &format!("layer delta {layer}"));
        assert!(
            r.starts_with('!') && r.contains(&format!("+{delta} B")),
            "{r}"
        );
    }
    let peak = phase(&h, "run")["peak_above_before"].as_u64().unwrap();
    let r = row(&table, "inference peak");
    assert!(
        r.starts_with('!') && r.contains(&format!("{peak} B")),
        "{r}"
    );
    assert!(r.contains("layer head_p5"), "the peak's layer: {r}");
    // The layers before the head keep what they kept.
    assert!(!table.contains("layer delta conv_b"), "{table}");
}

#[test]
fn healthy_against_leak_on_switch_names_the_leak_site_and_bytes_per_cycle() {
    let out = diff("healthy", "leak-on-switch", &[]);
    let table = stdout(&out);
    assert_eq!(code(&out), Some(1), "{table}\n{}", stderr(&out));
    // The site is the firmware's own allocation of the op context array.
    let engine = std::fs::read_to_string(repo().join("firmware/src/engine.c")).unwrap();
    let line51 = engine.lines().nth(50).unwrap();
    assert!(
        line51.contains("alloc(") && line51.contains("op_contexts"),
        "engine.c:51 is `{line51}`"
    );
    let h = report("leak-on-switch");
    let frees: Vec<i64> = h["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["alias"] == "release")
        .map(|p| p["after"]["free"].as_i64().unwrap())
        .collect();
    let per_cycle = frees[0] - frees[1];
    assert!(per_cycle > 0, "{frees:?}");
    let r = row(&table, "leak per cycle at build_graph (engine.c:51)");
    assert!(
        r.starts_with('!') && r.contains(&format!("{per_cycle} B")),
        "{r}"
    );
    let r = row(&table, "leak per cycle");
    assert!(
        r.starts_with('!') && r.contains(&format!("+{per_cycle} B")),
        "{r}"
    );
}

#[test]
fn healthy_against_another_healthy_run_passes_with_no_change() {
    let out = diff("healthy", "healthy-again", &[]);
    let table = stdout(&out);
    assert_eq!(code(&out), Some(0), "{table}\n{}", stderr(&out));
    assert!(table.contains("WITHIN: no change"), "{table}");
    assert_eq!(table.lines().count(), 2, "rows listed:\n{table}");
}

/// Outputs that cannot be written are each named with the operating system's reason, and the
/// closing line counts right: none written, or how many others were.
#[test]
fn outputs_that_cannot_be_written_say_why_and_how_many() {
    let old = repo().join("debugger/diff/tests/fixtures/healthy-0.1.0.json");
    let old = old.to_str().unwrap();
    let dir = tempdir("diff-outputs");
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let under = |name: &str| file.join(name).to_str().unwrap().to_string();
    let (json, md, report) = (under("d.json"), under("d.md"), under("report"));
    let out = run_memlife(&[
        "diff",
        old,
        old,
        "--json",
        &json,
        "--markdown",
        &md,
        "--report",
        &report,
    ]);
    let err = stderr(&out);
    assert_eq!(code(&out), Some(2), "{err}");
    assert!(
        err.contains("none of the diff's 3 outputs could be written"),
        "{err}"
    );
    for flag in ["--json", "--markdown", "--report"] {
        let line = err
            .lines()
            .find(|l| l.starts_with(&format!("error: {flag} ")))
            .unwrap();
        assert!(
            line.contains("a-file is not a directory") || line.contains("Not a directory"),
            "{line}"
        );
    }
    let good = dir.join("d.json");
    let out = run_memlife(&[
        "diff",
        old,
        old,
        "--json",
        good.to_str().unwrap(),
        "--markdown",
        &md,
    ]);
    let err = stderr(&out);
    assert!(
        err.contains("1 of the diff's outputs could not be written (the other one was)"),
        "{err}"
    );
    assert!(good.is_file());
}

/// A report written by memlife 0.1.0 before the report model was shared (the healthy example,
/// one cycle; debugger/diff/tests/fixtures) still reads, and this build's audit of the same
/// firmware changes none of its figures.
#[test]
fn a_report_written_before_the_shared_model_diffs_with_this_builds_audit() {
    let old = repo().join("debugger/diff/tests/fixtures/healthy-0.1.0.json");
    let head = json_path("healthy");
    let example = repo().join("examples/diff/memlife.toml");
    let out = run_memlife(&[
        "diff",
        old.to_str().unwrap(),
        head.to_str().unwrap(),
        "--config",
        example.to_str().unwrap(),
    ]);
    let table = stdout(&out);
    assert_eq!(code(&out), Some(0), "{table}\n{}", stderr(&out));
    assert!(table.contains("WITHIN: no change"), "{table}");
    assert!(
        stderr(&out).contains("recorded 1 cycles") || table.contains("recorded 1 cycles"),
        "{table}\n{}",
        stderr(&out)
    );
}

#[test]
fn unrelated_firmwares_are_refused_with_the_reason() {
    let out = diff("healthy", "cpp", &[]);
    assert_eq!(code(&out), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("cannot compare") && err.contains("two different firmwares"),
        "{err}"
    );
    assert!(err.contains("model_load vs app::Setup"), "{err}");
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
}

#[test]
fn what_is_not_an_audit_report_is_refused() {
    let dir = tempdir("diff-bad");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"name\": 1}").unwrap();
    let good = json_path("healthy");
    let out = run_memlife(&["diff", good.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(code(&out), Some(2));
    assert!(
        stderr(&out).contains("not a memlife audit JSON report"),
        "{}",
        stderr(&out)
    );
    let missing = dir.join("missing.json");
    let out = run_memlife(&["diff", good.to_str().unwrap(), missing.to_str().unwrap()]);
    assert_eq!(code(&out), Some(2));
    assert!(stderr(&out).contains("cannot read"), "{}", stderr(&out));
}

/// A memlife.toml of a test's own with `text`.
fn config(test: &str, text: &str) -> PathBuf {
    let path = tempdir(&format!("diff-cfg-{test}")).join("memlife.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn budgets_from_memlife_toml_decide_the_exit_code() {
    // Generous where the reorder build grew (and the minimum free it shrank): within.
    let loose = config(
        "loose",
        "[diff]\nbytes = 0\npercent = 0\n[diff.build_step]\nbytes = 10000\n[diff.build_resident]\nbytes = 10000\n\
         [diff.heap_peak]\nbytes = 10000\n[diff.min_ever_free]\nbytes = 10000\n[diff.allocs]\ncount = 1\n[diff.frees]\ncount = 1\n",
    );
    let out = diff("healthy", "reorder", &["--config", loose.to_str().unwrap()]);
    let table = stdout(&out);
    assert_eq!(code(&out), Some(0), "{table}\n{}", stderr(&out));
    assert!(
        table.contains("WITHIN: 8 changes, none over budget"),
        "{table}"
    );
    assert!(
        row(&table, "build step conv_b").contains("10000 B / 0%"),
        "{table}"
    );
    // One byte less than conv_b's growth: over.
    let (b, h) = (report("healthy"), report("reorder"));
    let growth = span(&h, "build", "conv_b")["delta"].as_i64().unwrap()
        - span(&b, "build", "conv_b")["delta"].as_i64().unwrap();
    let tight = config(
        "tight",
        &format!(
            "[diff.build_step]\nbytes = {}\npercent = 0\n[diff.build_resident]\nbytes = 100000\n[diff.heap_peak]\nbytes = 100000\n[diff.min_ever_free]\nbytes = 100000\n",
            growth - 1
        ),
    );
    let out = diff("healthy", "reorder", &["--config", tight.to_str().unwrap()]);
    assert_eq!(code(&out), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("EXCEEDED: 1 of 8 changes over budget"),
        "{}",
        stdout(&out)
    );
    // A typo in [diff] is named, with the nearest figure.
    let typo = config("typo", "[diff.build_stpe]\nbytes = 1\n");
    let out = diff("healthy", "reorder", &["--config", typo.to_str().unwrap()]);
    assert_eq!(code(&out), Some(2));
    assert!(
        stderr(&out).contains("unknown key `build_stpe` in [diff]; did you mean `build_step`?"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn audit_with_a_baseline_runs_the_audit_then_the_diff() {
    let dir = tempdir("diff-baseline");
    let script = repo().join("scripts/lifecycle.rhai");
    let baseline = json_path("healthy");
    let audit = |example: &str| {
        let cfg = repo().join("examples").join(example).join("memlife.toml");
        run_memlife(&[
            "audit",
            "--config",
            cfg.to_str().unwrap(),
            script.to_str().unwrap(),
            "--baseline",
            baseline.to_str().unwrap(),
            "--out",
            dir.join("out").to_str().unwrap(),
        ])
    };
    let out = audit("healthy");
    let text = stdout(&out);
    assert_eq!(code(&out), Some(0), "{text}\n{}", stderr(&out));
    assert!(
        text.contains("PASS leak") && text.contains("WITHIN: no change"),
        "{text}"
    );
    // The example's memlife.toml has no [diff]: the defaults judge conv_b's step.
    let out = audit("reorder");
    let text = stdout(&out);
    assert_eq!(code(&out), Some(1), "{text}\n{}", stderr(&out));
    assert!(text.contains("FAIL build-step"), "{text}");
    assert!(row(&text, "build step conv_b").starts_with('!'), "{text}");
    assert!(text.contains("-> this audit"), "{text}");
    // A baseline that is not a report stops the audit before the target runs.
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "[]").unwrap();
    let cfg = repo().join("examples/healthy/memlife.toml");
    let out = run_memlife(&[
        "audit",
        "--config",
        cfg.to_str().unwrap(),
        script.to_str().unwrap(),
        "--baseline",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(code(&out), Some(2));
    assert!(
        stderr(&out).contains("bad.json: not a JSON object"),
        "{}",
        stderr(&out)
    );
    assert!(
        !stdout(&out).contains("PASS"),
        "the audit ran: {}",
        stdout(&out)
    );
}

/// A value as the tables print it, from the diff JSON.
fn shown(v: &Value, unit: &str) -> String {
    match (v.as_f64(), unit) {
        (None, _) => "-".into(),
        (Some(x), "bytes") => format!("{x:.0} B"),
        (Some(x), "count") => format!("{x:.0}"),
        (Some(x), _) => format!("{x:.3}"),
    }
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The diff of `base` and `head` with every output: (exit code, table, JSON, markdown, page, dir).
fn outputs(base: &str, head: &str) -> (Option<i32>, String, Value, String, String, PathBuf) {
    let dir = tempdir(&format!("diff-out-{base}-{head}"));
    let (md, json, report) = (
        dir.join("diff.md"),
        dir.join("diff.json"),
        dir.join("report"),
    );
    let out = diff(
        base,
        head,
        &[
            "--markdown",
            md.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ],
    );
    assert!(
        stderr(&out).contains("report written to"),
        "{}",
        stderr(&out)
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (
        code(&out),
        stdout(&out),
        v,
        std::fs::read_to_string(&md).unwrap(),
        std::fs::read_to_string(report.join("index.html")).unwrap(),
        report,
    )
}

#[test]
fn markdown_html_and_table_say_what_the_json_says() {
    let (code, table, v, md, page, _) = outputs("healthy", "branch-peak");
    assert_eq!(code, Some(1));
    assert_eq!(v["verdict"], "exceeded");
    let changes = v["changes"].as_array().unwrap();
    assert!(changes.len() >= 9, "{changes:?}");
    assert!(md.starts_with("### ❌ memlife diff: EXCEEDED"), "{md}");
    for c in changes {
        let (name, place, unit) = (
            c["name"].as_str().unwrap(),
            c["where"].as_str().unwrap(),
            c["unit"].as_str().unwrap(),
        );
        let (b, h) = (shown(&c["base"], unit), shown(&c["head"], unit));
        let exceeded = c["exceeded"].as_bool().unwrap();
        // Markdown: the row with the mark, the name and both values.
        let mark = match (exceeded, c["worse"].as_bool().unwrap()) {
            (true, _) => "❌",
            (false, true) => "",
            (false, false) => "✅",
        };
        let row_md = md
            .lines()
            .find(|l| l.starts_with(&format!("| {mark} | {name} | {place}")))
            .unwrap_or_else(|| panic!("no markdown row for {name} / {place}:\n{md}"));
        assert!(row_md.contains(&format!("| {b} | {h} |")), "{row_md}");
        // HTML: the same row, marked when over budget.
        let cls = if exceeded {
            "<tr class=\"exceeded\">"
        } else {
            "<tr"
        };
        let cells = format!(
            "<td>{}</td><td>{}</td><td class=\"num\">{b}</td><td class=\"num\">{h}</td>",
            html_escape(name),
            html_escape(place)
        );
        assert!(
            page.contains(&format!(
                "{cls}{}",
                if exceeded {
                    cells.clone()
                } else {
                    String::new()
                }
            )) && page.contains(&cells),
            "no HTML row {cells}"
        );
        // The terminal table too.
        assert!(
            table
                .lines()
                .any(|l| l.get(3..).is_some_and(|r| r.starts_with(name))
                    && l.contains(&b)
                    && l.contains(&h)),
            "{name}: {table}"
        );
    }
    // The head layers are named in all three.
    for layer in ["head_p3", "head_p4", "head_p5"] {
        let name = format!("layer delta {layer}");
        assert!(
            changes
                .iter()
                .any(|c| c["name"] == name.as_str() && c["exceeded"] == true),
            "{name}"
        );
    }
    // Sites: each one the JSON lists is in the markdown and the page.
    for s in v["sites"].as_array().unwrap() {
        let f = s["site"]["function"].as_str().unwrap();
        assert!(md.contains(f) && page.contains(&html_escape(f)), "{f}");
    }
    // The page draws both runs: overlay, two stair charts, paired bars, two heap maps.
    for id in [
        "changes",
        "water-level",
        "build",
        "layers",
        "heap-maps",
        "sites",
        "checks",
    ] {
        assert!(page.contains(&format!("<section id=\"{id}\">")), "{id}");
    }
    assert_eq!(page.matches("<svg").count(), 6);
    assert!(page.contains("heap4-healthy.elf") && page.contains("heap4-branch-peak.elf"));
    assert!(
        page.contains("<b>inference-peak</b>: pass &rarr; fail"),
        "the check that changed"
    );
}

#[test]
fn with_no_change_every_output_says_so() {
    let (code, _, v, md, page, _) = outputs("healthy", "healthy-again");
    assert_eq!(code, Some(0));
    assert_eq!(v["verdict"], "within");
    assert!(
        v["changes"].as_array().unwrap().is_empty() && v["sites"].as_array().unwrap().is_empty()
    );
    assert!(
        md.contains("✅ memlife diff: WITHIN: no change") && !md.contains("| figure |"),
        "{md}"
    );
    assert!(
        page.contains("No figure changed") && page.contains("No allocation site is new"),
        "page"
    );
}

#[test]
fn the_diff_page_opens_in_headless_chromium_without_console_errors() {
    let Some(browser) = require_chromium() else {
        return;
    };
    let (_, _, _, _, _, report) = outputs("healthy", "leak-on-switch");
    let dir = tempdir("diff-chromium");
    let profile = dir.join("profile");
    check_console_capture(&browser, &dir, &profile);
    let page = report.join("index.html").canonicalize().unwrap();
    let png = dir.join("diff.png");
    let console = screenshot(&browser, &page, &png, &profile, "1140,4400");
    assert!(console.is_empty(), "console messages: {console:?}");
    let (total, ink, colours) = pixels(&png);
    // Charts, tables and heap strips: a blank or unstyled page has next to no ink.
    assert!(
        ink * 16 > total,
        "only {ink} of {total} pixels are not white"
    );
    assert!(colours >= 40, "only {colours} colours");
    // HEAD's orange curve and the red of its leaked blocks are on screen.
    let decoder = png::Decoder::new(std::fs::File::open(&png).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px: Vec<&[u8]> = buf[..info.buffer_size()]
        .chunks(info.color_type.samples())
        .collect();
    let near = |p: &[u8], c: [u8; 3]| (0..3).all(|i| p[i].abs_diff(c[i]) < 30);
    let orange = px.iter().filter(|p| near(p, [226, 112, 20])).count();
    let red = px
        .iter()
        .filter(|p| p[0] > 180 && p[1] < 70 && p[2] < 70)
        .count();
    assert!(
        orange > 300,
        "only {orange} orange pixels: HEAD's curve is not drawn"
    );
    assert!(red > 200, "only {red} red pixels: the leak is not drawn");
}
