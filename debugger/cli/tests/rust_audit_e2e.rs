//! `memlife audit` on the Rust firmware (firmware/rust, embedded-alloc's LlffHeap and TlsfHeap)
//! by configuration only (examples/rust-llff, examples/rust-tlsf): every bundled script gives
//! the verdict it gives on the C firmware's scenario, and the leak names the Rust function that
//! allocated the leaked block, demangled, with its file and line.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use common::*;

const RUST_SCENARIOS: &[&str] = &["healthy", "leak-on-switch", "fragmentation", "load-peak"];

fn config(name: &str) -> String {
    repo()
        .join("examples")
        .join(name)
        .join("memlife.toml")
        .to_str()
        .unwrap()
        .to_string()
}

fn scripts() -> Vec<std::path::PathBuf> {
    let mut scripts: Vec<_> = std::fs::read_dir(repo().join("scripts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rhai"))
        // error-paths.rhai makes allocations fail: the C engine cleans up and goes on, while
        // Rust's `alloc` ends in `handle_alloc_error` and this firmware halts in its panic
        // handler, so the verdicts differ by design (each site is a hang finding there).
        .filter(|p| !p.ends_with("error-paths.rhai"))
        .collect();
    scripts.sort();
    assert!(scripts.len() >= 7, "{scripts:?}");
    scripts
}

/// Exit code and FAIL lines of one audit.
fn audit(
    config: &str,
    elf: &std::path::Path,
    script: &std::path::Path,
) -> (Option<i32>, Vec<String>, String) {
    // Outputs (the scripts' dumps) into a folder of this audit's, not memlife-out/ in the
    // crate; audits run two at a time, so each has its own.
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = tempdir(&format!("rust-audit-{n}"));
    let out = run_memlife(&[
        "audit",
        "--config",
        config,
        "--elf",
        elf.to_str().unwrap(),
        script.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    let text = stdout(&out);
    let fails = text
        .lines()
        .filter_map(|l| l.strip_prefix("FAIL "))
        .map(|l| l.split(':').next().unwrap().to_string())
        .collect();
    (out.status.code(), fails, format!("{text}{}", stderr(&out)))
}

/// Each script on each Rust scenario against the same script on the C firmware (heap4) with
/// its own example configuration: the same exit code and the same failing checks. Two audits
/// at a time (the machine's two cores; each is one QEMU and one memlife).
#[test]
fn every_script_gives_the_c_firmwares_verdict_on_both_rust_heaps() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let jobs: Vec<(std::path::PathBuf, &str)> = scripts()
        .into_iter()
        .flat_map(|s| RUST_SCENARIOS.iter().map(move |sc| (s.clone(), *sc)))
        .collect();
    // Build every ELF first, outside the threads.
    for scenario in RUST_SCENARIOS {
        for alloc in ["heap4", "rust-llff", "rust-tlsf"] {
            elf(alloc, scenario);
        }
    }
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while let Some((script, scenario)) = jobs.get(next.fetch_add(1, Ordering::SeqCst)) {
                    let (c_code, c_fails, c_text) =
                        audit(&config(scenario), &elf("heap4", scenario), script);
                    assert!(
                        c_code == Some(0) || c_code == Some(1),
                        "heap4-{scenario} {script:?}: {c_text}"
                    );
                    for alloc in ["llff", "tlsf"] {
                        let name = format!("rust-{alloc}-{scenario} {}", script.display());
                        let (code, fails, text) = audit(
                            &config(&format!("rust-{alloc}")),
                            &elf(&format!("rust-{alloc}"), scenario),
                            script,
                        );
                        assert_eq!(code, c_code, "{name}: {text}");
                        assert_eq!(fails, c_fails, "{name}: {text}");
                    }
                }
            });
        }
    });
}

/// The examples' own expectation: the leak build fails `leak` (and only it) on both heaps, the
/// leaked block named by its Rust function and source line, the loss per switch exact; with
/// legacy and with v0 symbol mangling.
#[test]
fn the_leak_names_the_rust_function_and_line() {
    let lifecycle = repo().join("scripts/lifecycle.rhai");
    for (alloc, scenario, per_switch, site) in [
        // LlffHeap: the contexts' Vec buffer (the first block the walk shows as new), 32 B.
        (
            "llff",
            "leak-on-switch",
            "drops 640 B per switch",
            "allocated at firmware::engine::graph_build (engine.rs:",
        ),
        // TlsfHeap: an op context, 96 B with its header.
        (
            "tlsf",
            "leak-on-switch",
            "drops 816 B per switch",
            "allocated at firmware::engine::prepare (engine.rs:",
        ),
        // The same firmware with v0 symbol mangling: the same names, the same configuration.
        (
            "tlsf",
            "leak-on-switch-v0",
            "drops 816 B per switch",
            "allocated at firmware::engine::prepare (engine.rs:",
        ),
    ] {
        let dir = tempdir(&format!("rust-leak-{alloc}-{scenario}"));
        let json = dir.join("report.json");
        let elf = elf(&format!("rust-{alloc}"), scenario);
        let out = run_memlife(&[
            "audit",
            "--config",
            &config(&format!("rust-{alloc}")),
            "--elf",
            elf.to_str().unwrap(),
            lifecycle.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ]);
        let text = stdout(&out);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{alloc}: {text}{}",
            stderr(&out)
        );
        let fails: Vec<&str> = text.lines().filter(|l| l.starts_with("FAIL ")).collect();
        assert_eq!(fails.len(), 1, "{alloc}: {text}");
        let fail = fails[0];
        assert!(fail.starts_with("FAIL leak: "), "{alloc}: {fail}");
        assert!(fail.contains(per_switch), "{alloc}: {fail}");
        assert!(fail.contains(site), "{alloc}: {fail}");
        // No mangled name or hash anywhere in the report.
        assert!(
            !text.contains("_ZN") && !text.contains("17h"),
            "{alloc}: {text}"
        );
        // The traced sizes (LlffHeap: from the requests, the allocator keeps no header) add up
        // to what the walks see at every phase boundary.
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let phases = report["phases"].as_array().unwrap();
        assert_eq!(phases.len(), 18, "{alloc}: 3 lifecycles of 6 phases");
        for p in phases {
            assert_eq!(p["accounting_drift"], 0, "{alloc}: {}", p["function"]);
        }
    }
}
