//! Audits of the RTOS firmware (FreeRTOS V11) in QEMU with its tasks told apart: per-task live
//! bytes against gdb's own walk (firmware/tools/rtoswalk.py), a leak named with its task and
//! site, no false leak on the healthy firmware, an assert reported at once with FILE:LINE and
//! task, the inference task's smallest stack margin with its layer, the firmware's tick count
//! in the report, and roles limited to a task or a caller.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use common::*;
use memlife_rsp::QemuProcess;
use serde_json::Value;

const BOARDS: [&str; 2] = ["mps2-an385", "netduinoplus2"];

fn rtos_elf(board: &str, scenario: &str) -> PathBuf {
    memlife_testkit::firmware::elf("rtos", &format!("{board}-{scenario}"))
}

/// The line of firmware/rtos/task_churn.c that holds `needle` (the test follows the source).
fn churn_line(needle: &str) -> usize {
    let src = std::fs::read_to_string(repo().join("firmware/rtos/task_churn.c")).unwrap();
    src.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no `{needle}` in task_churn.c"))
        + 1
}

/// QEMU halted at `vTaskStartScheduler` with the timing self-check's tolerance raised: without
/// `-icount` (far too slow for a traced audit) a loaded host makes QEMU lose SysTick interrupts,
/// and the check would assert in task Check (firmware/README.md, "The timing self-check"),
/// which memlife rightly reports but which is not what these tests are about.
fn qemu_for_audit(board: &str, elf: &Path) -> QemuProcess {
    let q = QemuProcess::start(board, elf, &[]).unwrap();
    let out = gdb_batch(
        elf,
        &q.addr().to_string(),
        &[
            "break vTaskStartScheduler",
            "continue",
            "set var g_check_tolerance = 1000000",
            "delete",
            "disconnect",
        ],
    );
    assert!(
        stdout(&out).contains("vTaskStartScheduler"),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    q
}

/// `memlife audit` of `elf` (on a QEMU of its own, see [`qemu_for_audit`]) with `script` and
/// extra arguments; the report JSON is written to `json`.
fn audit(board: &str, elf: &Path, script: &Path, json: &Path, extra: &[&str]) -> Output {
    let q = qemu_for_audit(board, elf);
    let server = q.addr().to_string();
    let mut args = vec![
        "audit",
        "--elf",
        elf.to_str().unwrap(),
        "--gdb",
        &server,
        script.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let mut cmd = memlife();
    cmd.args(&args);
    run_with_timeout(cmd, Duration::from_secs(300))
}

fn leak_script() -> PathBuf {
    repo().join("scripts/leak.rhai")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// What gdb's walk says each task's heap blocks are: block header address → (task, size).
fn gdb_task_blocks(elf: &Path, server: &str) -> BTreeMap<u64, (String, u64)> {
    let walk = format!(
        "source {}",
        repo().join("firmware/tools/rtoswalk.py").display()
    );
    let out = gdb_batch(elf, server, &[&walk, "rtos-tasks json", "disconnect"]);
    let text = stdout(&out);
    let line = text
        .lines()
        .find(|l| l.starts_with("[{"))
        .unwrap_or_else(|| panic!("no rtos-tasks JSON:\n{text}\n{}", stderr(&out)));
    let tasks: Vec<Value> = serde_json::from_str(line).unwrap();
    let mut blocks = BTreeMap::new();
    for t in &tasks {
        for key in ["tcb_block", "stack_block"] {
            if let Some(b) = t[key].as_array() {
                let name = t["name"].as_str().unwrap().to_string();
                blocks.insert(b[0].as_u64().unwrap(), (name, b[1].as_u64().unwrap()));
            }
        }
    }
    blocks
}

/// `memlife heap` stopped inside a lifecycle (workers and sleepers come and go), the target
/// left halted; then gdb walks the same halted QEMU: every task's TCB and stack block has that
/// task in memlife's blocks, and the per-task bytes and blocks are the same.
fn per_task_bytes_match_gdb(board: &str) {
    let elf = rtos_elf(board, "healthy");
    let q = QemuProcess::start(board, &elf, &["-icount", "shift=auto"]).unwrap();
    let server = q.addr().to_string();
    let heap = memlife_json(&[
        "heap",
        "--elf",
        elf.to_str().unwrap(),
        "--gdb",
        &server,
        "--at",
        "op_invoke",
        "--hit",
        "150",
        "--timeout",
        "60",
        "--leave",
        "halted",
        "--json",
    ]);
    let gdb = gdb_task_blocks(&elf, &server);
    assert!(
        gdb.len() >= 10,
        "{board}: gdb sees {} task blocks",
        gdb.len()
    );
    assert_eq!(heap["by_task_from"], "task blocks", "{board}");
    // Block by block.
    let mine: BTreeMap<u64, (Option<&str>, u64)> = heap["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["free"] == false)
        .map(|b| {
            (
                b["addr"].as_u64().unwrap(),
                (b["task"].as_str(), b["size"].as_u64().unwrap()),
            )
        })
        .collect();
    for (addr, (task, size)) in &gdb {
        assert_eq!(
            mine.get(addr),
            Some(&(Some(task.as_str()), *size)),
            "{board}: block {addr:#x} of task {task}"
        );
    }
    // Per task: the sums gdb's walk gives.
    let mut sums: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for (task, size) in gdb.values() {
        let s = sums.entry(task).or_default();
        s.0 += size;
        s.1 += 1;
    }
    let by_task = heap["by_task"].as_object().unwrap();
    for (task, (bytes, blocks)) in &sums {
        assert_eq!(
            (
                by_task[*task]["bytes"].as_u64(),
                by_task[*task]["blocks"].as_u64()
            ),
            (Some(*bytes), Some(*blocks)),
            "{board}: task {task}"
        );
    }
    let named: Vec<&String> = by_task.keys().filter(|k| *k != "(untraced)").collect();
    assert_eq!(named.len(), sums.len(), "{board}: {named:?} / {sums:?}");
    let total: u64 = sums.values().map(|s| s.0).sum();
    assert_eq!(
        heap["task_blocks"]["bytes"].as_u64(),
        Some(total),
        "{board}"
    );
}

#[test]
fn per_task_live_bytes_equal_gdbs_walk_on_mps2_an385() {
    per_task_bytes_match_gdb("mps2-an385");
}

#[test]
fn per_task_live_bytes_equal_gdbs_walk_on_netduinoplus2() {
    per_task_bytes_match_gdb("netduinoplus2");
}

/// The check's message: the `leak` line of memlife's output.
fn leak_line(out: &Output) -> String {
    let text = stdout(out);
    text.lines()
        .find(|l| l.contains(" leak: "))
        .unwrap_or_else(|| panic!("no leak line:\n{text}\n{}", stderr(out)))
        .to_string()
}

/// leak.rhai over 6 more cycles on `board`'s `scenario` build, the JSON report into `json`:
/// memlife's output and its leak line.
fn leak_audit(board: &str, scenario: &str, json: &Path) -> (Output, String) {
    let out = audit(
        board,
        &rtos_elf(board, scenario),
        &leak_script(),
        json,
        &["--budget", "more_cycles=6"],
    );
    let msg = leak_line(&out);
    (out, msg)
}

#[test]
fn task_leak_fails_naming_the_task_and_the_site_on_both_boards() {
    let dir = tempdir("task-leak");
    let line = churn_line("\"logger:line\"");
    for board in BOARDS {
        let json = dir.join(format!("{board}.json"));
        let (out, msg) = leak_audit(board, "task-leak", &json);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{board}: {msg}\n{}",
            stderr(&out)
        );
        assert!(msg.starts_with("FAIL leak"), "{board}: {msg}");
        assert!(
            msg.contains("allocated by task Logger at"),
            "{board}: {msg}"
        );
        assert!(
            msg.contains(&format!("logger_task (task_churn.c:{line})")),
            "{board}: the site, line {line}: {msg}"
        );
        // Nothing but the Logger's lines is called a leak.
        let split = msg
            .split_once("(by task: ")
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(s, _)| s)
            .unwrap_or_else(|| panic!("{board}: no per-task split: {msg}"));
        assert!(
            split.starts_with("Logger ") && !split.contains(", "),
            "{board}: {split}"
        );
        // The report's events carry their task: the Logger's lines among them.
        let report = read_json(&json);
        let logger = report["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["task"] == "Logger" && e["kind"] == "alloc")
            .count();
        assert!(logger >= 2, "{board}: {logger} Logger allocations traced");
    }
}

#[test]
fn healthy_passes_with_no_false_leak_in_ten_runs() {
    let dir = tempdir("healthy-10");
    for run in 0..10 {
        // Both boards, in turn.
        let board = BOARDS[run % 2];
        let json = dir.join(format!("{run}.json"));
        let (out, msg) = leak_audit(board, "healthy", &json);
        assert_eq!(
            out.status.code(),
            Some(0),
            "run {run} on {board}: {msg}\n{}",
            stderr(&out)
        );
        assert!(msg.starts_with("PASS leak"), "run {run} on {board}: {msg}");
    }
}

#[test]
fn an_assert_ends_the_audit_at_once_with_its_file_line_and_task() {
    let dir = tempdir("assert");
    let line = churn_line("configASSERT(g_log_lines <= ASSERT_LOG_LINES)");
    let want = format!("the firmware asserted at rtos/task_churn.c:{line} (in task Logger)");
    for board in BOARDS {
        let json = dir.join(format!("{board}.json"));
        let started = Instant::now();
        let out = audit(
            board,
            &rtos_elf(board, "assert"),
            &leak_script(),
            &json,
            &[],
        );
        let took = started.elapsed();
        assert_eq!(out.status.code(), Some(2), "{board}: {}", stderr(&out));
        assert!(stderr(&out).contains(&want), "{board}: {}", stderr(&out));
        let report = read_json(&json);
        assert!(
            report["error"]["message"].as_str().unwrap().contains(&want),
            "{board}: {}",
            report["error"]
        );
        // At once: the Logger asserts at its third line (1.5 s of firmware time: tick 150 at
        // 100 Hz), and the audit ends there, long before leak.rhai's 10 traced and 50 untraced
        // cycles would. How many phases fit in those 150 ticks depends on how fast the host
        // runs QEMU, so the firmware's own clock is what is checked.
        let ticks = &report["run"]["firmware_time"]["ticks"];
        let end = ticks["end"].as_u64().unwrap();
        assert!(
            (140..250).contains(&end),
            "{board}: the audit ended at tick {end}: {ticks}"
        );
        assert!(took < Duration::from_secs(60), "{board}: {took:?}");
    }
}

/// One lifecycle, traced: a script of its own.
fn one_cycle_script(dir: &Path) -> PathBuf {
    let script = dir.join("one_cycle.rhai");
    std::fs::write(
        &script,
        "let t = target();\nt.trace(true);\nt.cycle();\nfor m in t.stack_margins() { print(`MARGIN ${m.task} ${m.words} ${m.label}`); }\ncheck(\"cycle\", true, \"one lifecycle\");\n",
    )
    .unwrap();
    script
}

/// The Infer task's stack margin in the report, and the script's line for it.
fn infer_margin(board: &str, scenario: &str, dir: &Path) -> (Value, String) {
    let json = dir.join(format!("{board}-{scenario}.json"));
    let out = audit(
        board,
        &rtos_elf(board, scenario),
        &one_cycle_script(dir),
        &json,
        &[],
    );
    assert!(out.status.success(), "{board}: {}", stderr(&out));
    let report = read_json(&json);
    let infer = report["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == "Infer")
        .unwrap_or_else(|| panic!("{board}: no Infer in {}", report["tasks"]))
        .clone();
    let printed = stdout(&out)
        .lines()
        .find(|l| l.starts_with("MARGIN Infer "))
        .unwrap_or_else(|| panic!("{board}: no margin printed:\n{}", stdout(&out)))
        .to_string();
    (infer["stack_margin"].clone(), printed)
}

#[test]
fn stack_deep_reports_the_inference_tasks_smallest_margin_and_its_layer() {
    let dir = tempdir("stack-deep");
    for board in BOARDS {
        let (deep, printed) = infer_margin(board, "stack-deep", &dir);
        // conv_b, layer 7, stages its weights on the stack: its end leaves a few words (the
        // deepest point, interrupted there, 8 or 9: firmware/README.md).
        assert_eq!(deep["label"], "conv_b", "{board}: {deep}");
        assert_eq!(deep["arg"], 7, "{board}: {deep}");
        let words = deep["words"].as_u64().unwrap();
        assert!((8..64).contains(&words), "{board}: {words} words left");
        assert_eq!(deep["bytes"].as_u64(), Some(words * 4), "{board}");
        assert_eq!(printed, format!("MARGIN Infer {words} conv_b"), "{board}");
        // The healthy build's 1024-word stack keeps hundreds.
        let (healthy, _) = infer_margin(board, "healthy", &dir);
        assert!(
            healthy["words"].as_u64().unwrap() > 500,
            "{board}: healthy {healthy}"
        );
    }
}

#[test]
fn events_and_phases_carry_the_firmwares_tick_count() {
    let dir = tempdir("ticks");
    let board = "mps2-an385";
    let elf = rtos_elf(board, "healthy");
    let q = qemu_for_audit(board, &elf);
    let server = q.addr().to_string();
    let json = dir.join("ticks.json");
    let mut cmd = memlife();
    cmd.args([
        "audit",
        "--elf",
        elf.to_str().unwrap(),
        "--gdb",
        &server,
        one_cycle_script(&dir).to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--leave",
        "halted",
    ]);
    let out = run_with_timeout(cmd, Duration::from_secs(120));
    assert!(out.status.success(), "{}", stderr(&out));
    let report = read_json(&json);
    let ticks: Vec<u64> = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["tick"].as_u64().expect("every event has its tick"))
        .collect();
    assert!(ticks.len() > 10, "{} events", ticks.len());
    assert!(
        ticks.windows(2).all(|w| w[0] <= w[1]),
        "ticks never go back: {ticks:?}"
    );
    let phases = report["phases"].as_array().unwrap();
    let last_end = phases
        .iter()
        .map(|p| {
            p["ticks"]["end"]
                .as_u64()
                .expect("every phase has its ticks")
        })
        .max()
        .unwrap();
    assert!(last_end > 0, "the lifecycle takes ticks");
    // The firmware's own count, read by gdb where the audit left the target.
    let out = gdb_batch(&elf, &server, &["print/d xTickCount", "disconnect"]);
    let now: u64 = stdout(&out)
        .lines()
        .find_map(|l| l.strip_prefix("$1 = ").map(|v| v.trim().to_string()))
        .unwrap_or_else(|| panic!("no xTickCount:\n{}\n{}", stdout(&out), stderr(&out)))
        .parse()
        .unwrap();
    let last_event = *ticks.last().unwrap();
    assert!(
        last_end <= now && last_event <= now && now - last_end < 50,
        "phases end at tick {last_end}, events at {last_event}, xTickCount {now}"
    );
}

/// The lifecycle's roles mapped plainly, or limited to the inference task's calls (release to
/// calls from `infer_task`, the task's entry, where `infer_cycle` is inlined).
fn roles_config(dir: &Path, scoped: bool) -> PathBuf {
    let role = |role: &str, function: &str, scope: &str| {
        if scoped {
            format!("{role} = {{ function = \"{function}\", {scope} }}\n")
        } else {
            format!("{role} = \"{function}\"\n")
        }
    };
    let text = format!(
        "[phases]\n{}{}{}{}",
        role("load", "model_load", "task = \"Infer\""),
        role("build", "graph_build", "task = \"Infer\""),
        role("run", "inference_run", "task = \"Infer\""),
        role("release", "model_release", "caller = \"infer_task\""),
    );
    let path = dir.join(if scoped { "scoped.toml" } else { "plain.toml" });
    std::fs::write(&path, text).unwrap();
    path
}

/// Per phase function: the tasks of the traced events inside its calls, with their counts.
fn tasks_by_phase(report: &Value) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut out: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for e in report["events"].as_array().unwrap() {
        if let (Some(phase), Some(task)) = (e["phase"].as_str(), e["task"].as_str()) {
            *out.entry(phase.to_string())
                .or_default()
                .entry(task.to_string())
                .or_default() += 1;
        }
    }
    out
}

/// Roles limited to a task or a caller: other tasks allocate inside the lifecycle's phase
/// windows (the plain run shows it), and the scoped run counts only the inference task's
/// allocations in those phases, the same ones the plain run saw from that task.
#[test]
fn roles_scoped_to_a_task_or_a_caller_count_only_its_allocations() {
    let dir = tempdir("scoped-roles");
    let board = "mps2-an385";
    let elf = rtos_elf(board, "healthy");
    let script = dir.join("cycles.rhai");
    std::fs::write(
        &script,
        "let t = target();\nt.trace(true);\nt.cycles(3);\ncheck(\"cycles\", true, \"three cycles\");\n",
    )
    .unwrap();
    let run = |scoped: bool| {
        let json = dir.join(format!("{scoped}.json"));
        let cfg = roles_config(&dir, scoped);
        let out = audit(
            board,
            &elf,
            &script,
            &json,
            &["--config", cfg.to_str().unwrap()],
        );
        assert!(out.status.success(), "scoped {scoped}: {}", stderr(&out));
        read_json(&json)
    };
    let (plain, scoped) = (run(false), run(true));
    let scoped_phases = [
        "model_load",
        "graph_build",
        "inference_run",
        "model_release",
    ];
    let (before, after) = (tasks_by_phase(&plain), tasks_by_phase(&scoped));
    let foreign = |by: &BTreeMap<String, BTreeMap<String, u64>>| -> u64 {
        scoped_phases
            .iter()
            .filter_map(|p| by.get(*p))
            .flat_map(|tasks| tasks.iter().filter(|(t, _)| *t != "Infer").map(|(_, n)| *n))
            .sum()
    };
    assert!(
        foreign(&before) > 0,
        "no other task allocated inside a phase in the plain run: {before:?}"
    );
    assert_eq!(foreign(&after), 0, "{after:?}");
    for p in scoped_phases {
        let infer = |by: &BTreeMap<String, BTreeMap<String, u64>>| {
            by.get(p).and_then(|t| t.get("Infer")).copied().unwrap_or(0)
        };
        assert_eq!(infer(&after), infer(&before), "{p}: {before:?} {after:?}");
    }
    // The phases say their scope, and their allocation counts are the inference task's.
    for phase in scoped.as_object().unwrap()["phases"].as_array().unwrap() {
        let function = phase["function"].as_str().unwrap();
        if !scoped_phases.contains(&function) {
            continue;
        }
        let want = if function == "model_release" {
            "caller infer_task"
        } else {
            "task Infer"
        };
        assert_eq!(phase["scope"].as_str(), Some(want), "{phase}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
