//! TensorFlow Lite Micro's arenas as `memlife heap --at PHASE` finds them by itself, against an
//! independent gdb reading that starts from the application's own session (gdb/
//! tflm_reference.py), on every scenario of the TFLM firmware (firmware/tflm, the 2020 TFLM of
//! tfmicro 0.1.0) in QEMU: the arena's bounds and cursors, its allocator and interpreter,
//! `arena_used_bytes` as the firmware computes it (and as the view build stored it itself),
//! each tensor's place and size, the operators, the scratch buffers; the shared-tensor
//! scenario's overlap names both tensors, no other scenario has one.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use common::*;
use memlife_rsp::QemuProcess;
use serde_json::Value;

/// The JSON after `REF-TFLM ` in gdb's output (`Value::Null` for `REF-TFLM null`).
fn reference(out: &std::process::Output) -> Value {
    let text = stdout(out);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("REF-TFLM "))
        .unwrap_or_else(|| panic!("no REF-TFLM line in gdb's output:\n{text}\n{}", stderr(out)));
    serde_json::from_str(line).unwrap()
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{v} is not an unsigned number"))
}

/// One stop: the phase function memlife runs to, the `app::Session*` gdb reads there, and
/// whether the session has its interpreter and arena there.
struct Stop {
    function: &'static str,
    session: &'static str,
    built: bool,
}

const RUN: Stop = Stop {
    function: "app::RunInference",
    session: "app::g_session",
    built: true,
};
const RELEASE: Stop = Stop {
    function: "app::ReleaseModel",
    session: "$r0",
    built: true,
};
/// Before the build: the session has no interpreter yet, the last cycle's arena is freed.
const BUILD: Stop = Stop {
    function: "app::BuildInterpreter",
    session: "$r0",
    built: false,
};
/// A failed AllocateTensors: the interpreter and its arena are still there.
const FAILURE: Stop = Stop {
    function: "app::HandleBuildFailure",
    session: "$r0",
    built: true,
};

/// What one scenario's stops must show beyond agreeing with gdb.
#[derive(Default)]
struct Expect {
    /// Arenas live at once where a model runs (0 means 1: one model at a time).
    arenas: usize,
    /// The model whose plan must have the in-place overlap.
    overlap_on: Option<&'static str>,
    /// The view build: `g_tflm_view` holds what the firmware computed.
    view: bool,
}

/// Runs one QEMU with `tflm-SCENARIO.elf` through `stops`; at each, `memlife heap --at` first
/// (leaving the core halted), then gdb reads the same halted core. Returns the number of
/// tensors compared.
fn scenario(name: &str, stops: &[Stop], expect: Expect) -> usize {
    let elf = elf("tflm", name);
    let elf_s = elf.to_str().unwrap();
    let qemu = QemuProcess::start("netduinoplus2", &elf, &[]).unwrap();
    let server = qemu.addr().to_string();
    let script = gdb_script("tflm_reference.py");
    let mut compared = 0;
    let mut hits = std::collections::HashMap::new();
    for stop in stops {
        let hit = hits.entry(stop.function).or_insert(0);
        *hit += 1;
        let what = format!("tflm-{name}, {} #{hit}", stop.function);
        let v = memlife_json(&[
            "heap",
            "--elf",
            elf_s,
            "--gdb",
            &server,
            "--json",
            "--leave",
            "halted",
            "--at",
            stop.function,
        ]);
        assert_eq!(
            v["pc"]["function"]
                .as_str()
                .map(|f| f.starts_with(stop.function)),
            Some(true),
            "{what}"
        );
        assert_eq!(v["status"], "ok", "{what}: {}", v["anomalies"]);
        // gdb reads the session first; then, knowing which arena is the session's, the nodes
        // of that arena's plan (their count is the model's: gdb does not parse flatbuffers).
        let source = format!("source {}", script.display());
        let first = format!("ref-tflm {}", stop.session);
        let r = reference(&gdb_batch(&elf, &server, &[&source, &first, "disconnect"]));
        let ops = v["arenas"]
            .as_array()
            .and_then(|all| {
                all.iter()
                    .find(|a| !r.is_null() && a["start"] == r["buffer_head"])
            })
            .and_then(|a| a["plan"]["operators"].as_array())
            .map_or(0, Vec::len)
            .to_string();
        let read = format!("ref-tflm {} {ops}", stop.session);
        let gdb = gdb_batch(&elf, &server, &[&source, &read, "disconnect"]);
        let r = reference(&gdb);
        let built = !r.is_null() && u(&r["interpreter"]) != 0;
        assert_eq!(built, stop.built, "{what}: {r}");
        compared += check(&what, &v, &r, &expect);
    }
    drop(qemu);
    compared
}

