//! Peak composition, end to end: the `load-peak` firmware's model_load holds three zones at its
//! peak (firmware/README.md, "Allocations per phase"); with the `[components]` of
//! examples/load-peak naming them, the audit's JSON breaks the peak into exactly those zones, to
//! the byte, the load-peak check message lists them, and the HTML report draws every phase
//! peak as a stacked bar whose segments are the JSON's parts, and the heap at the peak in the
//! components' colours (checked on Chromium's screenshot). A typo in `[components]` is a
//! configuration error naming the nearest function.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::browser::*;
use common::*;
use serde_json::Value;

/// The number after `marker` in `text`.
fn number_after(text: &str, marker: &str) -> u64 {
    let rest = text
        .split(marker)
        .nth(1)
        .unwrap_or_else(|| panic!("`{marker}` not in the text"));
    let digits: String = rest
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}

/// The line of loader.c whose allocation is tagged `tag` (`load:file`).
fn loader_line(tag: &str) -> usize {
    let src = std::fs::read_to_string(repo().join("firmware/src/loader.c")).unwrap();
    1 + src
        .lines()
        // The loader checks its allocations: mem_try_alloc (mem_alloc halts on NULL).
        .position(|l| {
            (l.contains("mem_alloc(") || l.contains("mem_try_alloc("))
                && l.contains(&format!("\"{tag}\""))
        })
        .unwrap_or_else(|| panic!("no allocation tagged {tag} in loader.c"))
}

/// The load-peak example's settings, its `[components]` replaced by `components` when given,
/// written to `dir`.
fn config(dir: &std::path::Path, components: &str) -> std::path::PathBuf {
    let example = std::fs::read_to_string(repo().join("examples/load-peak/memlife.toml")).unwrap();
    let mut in_components = false;
    let body: String = example
        .lines()
        .filter(|l| !l.starts_with("elf ="))
        .filter(|l| {
            if l.starts_with('[') {
                in_components = *l == "[components]";
            }
            components.is_empty() || !in_components
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let path = dir.join("memlife.toml");
    std::fs::write(&path, format!("{body}\n{components}")).unwrap();
    path
}

/// One audit of heap4 load-peak with the example's `[components]`, shared by the tests.
struct Run {
    dir: PathBuf,
    code: Option<i32>,
    stdout: String,
    json: Value,
    html: String,
}

fn load_peak() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        let dir = tempdir("composition");
        let cfg = config(&dir, "");
        let json = dir.join("audit.json");
        let out = run_memlife(&[
            "audit",
            "--config",
            cfg.to_str().unwrap(),
            "--elf",
            elf("heap4", "load-peak").to_str().unwrap(),
            repo().join("scripts/lifecycle.rhai").to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--report",
            dir.join("report").to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ]);
        let text = stdout(&out);
        assert!(json.is_file(), "{text}\n{}", stderr(&out));
        Run {
            json: serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap(),
            html: std::fs::read_to_string(dir.join("report/index.html")).unwrap(),
            code: out.status.code(),
            stdout: text,
            dir,
        }
    })
}

/// The example maps the file and inflate buffers by `loader.c:LINE`: those must still be the
/// lines of those allocations, or the example (and `make demo`) names nothing.
#[test]
fn the_example_components_name_the_allocations_of_loader_c() {
    let example = std::fs::read_to_string(repo().join("examples/load-peak/memlife.toml")).unwrap();
    for (tag, name) in [
        ("load:file", "file buffer"),
        ("load:inflate", "inflate buffer"),
    ] {
        let line = format!("\"loader.c:{}\" = \"{name}\"", loader_line(tag));
        assert!(
            example.contains(&line),
            "examples/load-peak/memlife.toml lacks {line}"
        );
    }
}

