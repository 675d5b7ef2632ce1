//! TensorFlow Lite Micro's arenas watched while they are built (the engine's arena observer,
//! `memlife arena`, scripts/arena.rhai) on the TFLM firmware (firmware/tflm, the 2020 TFLM) in
//! QEMU: every persistent step with its node, operator and category against an independent gdb
//! reading (firmware/tools/tflmwalk.py's `tflm-summary`, which breaks on
//! `SimpleMemoryAllocator::AllocateFromTail` itself), the figures of firmware/README.md, the
//! smallest arena rebuilt into the firmware (it runs) and 16 B less (AllocateTensors fails), and
//! the script's arena-fit verdicts on arena-tight (fail, the bytes missing) and arena-roomy
//! (warn over `[budgets] arena_spare`).
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use memlife_rsp::QemuProcess;
use serde_json::Value;

/// The models of the healthy firmware, in the order each cycle builds them, with
/// firmware/README.md's figures: persistent (tail) bytes, head bytes, the plan's temporary peak
/// and the smallest arena that works (found there by rebuilding, `tools/tflm_min_arena.sh`).
const MODELS: [(&str, u64, u64, u64, u64); 3] = [
    ("hello_world", 1424, 48, 456, 1888),
    ("micro_speech", 1056, 5968, 304, 7024),
    ("magic_wand", 1840, 13824, 608, 15652),
];

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{v} is not an unsigned number"))
}

/// `memlife arena --json` on `tflm-SCENARIO.elf`, QEMU started by memlife.
fn arena_json(scenario: &str) -> Value {
    let elf = elf("tflm", scenario);
    memlife_json(&[
        "arena",
        "--elf",
        elf.to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
        "--json",
    ])
}

/// The model record whose ELF symbol names `model` (`g_hello_world_tflite`).
fn model<'a>(v: &'a Value, model: &str) -> &'a Value {
    v["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"].as_str().unwrap().contains(model))
        .unwrap_or_else(|| panic!("no model {model} in {}", v["models"]))
}

/// The build a model's record rests on.
fn build_of<'a>(v: &'a Value, m: &Value) -> &'a Value {
    v["builds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["index"] == m["build"])
        .unwrap_or_else(|| panic!("no build {} listed", m["build"]))
}

/// One row of tflmwalk's tail allocations: `count` allocations of `size` B asked by `caller`
/// for `node` (operator `op`), each moving the tail by `drop` B.
#[derive(Debug)]
struct Row {
    node: i64,
    op: String,
    count: u64,
    size: u64,
    drop: u64,
    caller: String,
    temporary: bool,
}

/// What tflmwalk read of one cycle's build.
#[derive(Debug, Default)]
struct GdbBuild {
    model: String,
    rows: Vec<Row>,
    /// The bytes the tail moved that no traced allocation explains (the allocator object).
    untraced: u64,
    /// The plan: AllocationInfo bytes below the tail, planner bytes above the head, the peak.
    plan: (u64, u64, u64),
    /// After AllocateTensors: `buffer_head_`, `buffer_tail_`, head, tail, `arena_used_bytes`,
    /// free gap.
    allocated: Option<[u64; 6]>,
}

/// `node -1  [OP]  N x  S B -> D  caller[  (planning, temporary)]`.
fn parse_row(line: &str) -> Option<Row> {
    let rest = line.trim().strip_prefix("node")?;
    let (left, right) = rest.split_once("->")?;
    let mut l = left.split_whitespace();
    let node: i64 = l.next()?.parse().ok()?;
    let tokens: Vec<&str> = l.collect();
    // [OP] COUNT x SIZE B
    let (op, tokens) = match tokens.as_slice() {
        [op, rest @ ..] if op.parse::<u64>().is_err() => (op.to_string(), rest.to_vec()),
        all => (String::new(), all.to_vec()),
    };
    let count = tokens.first()?.parse().ok()?;
    let size = tokens.get(2)?.parse().ok()?;
    let right = right.trim();
    let (drop, caller) = right.split_once(char::is_whitespace)?;
    let caller = caller.trim();
    Some(Row {
        node,
        op,
        count,
        size,
        drop: drop.parse().ok()?,
        temporary: caller.ends_with("(planning, temporary)"),
        caller: caller.to_string(),
    })
}