/// memlife's `arenas` against gdb's reading `r` of the session; the tensors compared.
fn check(what: &str, v: &Value, r: &Value, expect: &Expect) -> usize {
    let arenas = v["arenas"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no arenas key"));
    if r.is_null() || u(&r["interpreter"]) == 0 {
        // Before the build, the previous cycle's arena is freed: nothing live, however much of
        // it is still in the free block.
        assert!(arenas.is_empty(), "{what}: {arenas:#?}");
        return 0;
    }
    assert_eq!(arenas.len(), expect.arenas.max(1), "{what}: {arenas:#?}");
    // The arena of the session gdb reads (the others are their own sessions' at their stops).
    let index = arenas
        .iter()
        .position(|a| u(&a["start"]) == u(&r["buffer_head"]))
        .unwrap_or_else(|| panic!("{what}: no arena at gdb's buffer_head_: {arenas:#?}"));
    let a = &arenas[index];
    // Each live arena has its own interpreter, and no two arenas share bytes.
    for (i, x) in arenas.iter().enumerate() {
        for y in arenas.iter().skip(i + 1) {
            assert_ne!(
                x["interpreter"]["address"], y["interpreter"]["address"],
                "{what}"
            );
            assert!(
                u(&x["end"]) <= u(&y["start"]) || u(&y["end"]) <= u(&x["start"]),
                "{what}"
            );
        }
    }
    let model = r["model_name"].as_str().unwrap();
    let what = format!("{what} ({model})");
    assert_eq!(a["generation"], "2020", "{what}");
    assert_eq!(
        a["allocator"]["class"], "tflite::SimpleMemoryAllocator",
        "{what}"
    );
    assert_eq!(
        u(&a["allocator"]["address"]),
        u(&r["allocator"]),
        "{what}: allocator"
    );
    assert_eq!(
        u(&a["interpreter"]["address"]),
        u(&r["interpreter"]),
        "{what}: interpreter"
    );
    assert_eq!(
        u(&a["interpreter"]["model"]),
        u(&r["model"]),
        "{what}: model_"
    );
    let (bh, bt, head, tail) = (
        u(&r["buffer_head"]),
        u(&r["buffer_tail"]),
        u(&r["head"]),
        u(&r["tail"]),
    );
    for (k, want) in [
        ("start", bh),
        ("end", bt),
        ("head", head),
        ("temp", head),
        ("tail", tail),
    ] {
        assert_eq!(u(&a[k]), want, "{what}: {k}");
    }
    assert_eq!(u(&a["size"]), bt - bh, "{what}");
    assert_eq!(u(&a["persistent_bytes"]), bt - tail, "{what}");
    assert_eq!(u(&a["head_bytes"]), head - bh, "{what}");
    assert_eq!(u(&a["temp_bytes"]), 0, "{what}");
    assert_eq!(u(&a["free_bytes"]), tail - head, "{what}");
    // The arena the application handed over, aligned up to 16, ends where it ends.
    let (arena, arena_bytes) = (u(&r["arena"]), u(&r["arena_bytes"]));
    assert_eq!(bh, arena.next_multiple_of(16), "{what}: buffer_head_");
    assert_eq!(bt, arena + arena_bytes, "{what}: buffer_tail_");
    let c = &a["container"];
    assert_eq!(c["kind"], "heap-block", "{what}");
    assert!(
        u(&c["start"]) < arena && arena + arena_bytes <= u(&c["start"]) + u(&c["size"]),
        "{what}: container {c}"
    );
    // MicroAllocator::used_bytes(): 0 while active_, else head + tail.
    let used = if r["active"].as_bool().unwrap() {
        0
    } else {
        (head - bh) + (bt - tail)
    };
    assert_eq!(u(&a["arena_used_bytes"]), used, "{what}: arena_used_bytes");
    let fv = &v["firmware_view"]["tflm"][index];
    assert_eq!(
        u(&fv["arena_used_bytes"]),
        used,
        "{what}: firmware_view.tflm"
    );
    assert_eq!(u(&fv["interpreter"]), u(&r["interpreter"]), "{what}");
    if expect.view {
        let view = &r["view"];
        assert_eq!(
            u(&view["arena"]),
            arena,
            "{what}: g_tflm_view is this model's"
        );
        assert_eq!(
            u(&view["arena_used_bytes"]),
            used,
            "{what}: the firmware's own figure"
        );
    }
    // The smallest arena the snapshot allows holds the tail and the head.
    let minimum = u(&a["minimum_bytes"]);
    assert!(
        minimum >= (bt - tail) + (head - bh) && minimum < (bt - tail) + (head - bh) + 16,
        "{what}"
    );
    if !r["tensors_allocated"].as_bool().unwrap() {
        assert!(
            a["plan"].is_null(),
            "{what}: a plan before AllocateTensors succeeded"
        );
        return 0;
    }
    check_plan(&what, a, r, bh, expect, model)
}

fn check_plan(what: &str, a: &Value, r: &Value, bh: u64, expect: &Expect, model: &str) -> usize {
    let plan = &a["plan"];
    let tensors = plan["tensors"].as_array().unwrap();
    let ref_tensors = r["tensors"].as_array().unwrap();
    assert_eq!(tensors.len(), ref_tensors.len(), "{what}: tensors");
    let in_arena = |p: u64| p >= bh && p < u(&a["end"]);
    for (t, rt) in tensors.iter().zip(ref_tensors) {
        let k = u(&t["index"]);
        let data = u(&rt["data"]);
        assert_eq!(u(&t["address"]), data, "{what}: tensor {k} data");
        assert_eq!(u(&t["bytes"]), u(&rt["bytes"]), "{what}: tensor {k} bytes");
        if in_arena(data) {
            assert_eq!(t["kind"], "planned", "{what}: tensor {k}");
            assert_eq!(
                u(&t["offset"]),
                data - bh,
                "{what}: tensor {k}'s planned offset"
            );
        } else {
            assert_eq!(t["kind"], "read-only", "{what}: tensor {k}");
            assert!(t["offset"].is_null(), "{what}: tensor {k}");
        }
    }
    let ops = plan["operators"].as_array().unwrap();
    let ref_ops = r["operators"].as_array().unwrap();
    assert_eq!(ops.len(), ref_ops.len(), "{what}");
    for (o, ro) in ops.iter().zip(ref_ops) {
        assert_eq!(o["name"], ro["name"], "{what}: operator {}", o["index"]);
        assert_eq!(o["inputs"], ro["inputs"], "{what}: operator {}", o["index"]);
        assert_eq!(
            o["outputs"], ro["outputs"],
            "{what}: operator {}",
            o["index"]
        );
    }
    let scratch: Vec<(u64, u64, u64, u64)> = plan["scratch"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                u(&s["index"]),
                u(&s["operator"]),
                u(&s["bytes"]),
                u(&s["address"]),
            )
        })
        .collect();
    let ref_scratch: Vec<(u64, u64, u64, u64)> = r["scratch"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (u(&s["index"]), u(&s["node"]), u(&s["bytes"]), u(&s["data"])))
        .collect();
    assert_eq!(scratch, ref_scratch, "{what}: scratch buffers");
    let overlaps = plan["overlaps"].as_array().unwrap();
    if expect.overlap_on == Some(model) {
        // The application pointed node 2's output at its input.
        let node = &ref_ops[2];
        let (input, output) = (u(&node["inputs"][0]), u(&node["outputs"][0]));
        assert_eq!(overlaps.len(), 1, "{what}: {overlaps:#?}");
        let o = &overlaps[0];
        let mut pair = [u(&o["a"]["index"]), u(&o["b"]["index"])];
        pair.sort_unstable();
        let mut want = [input, output];
        want.sort_unstable();
        assert_eq!(pair, want, "{what}: the overlap's tensors");
        assert_eq!((u(&o["first_op"]), u(&o["last_op"])), (2, 2), "{what}");
        let name = |i: u64| tensors[i as usize]["name"].as_str().unwrap().to_string();
        let message = a["anomalies"][0]["message"].as_str().unwrap();
        assert!(
            message.contains(&name(input)) && message.contains(&name(output)),
            "{what}: {message}"
        );
    } else {
        assert!(overlaps.is_empty(), "{what}: {overlaps:#?}");
        assert!(
            a["anomalies"].as_array().unwrap().is_empty(),
            "{what}: {}",
            a["anomalies"]
        );
    }
    tensors.len()
}

