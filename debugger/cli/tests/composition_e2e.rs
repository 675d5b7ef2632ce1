//! Peak composition, end to end: the `load-peak` firmware's model_load holds three zones at its
//! peak (firmware/README.md, "Allocations per phase"); with `[components]` naming them, the
//! audit's JSON breaks the peak into exactly those zones, to the byte, and the load-peak check
//! message lists them. A typo in `[components]` is a configuration error naming the nearest
//! function.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use common::*;

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

/// The load-peak example's settings plus `components`, written to `dir`.
fn config(dir: &std::path::Path, components: &str) -> std::path::PathBuf {
    let example = std::fs::read_to_string(repo().join("examples/load-peak/memlife.toml")).unwrap();
    let body: String = example
        .lines()
        .filter(|l| !l.starts_with("elf ="))
        .map(|l| format!("{l}\n"))
        .collect();
    let path = dir.join("memlife.toml");
    std::fs::write(&path, format!("{body}\n{components}")).unwrap();
    path
}

#[test]
fn the_load_peak_is_the_three_zones_of_the_firmware_readme() {
    let dir = tempdir("composition");
    let components = format!(
        "[components]\n# the weights: every block parse_model allocates\nparse_model = \"weights\"\n\"loader.c:{}\" = \"file buffer\"\n\"loader.c:{}\" = \"inflate buffer\"\n",
        loader_line("load:file"),
        loader_line("load:inflate")
    );
    let cfg = config(&dir, &components);
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
        "--out",
        dir.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}\n{}", stderr(&out));

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

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
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
        assert_eq!(
            parts,
            vec![
                ("inflate buffer".to_string(), heap4(inflate), inflate, 1),
                ("weights".to_string(), weights_resident, weights_req, 11),
                ("file buffer".to_string(), heap4(file), file, 1),
            ],
            "{load}"
        );
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