/// The load peak's parts as firmware/README.md gives them: (name, bytes in heap4's accounting,
/// requested, blocks), largest first.
fn readme_zones() -> Vec<(String, u64, u64, u64)> {
    // The zones as firmware/README.md gives them (request sizes), and heap4's accounting:
    // 8-byte header, rounded up to 8.
    let readme = std::fs::read_to_string(repo().join("firmware/README.md")).unwrap();
    let file = number_after(&readme, "`load:file`");
    let inflate = number_after(&readme, "`load:inflate`");
    // The weight blocks: the list after "(bias + weights):", up to its total.
    let list = readme
        .split("11\n  weight blocks (bias + weights):")
        .nth(1)
        .and_then(|r| r.split(" = ").next())
        .unwrap();
    let weights_req: u64 = list
        .split(',')
        .map(|w| w.split_whitespace().last().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(weights_req, number_after(&readme, "head_p5\n  576 ="));
    let weights_resident = number_after(&readme, "B; resident");
    let heap4 = |req: u64| (req + 8).div_ceil(8) * 8;
    vec![
        ("inflate buffer".to_string(), heap4(inflate), inflate, 1),
        ("weights".to_string(), weights_resident, weights_req, 11),
        ("file buffer".to_string(), heap4(file), file, 1),
    ]
}

#[test]
fn the_load_peak_is_the_three_zones_of_the_firmware_readme() {
    let run = load_peak();
    let text = &run.stdout;
    assert_eq!(run.code, Some(1), "{text}");

    let report = &run.json;
    let loads: Vec<&serde_json::Value> = report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["function"] == "model_load")
        .collect();
    assert!(!loads.is_empty(), "{report}");
    for load in loads {
        let parts: Vec<(String, u64, u64, u64)> = load["composition"]
            .as_array()
            .unwrap_or_else(|| panic!("no composition: {load}"))
            .iter()
            .map(|p| {
                (
                    p["name"].as_str().unwrap().to_string(),
                    p["bytes"].as_u64().unwrap(),
                    p["requested"].as_u64().unwrap(),
                    p["blocks"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(parts, readme_zones(), "{load}");
        // Nothing else is live at the peak: the zones are the whole overhead.
        let sum: u64 = parts.iter().map(|p| p.1).sum();
        assert_eq!(load["peak_above_before"].as_u64().unwrap(), sum, "{load}");
    }
    assert!(
        text.contains(
            "peaks 78384 B above its baseline = inflate buffer 31.3 KB + weights 31.1 KB + file buffer 16.0 KB"
        ),
        "{text}"
    );
}

/// The value of attribute `name` in the start tag `tag`, unescaped as far as these names need.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let rest = tag.split(&format!(" {name}=\"")).nth(1)?;
    rest.split('"').next()
}

/// The start tags of the `<rect>`s in `html` whose class is `class`.
fn rects<'a>(html: &'a str, class: &str) -> Vec<&'a str> {
    // Split before the space, so that every attribute follows one.
    html.split("<rect")
        .skip(1)
        .map(|r| r.split('>').next().unwrap())
        .filter(|r| attr(r, "class") == Some(class))
        .collect()
}

/// One section of the page (`<section id="ID">` ... `</section>`).
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let from = html
        .find(&format!("<section id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no section {id}"));
    let len = html[from..].find("</section>").unwrap();
    &html[from..from + len]
}

/// The first `<svg>` of `html` whose class is `class`.
fn svg<'a>(html: &'a str, class: &str) -> &'a str {
    let from = html
        .find(&format!("class=\"{class}\""))
        .and_then(|i| html[..i].rfind("<svg"))
        .unwrap_or_else(|| panic!("no svg of class {class}"));
    let len = html[from..].find("</svg>").unwrap() + "</svg>".len();
    &html[from..from + len]
}

