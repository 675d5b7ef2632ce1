//! The files memlife writes: never through a link planted beside them, never out of `--out`.
//! Offline targets (the committed heap fixtures) keep these fast.

#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn fixture(ext: &str) -> PathBuf {
    repo().join(format!("debugger/heap/testdata/heap4-fragmentation.{ext}"))
}

/// Plants links to `victim` at every temporary name an earlier memlife used for `path`.
fn plant_links(path: &Path, victim: &Path) -> Vec<PathBuf> {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let dir = path.parent().unwrap();
    let planted = vec![
        dir.join(format!("{name}.tmp~")),
        path.with_extension("tmp~"),
    ];
    for p in &planted {
        std::os::unix::fs::symlink(victim, p).unwrap();
    }
    planted
}

#[test]
fn snapshot_and_svg_outputs_do_not_write_through_planted_links() {
    let dir = tempdir("outputs-planted");
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let snap = dir.join("out.mlsnap");
    let svg = dir.join("map.svg");
    let mut planted = plant_links(&snap, &victim);
    planted.extend(plant_links(&svg, &victim));
    let elf = fixture("elf");
    let out = run_memlife(&[
        "snapshot",
        "--elf",
        elf.to_str().unwrap(),
        "--snapshot",
        fixture("mlsnap").to_str().unwrap(),
        "-o",
        snap.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run_memlife(&[
        "heap",
        "--elf",
        elf.to_str().unwrap(),
        "--snapshot",
        fixture("mlsnap").to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(std::fs::read(&snap).unwrap().starts_with(b"MLSNAP"));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    for p in &planted {
        assert!(p.is_symlink(), "{} is still the planted link", p.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn healthy_config() -> PathBuf {
    repo().join("examples/healthy/memlife.toml")
}

/// Temporary files any memlife writer may leave (its own names and the earlier ones); the links
/// a test planted are not files memlife left.
fn stray_temporaries(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let planted = entry.file_type().unwrap().is_symlink();
        if !planted && (name.ends_with("tmp~") || name.contains(".tmp-")) {
            found.push(name);
        }
        if entry.file_type().unwrap().is_dir() {
            found.extend(stray_temporaries(&entry.path()));
        }
    }
    found
}

/// One unwritable output (`--json` under a regular file) does not stop the others; a link
/// planted beside `--junit` is not written through; a script's dump into a linked folder inside
/// `--out` is refused and nothing lands outside.
#[test]
fn every_output_that_can_be_written_is_written() {
    let dir = tempdir("outputs-each");
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::fs::write(dir.join("a-file"), "not a directory").unwrap();
    let json = dir.join("a-file/report.json");
    let junit = dir.join("junit.xml");
    let planted = plant_links(&junit, &victim);
    let (report, trace) = (dir.join("report"), dir.join("run.trace.json"));
    let (out, outside) = (dir.join("out"), dir.join("outside"));
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, out.join("linked")).unwrap();
    let script = dir.join("dumps.rhai");
    std::fs::write(
        &script,
        "let t = target();\nlet h = t.heap();\ncheck(\"walked\", h.size > 0, \"\");\n\
         dump(h, \"kept/heap.json\");\ndump(h, \"linked/heap.json\");\n",
    )
    .unwrap();
    let o = run_memlife(&[
        "audit",
        "--config",
        healthy_config().to_str().unwrap(),
        script.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    // The failures are named, each with its cause.
    assert!(err.contains(&format!("--json {}", json.display())), "{err}");
    assert!(
        err.contains(&format!("cannot write {}", json.display())),
        "{err}"
    );
    assert!(err.contains("symbolic link"), "the refused dump: {err}");
    // The other outputs hold this run's results.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<testcase name=\"walked\""), "{xml}");
    assert!(xml.contains("symbolic link"), "the script error: {xml}");
    assert!(
        std::fs::read_to_string(report.join("index.html"))
            .unwrap()
            .contains("walked")
    );
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    assert!(t["traceEvents"].is_array());
    assert!(out.join("kept/heap.json").is_file());
    // Nothing through links, nothing left over.
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(planted.iter().all(|p| p.is_symlink()));
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(stray_temporaries(&dir), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

fn junit_of(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// A run killed with SIGKILL leaves outputs that say it did not finish, not the passing
/// results of the run before it.
#[test]
fn a_killed_run_leaves_no_earlier_results_behind() {
    let dir = tempdir("outputs-stale");
    let (json, junit) = (dir.join("audit.json"), dir.join("junit.xml"));
    let quick = dir.join("quick.rhai");
    std::fs::write(
        &quick,
        "let t = target();\ncheck(\"walked\", t.heap().size > 0, \"\");\n",
    )
    .unwrap();
    let args = |script: &Path| {
        vec![
            "audit".to_string(),
            "--config".into(),
            healthy_config().display().to_string(),
            script.display().to_string(),
            "--json".into(),
            json.display().to_string(),
            "--junit".into(),
            junit.display().to_string(),
        ]
    };
    let first = run_memlife(&args(&quick).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let passed = junit_of(&junit);
    assert!(passed.contains("failures=\"0\" errors=\"0\""), "{passed}");

    let slow = dir.join("slow.rhai");
    std::fs::write(
        &slow,
        "let t = target();\nloop { t.phase(\"inference_run\"); }\n",
    )
    .unwrap();
    let mut cmd = memlife();
    cmd.args(args(&slow))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut guard = ChildGuard(cmd.spawn().unwrap());
    let start = std::time::Instant::now();
    while junit_of(&junit) == passed {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "the second run left the first run's passing JUnit in place"
        );
        assert!(
            guard.0.try_wait().unwrap().is_none(),
            "the endless audit ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Kill it the hard way (no cleanup runs), as a crash or an OOM kill would.
    drop(guard);
    let xml = junit_of(&junit);
    assert!(xml.contains("errors=\"1\""), "{xml}");
    assert!(xml.contains("has not finished"), "{xml}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["exit_code"], 2, "{report}");
    assert_eq!(
        report["checks"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An audit that cannot start (nothing listens) says why in its outputs.
#[test]
fn an_audit_that_cannot_start_says_why_in_its_outputs() {
    let dir = tempdir("outputs-early");
    let junit = dir.join("junit.xml");
    std::fs::write(&junit, "<testsuites failures=\"0\"/>").unwrap();
    let script = dir.join("s.rhai");
    std::fs::write(&script, "check(\"x\", true, \"\");").unwrap();
    let elf = fixture("elf");
    let o = run_memlife(&[
        "audit",
        "--elf",
        elf.to_str().unwrap(),
        "--gdb",
        "127.0.0.1:1",
        script.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let xml = junit_of(&junit);
    assert!(xml.contains("errors=\"1\""), "{xml}");
    assert!(xml.contains("127.0.0.1:1"), "{xml}");
    let _ = std::fs::remove_dir_all(&dir);
}