/// The number after `key` in `line` (`"temp peak 456 B"` with key `"temp peak "`).
fn number_after(line: &str, key: &str) -> u64 {
    let at = line
        .find(key)
        .unwrap_or_else(|| panic!("no {key:?} in {line}"))
        + key.len();
    line[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// tflmwalk's `tflm-summary N` on a QEMU halted at reset with `elf`, one entry per cycle.
fn tflmwalk(elf: &Path, cycles: u32) -> Vec<GdbBuild> {
    let qemu = QemuProcess::start("netduinoplus2", elf, &[]).unwrap();
    let tools = repo().join("firmware/tools");
    let source = |f: &str| format!("source {}", tools.join(f).display());
    let summary = format!("tflm-summary {cycles}");
    let out = gdb_batch(
        elf,
        &qemu.addr().to_string(),
        &[
            &source("heapwalk.py"),
            &source("cppwalk.py"),
            &source("tflmwalk.py"),
            &summary,
        ],
    );
    drop(qemu);
    let text = stdout(&out);
    let mut builds: Vec<GdbBuild> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("cycle ") {
            let model = rest.split_once(": ").unwrap().1.split(',').next().unwrap();
            builds.push(GdbBuild {
                model: model.to_string(),
                ..GdbBuild::default()
            });
        } else if let Some(b) = builds.last_mut() {
            if line.trim_start().starts_with("node ") {
                b.rows.push(
                    parse_row(line).unwrap_or_else(|| panic!("unreadable tflmwalk row: {line}")),
                );
            } else if line.contains("B untraced") {
                b.untraced = number_after(line, "= ");
            } else if let Some(rest) = line.trim().strip_prefix("AllocateTensors ok: ") {
                let hex = |key: &str| {
                    let at = rest.find(key).unwrap() + key.len();
                    u64::from_str_radix(rest[at..].split_whitespace().next().unwrap(), 16).unwrap()
                };
                b.allocated = Some([
                    hex("buffer_head_ 0x"),
                    hex("buffer_tail_ 0x"),
                    number_after(rest, "head "),
                    number_after(rest, "tail "),
                    number_after(rest, "arena_used_bytes "),
                    number_after(rest, "free gap "),
                ]);
            } else if line.contains("plan (first GetMaximumMemorySize)") {
                b.plan = (
                    number_after(line, "AllocationInfo "),
                    number_after(line, "planner arrays "),
                    number_after(line, "temp peak "),
                );
            }
        }
    }
    assert_eq!(
        builds.len(),
        cycles as usize,
        "tflmwalk's output:\n{text}\n{}",
        stderr(&out)
    );
    builds
}

/// The category TFLM's RecordingMicroAllocator gives what `caller` allocates (the 2020 TFLM
/// has no recording allocator; the later one names these allocations so).
fn category_of(caller: &str) -> &'static str {
    for (function, category) in [
        ("AllocateTfLiteTensorArray", "kTfLiteEvalTensorData"),
        (
            "InitializeTfLiteTensorFromFlatbuffer",
            "kPersistentTfLiteTensorQuantizationData",
        ),
        ("AllocateNodeAndRegistrations", "kNodeAndRegistrationArray"),
        ("AllocatePOD", "kOpData"),
        ("AllocatePersistentBuffer", "kPersistentBufferData"),
        ("RequestScratchBufferInArena", "scratch-buffer-handle"),
    ] {
        if caller.contains(function) {
            return category;
        }
    }
    panic!("tflmwalk row from an unexpected caller: {caller}")
}

/// Each build's steps (node, operator, category, asked, tail bytes) as a sorted multiset.
type Steps = Vec<(i64, String, String, u64, u64)>;

fn gdb_steps(g: &GdbBuild) -> Steps {
    let mut steps: Steps = g
        .rows
        .iter()
        .filter(|r| !r.temporary)
        .flat_map(|r| {
            let op = if r.node < 0 { "setup" } else { &r.op };
            std::iter::repeat_n(
                (
                    r.node,
                    op.to_string(),
                    category_of(&r.caller).to_string(),
                    r.size,
                    r.drop,
                ),
                r.count as usize,
            )
        })
        .collect();
    steps.sort();
    steps
}

