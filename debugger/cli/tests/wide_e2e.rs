//! Wide runs end to end: `memlife audit` over a `[[matrix]]` on QEMU, targets two at a time, each
//! in its own memlife and QEMU: the verdicts equal single runs', the merged JUnit has a suite per
//! target, `--shard` partitions the list, and a target that hangs or has a broken ELF is an
//! error for itself only.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;

/// The scenarios of the first test: one that passes and three that fail different checks.
const WIDE: &[(&str, &str)] = &[
    ("healthy", "pass"),
    ("leak-on-switch", "fail"),
    ("load-peak", "fail"),
    ("fragmentation", "fail"),
];

fn lifecycle() -> PathBuf {
    repo().join("scripts/lifecycle.rhai")
}

fn example(name: &str) -> PathBuf {
    repo().join("examples").join(name).join("memlife.toml")
}

/// `memlife ARGS` with room for several audits in a row.
fn run_wide(args: &[&str]) -> std::process::Output {
    let mut cmd = memlife();
    cmd.args(args);
    run_with_timeout(cmd, Duration::from_secs(600))
}

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// (name, verdict) of each target of a summary, in its order.
fn verdicts(summary: &serde_json::Value) -> Vec<(String, String)> {
    summary["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The `<testsuite>` elements of a JUnit file: (name, the names of its failed or errored cases).
fn suites(xml: &str) -> Vec<(String, Vec<String>)> {
    xml.split("<testsuite ")
        .skip(1)
        .map(|s| {
            let name = s.split('"').nth(1).unwrap().to_string();
            let failed = s
                .split("<testcase ")
                .skip(1)
                .filter(|c| {
                    let body = c.split("</testcase>").next().unwrap();
                    body.contains("<failure") || body.contains("<error")
                })
                .map(|c| c.split('"').nth(1).unwrap().to_string())
                .collect();
            (name, failed)
        })
        .collect()
}

fn toml_path(p: &Path) -> String {
    format!("{:?}", p.display().to_string())
}

#[test]
fn a_matrix_two_at_a_time_gives_the_verdicts_of_single_runs_with_one_suite_per_target() {
    let dir = tempdir("wide-matrix");
    // Single runs first: what each target must say in the wide run.
    let mut single = Vec::new();
    for (name, _) in WIDE {
        let elf = elf("heap4", name);
        let junit = dir.join(format!("{name}.single.xml"));
        let out = run_memlife(&[
            "audit",
            lifecycle().to_str().unwrap(),
            "--config",
            example(name).to_str().unwrap(),
            "--elf",
            elf.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
            "--out",
            dir.join("single").to_str().unwrap(),
        ]);
        let verdict = match out.status.code() {
            Some(0) => "pass",
            Some(1) => "fail",
            other => panic!(
                "single run of {name} ended with {other:?}: {}",
                stderr(&out)
            ),
        };
        let failed = suites(&std::fs::read_to_string(&junit).unwrap())
            .pop()
            .unwrap()
            .1;
        single.push((name.to_string(), verdict.to_string(), failed));
    }
    let mut matrix = String::new();
    for (name, expect) in WIDE {
        matrix.push_str(&format!(
            "[[matrix]]\nname = \"{name}\"\nconfig = {}\nelf = {}\nscript = {}\nexpect = \"{expect}\"\n\n",
            toml_path(&example(name)),
            toml_path(&elf("heap4", name)),
            toml_path(&lifecycle()),
        ));
    }
    let matrix_file = dir.join("memlife.toml");
    std::fs::write(&matrix_file, matrix).unwrap();
    let out_dir = dir.join("wide");
    let wide = run_wide(&[
        "audit",
        "--config",
        matrix_file.to_str().unwrap(),
        "-j",
        "2",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    // Three targets fail a check: exit 1, as one audit that fails a check.
    assert_eq!(wide.status.code(), Some(1), "{}", stderr(&wide));
    let s = summary(&out_dir);
    assert_eq!(s["jobs"], 2);
    let got = verdicts(&s);
    let want: Vec<(String, String)> = single
        .iter()
        .map(|(n, v, _)| (n.clone(), v.clone()))
        .collect();
    assert_eq!(got, want, "wide verdicts differ from single runs");
    let merged = std::fs::read_to_string(out_dir.join("junit.xml")).unwrap();
    let merged_suites = suites(&merged);
    let names: Vec<&str> = merged_suites.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, WIDE.iter().map(|(n, _)| *n).collect::<Vec<_>>());
    for ((name, failed), (_, _, single_failed)) in merged_suites.iter().zip(&single) {
        assert_eq!(failed, single_failed, "failed cases of {name}");
        assert!(
            out_dir.join(name).join("audit.json").is_file()
                && out_dir.join(name).join("report/index.html").is_file(),
            "outputs of {name}"
        );
    }
    let table = stdout(&wide);
    assert!(
        table.contains("4 targets: 1 passed, 3 failed, 0 errors"),
        "{table}"
    );
    // The same list with --expect: every verdict is the expected one, exit 0.
    let expected = run_wide(&[
        "audit",
        "--config",
        matrix_file.to_str().unwrap(),
        "-j",
        "2",
        "--expect",
        "--out",
        dir.join("expect").to_str().unwrap(),
    ]);
    assert_eq!(expected.status.code(), Some(0), "{}", stdout(&expected));
    assert_eq!(verdicts(&summary(&dir.join("expect"))), want);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shards_partition_the_list() {
    let dir = tempdir("wide-shard");
    // Targets whose firmware does not exist end at once (exit 2): the test is about which
    // targets each shard runs.
    let names = ["a", "b", "c", "d", "e"];
    let mut matrix = String::new();
    for n in names {
        matrix.push_str(&format!(
            "[[matrix]]\nname = \"{n}\"\nelf = \"missing-{n}.elf\"\nscript = {}\n",
            toml_path(&lifecycle())
        ));
    }
    let file = dir.join("matrix.toml");
    std::fs::write(&file, matrix).unwrap();
    let mut seen = Vec::new();
    for shard in ["1/2", "2/2"] {
        let out = dir.join(shard.replace('/', "of"));
        let run = run_wide(&[
            "audit",
            "--config",
            file.to_str().unwrap(),
            "--shard",
            shard,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
        let s = summary(&out);
        assert_eq!(s["shard"], shard);
        assert_eq!(s["listed"], 5);
        let part: Vec<String> = verdicts(&s).into_iter().map(|(n, _)| n).collect();
        assert!(verdicts(&s).iter().all(|(_, v)| v == "error"), "{s:#}");
        seen.push(part);
    }
    assert_eq!(seen[0], ["a", "c", "e"]);
    assert_eq!(seen[1], ["b", "d"]);
    let bad = run_memlife(&[
        "audit",
        "--config",
        file.to_str().unwrap(),
        "--shard",
        "3/2",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("I/N"), "{}", stderr(&bad));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_target_that_hangs_or_has_a_broken_elf_is_an_error_for_itself_only() {
    let dir = tempdir("wide-errors");
    let broken = dir.join("broken.elf");
    std::fs::write(&broken, b"\x7fELF this is not an ELF file").unwrap();
    // main is entered once: the second entry never comes, and a 10-minute breakpoint timeout
    // leaves it to --target-timeout to stop the audit.
    let hang = dir.join("hang.rhai");
    std::fs::write(&hang, "let t = target();\nt.run_to(\"main\", 2);\n").unwrap();
    let healthy = elf("heap4", "healthy");
    let matrix = format!(
        "[[matrix]]\nname = \"hang\"\nconfig = {cfg}\nelf = {elf}\nscript = {hang}\ntimeout = 600\n\n\
         [[matrix]]\nname = \"broken\"\nconfig = {cfg}\nelf = {broken}\n\n\
         [[matrix]]\nname = \"healthy\"\nconfig = {cfg}\nelf = {elf}\n",
        cfg = toml_path(&example("healthy")),
        elf = toml_path(&healthy),
        hang = toml_path(&hang),
        broken = toml_path(&broken),
    );
    let file = dir.join("matrix.toml");
    std::fs::write(&file, matrix).unwrap();
    let out = dir.join("out");
    let started = std::time::Instant::now();
    let run = run_wide(&[
        "audit",
        lifecycle().to_str().unwrap(),
        "--config",
        file.to_str().unwrap(),
        "-j",
        "2",
        "--target-timeout",
        "45",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(2), "{}", stdout(&run));
    assert!(
        started.elapsed() < Duration::from_secs(200),
        "the hung target was not stopped"
    );
    let s = summary(&out);
    assert_eq!(
        verdicts(&s),
        [
            ("hang".to_string(), "error".to_string()),
            ("broken".to_string(), "error".to_string()),
            ("healthy".to_string(), "pass".to_string()),
        ]
    );
    let errors: Vec<&str> = s["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["error"].as_str().unwrap_or(""))
        .collect();
    assert!(errors[0].contains("target-timeout"), "{errors:?}");
    assert!(!errors[1].is_empty(), "{errors:?}");
    // The others' outputs are whole: the healthy audit's JSON says it finished and passed.
    let audit: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("healthy/audit.json")).unwrap())
            .unwrap();
    assert_eq!(audit["exit_code"], 0, "{audit:#}");
    let merged = suites(&std::fs::read_to_string(out.join("junit.xml")).unwrap());
    let names: Vec<&str> = merged.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["hang", "broken", "healthy"]);
    assert!(!merged[0].1.is_empty() && !merged[1].1.is_empty() && merged[2].1.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The pids whose parent is `pid` (from /proc).
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) {
            // "PID (COMM) STATE PPID ...": COMM may hold spaces, so split after its ')'.
            let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
            let ppid = after.split_whitespace().nth(1);
            if ppid == Some(pid.to_string().as_str()) {
                out.push(child);
            }
        }
    }
    out
}

/// Whether `pid` is still a running process (a zombie waiting for its reaper is not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().to_string()))
        .is_some_and(|r| !r.starts_with('Z') && !r.starts_with('X'))
}

/// A wide run killed with SIGKILL (a CI runner's timeout) runs no destructor: its children get
/// SIGTERM from the kernel (parent-death signal) and stop their QEMUs.
#[test]
fn children_and_their_qemus_die_with_a_killed_wide_run() {
    let dir = tempdir("wide-killed");
    let mut run = spawn_hanging_wide_run(&dir);
    let (child, qemu) = child_and_qemu(run.0.id());
    run.0.kill().unwrap();
    let _ = run.0.wait();
    let killed = std::time::Instant::now();
    while (alive(child) || alive(qemu)) && killed.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !alive(child),
        "the child memlife {child} outlived its killed parent"
    );
    assert!(!alive(qemu), "the QEMU {qemu} outlived the killed wide run");
}

/// A list of one target whose script waits for a second entry of `main` that never comes, and
/// a wide run of it (output under `dir/out`) started in the background, stdout and stderr
/// discarded.
fn spawn_hanging_wide_run(dir: &Path) -> ChildGuard {
    let hang = dir.join("hang.rhai");
    std::fs::write(&hang, "let t = target();\nt.run_to(\"main\", 2);\n").unwrap();
    let file = dir.join("matrix.toml");
    std::fs::write(
        &file,
        format!(
            "[[matrix]]\nname = \"hang\"\nconfig = {}\nelf = {}\nscript = {}\ntimeout = 600\n",
            toml_path(&example("healthy")),
            toml_path(&elf("heap4", "healthy")),
            toml_path(&hang)
        ),
    )
    .unwrap();
    let mut cmd = memlife();
    cmd.args(["audit", "--config"])
        .arg(&file)
        .args(["--target-timeout", "600", "--out"])
        .arg(dir.join("out"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    ChildGuard(cmd.spawn().unwrap())
}

/// The wide run's child memlife and, under it, its QEMU, once both are running.
fn child_and_qemu(parent: u32) -> (u32, u32) {
    let started = std::time::Instant::now();
    loop {
        let found = children_of(parent)
            .into_iter()
            .find_map(|c| children_of(c).first().map(|q| (c, *q)));
        if let Some(pair) = found {
            return pair;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the wide run started no child with a QEMU"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// SIGTERM to a wide run whose one target hangs: the target is stopped, memlife exits 130, and
/// the summary says the run was interrupted with that exit code, not that it finished.
#[test]
fn a_wide_run_stopped_by_sigterm_says_so_in_its_summary() {
    let dir = tempdir("wide-term");
    let out = dir.join("out");
    let mut run = spawn_hanging_wide_run(&dir);
    let parent = run.0.id();
    child_and_qemu(parent);
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &parent.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let stopped = std::time::Instant::now();
    let status = loop {
        if let Some(status) = run.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            stopped.elapsed() < Duration::from_secs(60),
            "the wide run did not end after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(130));
    let s = summary(&out);
    assert_eq!(
        (&s["finished"], &s["interrupted"], &s["exit"]),
        (&false.into(), &true.into(), &130.into()),
        "{s:#}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether python3's XML parser (expat, strict about XML 1.0's characters) reads `path`.
fn well_formed(path: &Path) -> Result<(), String> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, xml.dom.minidom as m; m.parse(sys.argv[1])",
        ])
        .arg(path)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Issue 30, round-2 red team: a check named with U+FFFF (or text from firmware RAM starting
/// with it) made the JUnit of the audit, and the merged `junit.xml` of a wide run, not
/// well-formed, so CI lost every target's results.
#[test]
fn junit_stays_well_formed_whatever_characters_a_check_carries() {
    let dir = tempdir("wide-xml-chars");
    let script = dir.join("chars.rhai");
    std::fs::write(
        &script,
        "let t = target();\n\
         check(\"ok\\uFFFF\", true, \"fine\");\n\
         check(\"bad \\uFFFE\\u0085\\u0001\", false, \"\\uFFFF layer \\u009B[2J\");\n\
         warn(\"w\\u007F\", \"\\uFDD0\");\n",
    )
    .unwrap();
    let matrix = format!(
        "[[matrix]]\nname = \"chars\"\nconfig = {}\nscript = {}\n",
        toml_path(&example("healthy")),
        toml_path(&script)
    );
    let file = dir.join("matrix.toml");
    std::fs::write(&file, matrix).unwrap();
    let out_dir = dir.join("out");
    let out = run_wide(&[
        "audit",
        "--config",
        file.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    for junit in [out_dir.join("chars/junit.xml"), out_dir.join("junit.xml")] {
        let xml = std::fs::read_to_string(&junit).unwrap();
        assert!(xml.contains("ok\u{fffd}"), "{xml}");
        assert!(
            !xml.contains('\u{ffff}') && !xml.contains('\u{fffe}'),
            "{xml}"
        );
        well_formed(&junit).unwrap_or_else(|e| panic!("{}: {e}\n{xml}", junit.display()));
    }
}