#[test]
fn the_report_draws_every_peak_as_a_stacked_bar_of_the_json_parts() {
    let run = load_peak();
    let html = section(&run.html, "peak-composition");
    let segments = rects(html, "segment");
    let seg = |phase: &str| -> Vec<(String, u64)> {
        segments
            .iter()
            .filter(|r| attr(r, "data-phase") == Some(phase))
            .map(|r| {
                (
                    attr(r, "data-component").unwrap().to_string(),
                    attr(r, "data-bytes").unwrap().parse().unwrap(),
                )
            })
            .collect()
    };
    // One bar per phase peak with a composition, its segments the JSON's parts in order.
    let mut bars = 0;
    let mut loads = 0;
    for p in run.json["phases"].as_array().unwrap() {
        let Some(parts) = p["composition"].as_array() else {
            continue;
        };
        let phase = format!("{}#{}", p["function"].as_str().unwrap(), p["call"]);
        let want: Vec<(String, u64)> = parts
            .iter()
            .map(|x| {
                (
                    x["name"].as_str().unwrap().to_string(),
                    x["bytes"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(seg(&phase), want, "{phase}");
        bars += 1;
        if p["function"] == "model_load" {
            // To the byte: the README's zones, summing to the peak above the load's entry.
            let zones: Vec<(String, u64)> =
                readme_zones().into_iter().map(|z| (z.0, z.1)).collect();
            assert_eq!(seg(&phase), zones, "{phase}");
            let sum: u64 = zones.iter().map(|z| z.1).sum();
            assert_eq!(sum, 78384);
            assert_eq!(p["peak_above_before"].as_u64(), Some(sum));
            assert!(html.contains(&format!(
                "data-phase=\"{phase}\" data-role=\"load\" data-total=\"{sum}\""
            )));
            loads += 1;
        }
    }
    assert!(loads >= 1 && bars > loads, "{bars} bars, {loads} loads");
    let phases: std::collections::BTreeSet<&str> = segments
        .iter()
        .map(|r| attr(r, "data-phase").unwrap())
        .collect();
    assert_eq!(phases.len(), bars, "a bar for a phase without composition");
    // One byte scale for every bar.
    let scales: Vec<f64> = segments
        .iter()
        .map(|r| {
            attr(r, "width").unwrap().parse::<f64>().unwrap()
                / attr(r, "data-bytes").unwrap().parse::<f64>().unwrap()
        })
        .collect();
    assert!(
        scales.iter().all(|s| (s / scales[0] - 1.0).abs() < 0.01),
        "{scales:?}"
    );
    // The default palette for the named kinds the example has (README, "Reports").
    let fill = |component: &str| -> &str {
        let r = segments
            .iter()
            .find(|r| attr(r, "data-component") == Some(component))
            .unwrap_or_else(|| panic!("no segment {component}"));
        attr(r, "fill").unwrap()
    };
    assert_eq!(fill("operator contexts"), "#8fd68b");
    assert_eq!(fill("tensor arena"), "#f28a1e");
    assert_eq!(fill("requant lookup tables"), "#f2cb1d");
    let others = [fill("inflate buffer"), fill("weights"), fill("file buffer")];
    assert!(others[0] != others[1] && others[1] != others[2] && others[0] != others[2]);
    // The heap at the highest peak: the load's blocks, each in its component's bar colour.
    let map = svg(html, "heapmap");
    let blocks = rects(map, "block");
    for (name, _, _, count) in readme_zones() {
        let mine: Vec<&&str> = blocks
            .iter()
            .filter(|r| attr(r, "data-component") == Some(name.as_str()))
            .collect();
        assert_eq!(mine.len() as u64, count, "{name}: {map}");
        assert!(mine.iter().all(|r| attr(r, "fill") == Some(fill(&name))));
    }
    // The build stairs name the components of their steps in the legend.
    assert!(
        section(&run.html, "build-stairs").contains("class=\"component\">requant lookup tables<")
    );
}

#[test]
fn the_bars_and_the_coloured_map_show_in_headless_chromium() {
    let Some(browser) = require_chromium() else {
        return;
    };
    let run = load_peak();
    let dir = tempdir("composition-chromium");
    let profile = dir.join("profile");
    check_console_capture(&browser, &dir, &profile);
    let html = section(&run.html, "peak-composition");

    // The whole report opens cleanly and shows every segment colour.
    let page = run.dir.join("report/index.html").canonicalize().unwrap();
    let png = dir.join("report.png");
    let console = screenshot(&browser, &page, &png, &profile, "1040,6000");
    assert!(console.is_empty(), "console messages: {console:?}");
    for r in rects(html, "segment") {
        let c = attr(r, "fill").unwrap();
        assert!(count_colour(&png, c, 6) > 100, "{c} is not on the page");
    }

    // The bars, and the heap at the peak, each alone on a page: every component's colour
    // covers the area its rectangles are drawn with (less the white separators and labels).
    for (class, tag, h) in [("peakbars", "segment", 24.0), ("heapmap", "block", 56.0)] {
        let svg = svg(html, class);
        let page = dir.join(format!("{class}.html"));
        std::fs::write(
            &page,
            format!("<!DOCTYPE html><html><body style=\"margin:0\">{svg}</body></html>"),
        )
        .unwrap();
        let png = dir.join(format!("{class}.png"));
        let console = screenshot(&browser, &page, &png, &profile, "1000,700");
        assert!(console.is_empty(), "console messages: {console:?}");
        let mut area: std::collections::BTreeMap<&str, f64> = Default::default();
        for r in rects(svg, tag) {
            if attr(r, "data-component").is_some() {
                let w: f64 = attr(r, "width").unwrap().parse().unwrap();
                *area.entry(attr(r, "fill").unwrap()).or_default() += w * h;
            }
        }
        assert!(area.len() >= 3, "{class}: {area:?}");
        for (fill, a) in area.iter().filter(|(_, a)| **a >= 500.0) {
            let got = count_colour(&png, fill, 6) as f64;
            assert!(
                got >= 0.7 * a && got <= 1.1 * a + 50.0,
                "{class}: {fill} covers {got} pixels, drawn as {a}"
            );
        }
    }
}

#[test]
fn a_components_typo_is_a_configuration_error_naming_the_nearest_function() {
    let dir = tempdir("composition-typo");
    let cfg = config(&dir, "[components]\nparse_modl = \"weights\"\n");
    let out = run_memlife(&[
        "audit",
        "--config",
        cfg.to_str().unwrap(),
        "--elf",
        elf("heap4", "load-peak").to_str().unwrap(),
        repo().join("scripts/lifecycle.rhai").to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("[components] `parse_modl` is neither a function in the ELF")
            && err.contains("did you mean `parse_model`?"),
        "{err}"
    );
}