#[test]
fn healthy_arenas_equal_gdbs_reading_and_nothing_stale_is_reported() {
    let n = scenario(
        "healthy",
        &[RUN, RUN, RUN, RELEASE, BUILD, RUN],
        Expect::default(),
    );
    assert!(n >= 12 + 8 * 2, "{n} tensors compared");
}

#[test]
fn the_view_builds_arena_used_bytes_equals_memlifes() {
    let expect = Expect {
        view: true,
        ..Expect::default()
    };
    scenario("view", &[RUN, RUN, RUN], expect);
}

#[test]
fn shared_tensor_fails_the_overlap_check_naming_both_tensors() {
    let expect = Expect {
        overlap_on: Some("hello_world"),
        ..Expect::default()
    };
    scenario("shared-tensor", &[RUN, RUN, RUN, RUN], expect);
}

#[test]
fn scratch_op_leak_and_roomy_arenas_equal_gdbs_reading() {
    scenario("scratch", &[RUN, RUN, RELEASE], Expect::default());
    scenario("op-leak", &[RUN, RUN, RUN], Expect::default());
    scenario("arena-roomy", &[RUN, RUN, RUN], Expect::default());
}

#[test]
fn two_models_loaded_together_each_have_their_own_arena() {
    let expect = Expect {
        arenas: 2,
        ..Expect::default()
    };
    // hello_world runs while micro_speech is built, then micro_speech runs: each stop compares
    // the running model's arena with gdb, and both arenas are listed at both.
    scenario("two-models", &[RUN, RUN, RELEASE, RUN, RUN], expect);
}

#[test]
fn a_failed_build_shows_its_arena_without_a_plan() {
    scenario("arena-tight", &[RUN, FAILURE, RUN], Expect::default());
}