fn memlife_steps(build: &Value) -> Steps {
    let mut steps: Steps = build["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["category"] != "arena-allocator")
        .map(|s| {
            (
                s["node"].as_i64().unwrap(),
                s["operator"].as_str().unwrap_or("setup").to_string(),
                s["category"].as_str().unwrap().to_string(),
                u(&s["requested"]),
                u(&s["bytes"]),
            )
        })
        .collect();
    steps.sort();
    steps
}

/// One build's steps (node, operator, category, bytes asked and used), their sums, its plan
/// peak and its arena after AllocateTensors, against tflmwalk's reading `g` of the same build.
fn equals_tflmwalk(name: &str, b: &Value, g: &GdbBuild, persistent: u64) {
    // Every step, with its node, operator and category, as gdb saw it.
    let ours = memlife_steps(b);
    assert!(!ours.is_empty(), "{name}: no steps");
    assert_eq!(ours, gdb_steps(g), "{name}: steps");
    // The allocator object, which gdb cannot see allocated (its AllocateFromTail is inlined),
    // is what the tail moved beyond the traced allocations.
    let allocator: Vec<u64> = b["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["category"] == "arena-allocator")
        .map(|s| u(&s["bytes"]))
        .collect();
    assert_eq!(allocator, vec![g.untraced], "{name}: the allocator object");
    assert_eq!(g.untraced, 20, "{name}");

    // The steps sum to the persistent bytes, per operator and per category alike.
    let sum = |list: &str, key: &str| -> u64 {
        b[list].as_array().unwrap().iter().map(|s| u(&s[key])).sum()
    };
    assert_eq!(sum("steps", "bytes"), persistent, "{name}: steps");
    assert_eq!(sum("operators", "bytes"), persistent, "{name}: operators");
    assert_eq!(sum("categories", "used_bytes"), persistent, "{name}");
    assert_eq!(u(&b["persistent_bytes"]), persistent, "{name}");
    assert_eq!(
        u(&b["buffer_tail"]) - u(&b["buffer_head"]),
        u(&b["arena_bytes"])
    );

    // Per operator: gdb's per-node tail drops, and the operator names of each node.
    let mut per_node: BTreeMap<i64, u64> = BTreeMap::new();
    let mut names: BTreeMap<i64, String> = BTreeMap::new();
    for r in g.rows.iter().filter(|r| !r.temporary) {
        *per_node.entry(r.node).or_default() += r.count * r.drop;
        if r.node >= 0 {
            names.insert(r.node, r.op.clone());
        }
    }
    *per_node.entry(-1).or_default() += g.untraced;
    let ops = b["operators"].as_array().unwrap();
    let ours: BTreeMap<i64, u64> = ops
        .iter()
        .map(|o| (o["node"].as_i64().unwrap(), u(&o["bytes"])))
        .collect();
    assert_eq!(ours, per_node, "{name}: bytes per node");
    for o in ops.iter().filter(|o| o["node"].as_i64().unwrap() >= 0) {
        let node = o["node"].as_i64().unwrap();
        assert_eq!(o["operator"].as_str(), names.get(&node).map(String::as_str));
        assert_eq!(
            u(&o["init_bytes"]) + u(&o["prepare_bytes"]),
            u(&o["bytes"]),
            "{name} node {node}"
        );
    }

    // The plan's temporary peak: AllocationInfo below the tail, the planner above the head.
    let peaks = b["peaks"].as_array().unwrap();
    let plan = peaks.iter().find(|p| p["kind"] == "plan").unwrap();
    assert_eq!(
        (
            u(&plan["below_tail"]),
            u(&plan["above_head"]),
            u(&plan["bytes"])
        ),
        g.plan,
        "{name}: the plan's temporary peak"
    );

    // The arena when AllocateTensors returned, as gdb read it there.
    let allocated = b["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["at"] == "allocated")
        .unwrap_or_else(|| panic!("{name}: no figures at allocated: {b}"));
    assert_eq!(
        Some([
            u(&b["buffer_head"]),
            u(&b["buffer_tail"]),
            u(&allocated["head_bytes"]),
            u(&allocated["persistent_bytes"]),
            u(&allocated["arena_used_bytes"]),
            u(&allocated["free_bytes"]),
        ]),
        g.allocated,
        "{name}: the arena after AllocateTensors"
    );
}

#[test]
fn healthy_steps_per_operator_and_category_equal_tflmwalks_reading() {
    let elf = elf("tflm", "healthy");
    let gdb = tflmwalk(&elf, 3);
    let v = arena_json("healthy");
    assert_eq!(v["generation"], "2020", "{v}");
    for (i, (name, persistent, head, peak, needs)) in MODELS.into_iter().enumerate() {
        let g = &gdb[i];
        assert_eq!(g.model, name);
        let m = model(&v, name);
        let b = build_of(&v, m);
        assert_eq!(b["status"], "ok", "{name}: {b}");
        assert_eq!(b["steps_unlisted"], 0, "{name}");

        equals_tflmwalk(name, b, g, persistent);

        // firmware/README.md's figures: tail, head, temporary peak, smallest arena.
        assert_eq!(u(&m["persistent_bytes"]), persistent, "{name}");
        assert_eq!(u(&m["head_bytes"]), head, "{name}");
        assert_eq!(u(&m["temp_peak"]), peak, "{name}");
        assert_eq!(u(&m["needs"]), needs, "{name}: smallest arena");
        assert_eq!(m["exact"], true, "{name}");
        assert_eq!(
            m["spare"].as_i64().unwrap(),
            u(&m["arena_bytes"]) as i64 - needs as i64
        );
    }
}

/// Deletes an arena build and its objects (as tools/tflm_min_arena.sh does).
fn remove_arena_build(elf: &Path) {
    let _ = std::fs::remove_file(elf);
    let _ = std::fs::remove_file(elf.with_extension("map"));
    let stem = elf.file_stem().unwrap().to_str().unwrap();
    let objs = elf
        .parent()
        .unwrap()
        .join("tflm-obj")
        .join(stem.strip_prefix("tflm-").unwrap());
    let _ = std::fs::remove_dir_all(objs);
}

/// Rebuilds the `scenario` application with `model` alone and memlife's `needs` as its arena:
/// it runs the model (AllocateTensors ok, its inferences); 16 B less and AllocateTensors fails
/// (exit 5).
fn minimum_runs_and_16_bytes_less_fails(scenario: &str, name: &str, needs: u64) {
    let fits = memlife_testkit::firmware::tflm_arena_elf(scenario, name, needs);
    let (code, out) = run_exiting_elf(&fits);
    remove_arena_build(&fits);
    assert_eq!(code, Some(0), "{scenario} {name} with {needs} B: {out}");
    assert!(
        out.contains("1 cycles ok"),
        "{scenario} {name} with {needs} B: {out}"
    );

    let short = needs - 16;
    let too_small = memlife_testkit::firmware::tflm_arena_elf(scenario, name, short);
    let (code, out) = run_exiting_elf(&too_small);
    remove_arena_build(&too_small);
    assert_eq!(code, Some(5), "{scenario} {name} with {short} B: {out}");
    assert!(
        out.contains("AllocateTensors failed"),
        "{scenario} {name}: {out}"
    );
}

/// The falsifiable one: the firmware rebuilt with the arena memlife reports as the smallest
/// runs its model; 16 B less and AllocateTensors fails (exit 5). The scratch application too,
/// whose head holds the 7840-byte scratch buffer the plan places at node 0.
#[test]
fn the_reported_minimum_arena_runs_when_rebuilt_and_16_bytes_less_fails() {
    let v = arena_json("healthy");
    for (name, ..) in MODELS {
        let needs = u(&model(&v, name)["needs"]);
        minimum_runs_and_16_bytes_less_fails("healthy", name, needs);
    }
    let v = arena_json("scratch");
    let m = model(&v, "micro_speech");
    assert_eq!(m["exact"], true, "{m}");
    minimum_runs_and_16_bytes_less_fails("scratch", "micro_speech", u(&m["needs"]));
}

/// `memlife audit scripts/arena.rhai` on `tflm-SCENARIO.elf`: exit code and stdout.
fn arena_script(scenario: &str, extra: &[&str]) -> (Option<i32>, String) {
    let elf = elf("tflm", scenario);
    let script = repo().join("scripts/arena.rhai");
    let mut args = vec![
        "audit",
        "--elf",
        elf.to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
    ];
    args.extend_from_slice(extra);
    args.push(script.to_str().unwrap());
    let out = run_memlife(&args);
    (
        out.status.code(),
        format!("{}{}", stdout(&out), stderr(&out)),
    )
}

#[test]
fn arena_tight_fails_arena_fit_naming_the_model_and_the_bytes_missing() {
    let (code, out) = arena_script("arena-tight", &[]);
    assert_eq!(code, Some(1), "{out}");
    let fail = out
        .lines()
        .find(|l| l.starts_with("FAIL arena-fit: "))
        .unwrap_or_else(|| panic!("no failed arena-fit:\n{out}"));
    // 7024 B needed, 6144 B given (firmware/README.md: 880 B missing).
    assert!(
        fail.contains(
            "g_micro_speech_tflite: arena 6144 B, needs 7024 B: 880 B missing (AllocateTensors failed"
        ),
        "{fail}"
    );
    // The models that fit are listed as such, and nothing warns at the default budget.
    assert!(
        fail.contains("g_hello_world_tflite: arena 2048 B, needs 1888 B, spare 160 B"),
        "{fail}"
    );
    assert!(!out.contains("WARN"), "{out}");

    // `memlife arena` says the same.
    let elf = elf("tflm", "arena-tight");
    let out = run_memlife(&[
        "arena",
        "--elf",
        elf.to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let line = text
        .lines()
        .find(|l| l.starts_with("g_micro_speech_tflite"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.ends_with("arena 6144 B, needs 7024 B, 880 B missing (AllocateTensors failed)"),
        "{line}"
    );
}

#[test]
fn healthy_passes_arena_fit_and_arena_roomy_warns_over_the_spare_budget() {
    let (code, out) = arena_script("healthy", &[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("PASS arena-fit: "), "{out}");
    assert!(!out.contains("WARN"), "{out}");

    // Every arena 4 times the healthy one: spare above the default 4096 B.
    let (code, out) = arena_script("arena-roomy", &[]);
    assert_eq!(code, Some(0), "{out}");
    let warn = out
        .lines()
        .find(|l| l.starts_with("WARN arena-fit: "))
        .unwrap_or_else(|| panic!("no arena-fit warning:\n{out}"));
    for spare in [
        "g_hello_world_tflite (spare 6304 B)",
        "g_micro_speech_tflite (spare 25744 B)",
        "g_magic_wand_tflite (spare 49884 B)",
    ] {
        assert!(warn.contains(spare), "{warn}");
    }
    assert!(warn.contains("4096 B ([budgets] arena_spare)"), "{warn}");

    // A budget above the largest spare: no warning, the check passes.
    let (code, out) = arena_script("arena-roomy", &["--budget", "arena_spare=50000"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("PASS arena-fit: "), "{out}");
    assert!(!out.contains("WARN"), "{out}");
}

/// A script's `h.arenas` (`t.heap()` reads the arenas with the walk) on healthy at
/// hello_world's first inference, then the steps and peaks of the last build that ended once
/// `t.observe_arenas()` went round the models.
#[test]
fn a_scripts_heap_has_the_arenas_and_its_target_the_last_ended_builds_steps() {
    let dir = tempdir("arena-script");
    let script = dir.join("arenas.rhai");
    std::fs::write(
        &script,
        r#"
let t = target();
t.run_to("app::RunInference");
let h = t.heap();
let a = h.arenas;
print(`ARENAS ${a.len()} ${a[0].size} ${a[0].arena_used_bytes} ${a[0].persistent_bytes} ${a[0].head_bytes}`);
t.observe_arenas();
let steps = t.arena_steps();
let sum = 0;
for s in steps { sum += s.bytes; }
let peaks = t.arena_peaks();
print(`STEPS ${t.arena_builds().len()} ${steps.len()} ${sum} ${steps[1].category} ${peaks[0].kind} ${peaks[0].bytes}`);
"#,
    )
    .unwrap();
    let elf = elf("tflm", "healthy");
    let out = run_memlife(&[
        "audit",
        "--elf",
        elf.to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
        script.to_str().unwrap(),
    ]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{text}");
    // hello_world's 2048-byte arena: arena_used_bytes() 1472 = tail 1424 + head 48.
    assert!(text.contains("ARENAS 1 2048 1472 1424 48"), "{text}");
    // The observer was added at the start: hello_world's build was seen, then micro_speech's,
    // magic_wand's, and the run stopped where hello_world's second begins; the steps shown are
    // magic_wand's, the last build that ended (18 steps, 1840 B, the tensor array second after
    // the allocator object; the plan's peak 608 B).
    assert!(
        text.contains("STEPS 4 18 1840 kTfLiteEvalTensorData plan 608"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `monitor heap` in a gdb session through `memlife serve` shows the arenas, as `memlife heap`.
#[test]
fn monitor_heap_shows_the_arenas() {
    let elf = elf("tflm", "healthy");
    let served = serve::start(&elf, &["--qemu", "netduinoplus2"]);
    let out = gdb_batch(
        &elf,
        &served.addr,
        &[
            "break app::RunInference",
            "continue",
            "monitor heap",
            "detach",
        ],
    );
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(text.contains("arena_used_bytes() = 1472"), "{text}");
    assert!(text.contains("FULLY_CONNECTED"), "{text}");
}

/// In an audit that observes cycles, each build's arena figures at the lifecycle's boundaries
/// (BuildInterpreter's return to ReleaseModel's entry: nothing moves the cursors between)
/// equal gdb's reading when AllocateTensors returned, and each build knows its phase and cycle.
#[test]
fn arena_figures_at_each_phase_equal_gdbs_reading() {
    let elf = elf("tflm", "healthy");
    let gdb = tflmwalk(&elf, 3);
    let dir = tempdir("arena-phases");
    let cfg = write_test_config(
        &dir,
        &elf,
        "[phases]\nload = \"app::LoadModel\"\nbuild = \"app::BuildInterpreter\"\n\
         run = \"app::RunInference\"\nrelease = \"app::ReleaseModel\"\n",
    );
    let script = dir.join("cycles.rhai");
    std::fs::write(&script, "let t = target();\nt.cycles(3);\n").unwrap();
    let report = dir.join("r.json");
    let out = run_memlife(&[
        "audit",
        "--config",
        cfg.to_str().unwrap(),
        "--json",
        report.to_str().unwrap(),
        script.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let v: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let builds = v["arenas"]["builds"].as_array().unwrap();
    assert_eq!(builds.len(), 3, "{}", v["arenas"]);
    for (i, (b, g)) in builds.iter().zip(&gdb).enumerate() {
        let name = &g.model;
        assert!(b["model"].as_str().unwrap().contains(name.as_str()), "{b}");
        assert_eq!(u(&b["cycle"]), i as u64 + 1, "{name}");
        assert!(
            b["phase"]
                .as_str()
                .unwrap()
                .starts_with("app::BuildInterpreter"),
            "{name}: {}",
            b["phase"]
        );
        let [_, _, head, tail, used, gap] = g.allocated.unwrap();
        let at_phases: Vec<String> = b["figures"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["when"] != "")
            .map(|f| {
                let same = (
                    u(&f["head_bytes"]),
                    u(&f["persistent_bytes"]),
                    u(&f["arena_used_bytes"]),
                    u(&f["free_bytes"]),
                ) == (head, tail, used, gap);
                assert!(same, "{name}: {f} against gdb's {:?}", g.allocated);
                format!(
                    "{} {}",
                    f["at"].as_str().unwrap().split('(').next().unwrap(),
                    f["when"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(
            at_phases,
            [
                "app::BuildInterpreter return",
                "app::RunInference entry",
                "app::RunInference return",
                "app::ReleaseModel entry"
            ],
            "{name}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The scratch scenario: micro_speech's DEPTHWISE_CONV_2D asks for its input statistics in Init
/// and a 7840-byte scratch buffer in Prepare (a 12-byte handle in the tail, the buffer in the
/// plan); firmware/README.md: tail 1100 (node 0 148 B: Init 24 + 48, Prepare 2 x 32 + 12), head
/// 13808, planning temporaries 180 + 5 x 36.
#[test]
fn scratch_steps_have_the_scratch_handle_and_equal_tflmwalks_reading() {
    let elf = elf("tflm", "scratch");
    let gdb = tflmwalk(&elf, 2);
    let v = arena_json("scratch");
    let g = &gdb[1];
    assert_eq!(g.model, "micro_speech");
    let m = model(&v, "micro_speech");
    let b = build_of(&v, m);
    equals_tflmwalk("micro_speech", b, g, 1100);
    let node0 = b["operators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["node"] == 0)
        .unwrap();
    assert_eq!(node0["operator"], "DEPTHWISE_CONV_2D");
    assert_eq!(
        (
            u(&node0["init_bytes"]),
            u(&node0["prepare_bytes"]),
            u(&node0["bytes"])
        ),
        (72, 76, 148)
    );
    let handles: Vec<(&Value, &Value, u64)> = b["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["category"] == "scratch-buffer-handle")
        .map(|s| (&s["node"], &s["stage"], u(&s["bytes"])))
        .collect();
    assert_eq!(handles, [(&Value::from(0), &Value::from("prepare"), 12)]);
    assert_eq!(
        (
            u(&m["head_bytes"]),
            u(&m["temp_peak"]),
            u(&m["arena_bytes"])
        ),
        (13808, 360, 16384)
    );
    // The plan's 360 B fit the 1476-byte gap: tail and head set the minimum. Their 14908 B here
    // take 8 B less in the smallest arena, where the 16-aligned persistent buffers need less
    // padding: 14900 B, what firmware/README.md found by rebuilding (14899 fails).
    assert_eq!(m["exact"], true, "{m}");
    assert_eq!(u(&m["needs"]), 14900, "{m}");
}
