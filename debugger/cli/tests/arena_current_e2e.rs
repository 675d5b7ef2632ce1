//! The arena observer on current TensorFlow Lite Micro's shape, in QEMU: firmware/tflm-current
//! is OUR MODEL of current TFLM (its classes with current TFLM's names and member order in
//! `tflite::micro`, its call structure; made-up operators of known persistent sizes), not TFLM
//! itself (the real current TFLM's functions are checked by the hooks' unit test against the
//! tflite-micro wheel's symbols). `memlife arena` and scripts/arena.rhai against an independent
//! gdb reading (firmware/tools/tflmcurrentwalk.py: gdb's own DWARF reading of every
//! `AllocatePersistentBuffer` call and of the cursors), the steps summing to the persistent
//! bytes, `arena_used_bytes` as the firmware computes it, and the smallest arena rebuilt into
//! the firmware (it runs) and 16 B less (AllocateTensors fails).
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use std::path::Path;

use common::*;
use memlife_rsp::QemuProcess;
use serde_json::Value;

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{v} is not an unsigned number"))
}

/// `memlife arena --json` on firmware/build/tflm-current.elf.
fn arena_json() -> Value {
    let elf = elf("tflm", "current");
    memlife_json(&[
        "arena",
        "--elf",
        elf.to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
        "--json",
    ])
}

/// One `AllocatePersistentBuffer` call as gdb read it: node, stage, size, alignment, tail move.
type GdbStep = (i64, String, u64, u64, u64);

/// What gdb read of the first build: its steps and the arena at the first inference
/// (`buffer_head_`, `buffer_tail_`, head bytes, tail bytes, the firmware's `arena_used_bytes`).
fn gdb_walk(elf: &Path) -> (Vec<GdbStep>, [u64; 5]) {
    let qemu = QemuProcess::start("netduinoplus2", elf, &[]).unwrap();
    let script = repo().join("firmware/tools/tflmcurrentwalk.py");
    let out = gdb_batch(
        elf,
        &qemu.addr().to_string(),
        &[&format!("source {}", script.display()), "tflm-current-walk"],
    );
    drop(qemu);
    let text = stdout(&out);
    let mut steps = Vec::new();
    let mut arena = None;
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["step", node, stage, size, align, moved] => steps.push((
                node.parse().unwrap(),
                stage.to_string(),
                size.parse().unwrap(),
                align.parse().unwrap(),
                moved.parse().unwrap(),
            )),
            [
                "arena",
                "buffer_head",
                bh,
                "buffer_tail",
                bt,
                "head",
                h,
                "tail",
                t,
                "used",
                used,
            ] => {
                let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
                arena = Some([
                    hex(bh),
                    hex(bt),
                    h.parse().unwrap(),
                    t.parse().unwrap(),
                    used.parse().unwrap(),
                ]);
            }
            _ => {}
        }
    }
    let arena = arena.unwrap_or_else(|| panic!("no arena line:\n{text}\n{}", stderr(&out)));
    (steps, arena)
}

#[test]
fn steps_per_operator_and_cursors_equal_gdbs_reading() {
    let v = arena_json();
    assert_eq!(v["generation"], "current", "{v}");
    let (gdb_steps, [buffer_head, buffer_tail, head, tail, used]) =
        gdb_walk(&elf("tflm", "current"));
    let b = &v["builds"][0];
    assert_eq!(b["status"], "ok", "{b}");
    assert_eq!(
        (u(&b["buffer_head"]), u(&b["buffer_tail"])),
        (buffer_head, buffer_tail)
    );
    assert_eq!(
        (u(&b["persistent_bytes"]), u(&b["head_bytes"])),
        (tail, head)
    );
    // As the firmware computes it (g_arena_used_bytes, from arena_used_bytes()).
    assert_eq!(u(&b["arena_used_bytes"]), used);

    // Every persistent allocation, in order, with its node, stage, size and the tail's move.
    let steps: Vec<GdbStep> = b["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["node"].as_i64().unwrap(),
                s["stage"].as_str().unwrap().to_string(),
                u(&s["requested"]),
                u(&s["alignment"]),
                u(&s["bytes"]),
            )
        })
        .collect();
    // The allocator object is placed from a copy on the stack: memlife sees it as the first
    // tail move and names its size; gdb sees the call itself, with the object's alignment.
    let (first, rest) = steps.split_first().unwrap();
    let (gdb_first, gdb_rest) = gdb_steps.split_first().unwrap();
    assert_eq!(
        (first.0, first.2, first.4),
        (gdb_first.0, gdb_first.2, gdb_first.4)
    );
    assert_eq!(b["steps"][0]["category"], "arena-allocator");
    assert_eq!(rest, gdb_rest, "memlife's steps against gdb's");

    // The steps sum to the persistent bytes; per operator as the made-up kernels ask
    // (firmware/tflm-current/main.cpp), each padded to 16 as the tail was.
    let sum: u64 = steps.iter().map(|s| s.4).sum();
    assert_eq!(sum, tail);
    let ops: Vec<(i64, String, u64, u64)> = b["operators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["node"].as_i64().unwrap(),
                o["operator"].as_str().unwrap().to_string(),
                u(&o["init_bytes"]),
                u(&o["prepare_bytes"]),
            )
        })
        .filter(|o| o.0 >= 0)
        .collect();
    let by_gdb = |node: i64, stage: &str| -> u64 {
        gdb_steps
            .iter()
            .filter(|s| s.0 == node && s.1 == stage)
            .map(|s| s.4)
            .sum()
    };
    let names = ["FULLY_CONNECTED", "CONV_2D", "MyOp", "SOFTMAX"];
    assert_eq!(ops.len(), names.len(), "{ops:?}");
    for (node, name) in names.iter().enumerate() {
        let n = node as i64;
        assert_eq!(
            ops[node],
            (n, name.to_string(), by_gdb(n, "init"), by_gdb(n, "prepare")),
        );
    }
    // The kernels' own sizes, for the reader: 40 and 64, 24 and 200, 100, 16.
    assert_eq!(by_gdb(1, "prepare"), 208);
    assert_eq!(by_gdb(2, "init"), 112);

    // Prepare's temporaries (CONV_2D's 300 B, the largest) and the plan are peaks.
    let peak = |kind: &str| {
        b["peaks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} peak in {}", b["peaks"]))
            .clone()
    };
    assert_eq!(peak("prepare")["node"], 1);
    assert!(u(&peak("prepare")["above_head"]) >= 300);
    assert_eq!(u(&peak("plan")["head_needed"]), head);
}

fn remove_build(elf: &Path) {
    for ext in ["elf", "map"] {
        let _ = std::fs::remove_file(elf.with_extension(ext));
    }
    let stem = elf.file_stem().unwrap().to_str().unwrap();
    for obj in ["heap4", "semihost"] {
        let _ = std::fs::remove_file(elf.with_file_name(format!("{stem}-{obj}.o")));
    }
}

/// The falsifiable one: rebuilt with the arena memlife reports as the smallest, the model
/// firmware builds and runs; 16 B less and AllocateTensors fails (exit 5). The script's
/// arena-fit check passes on the 4096 B arena with the same figure.
#[test]
fn the_reported_minimum_arena_runs_when_rebuilt_and_16_bytes_less_fails() {
    let v = arena_json();
    let m = &v["models"][0];
    let needs = u(&m["needs"]);
    assert_eq!(m["exact"], true, "{m}");
    assert_eq!(u(&m["arena_bytes"]) - needs, u(&m["spare"]));

    let fits = memlife_testkit::firmware::tflm_current_arena_elf(needs);
    let (code, out) = run_exiting_elf(&fits);
    remove_build(&fits);
    assert_eq!(code, Some(0), "{needs} B: {out}");

    let short = needs - 16;
    let too_small = memlife_testkit::firmware::tflm_current_arena_elf(short);
    let (code, out) = run_exiting_elf(&too_small);
    remove_build(&too_small);
    assert_eq!(code, Some(5), "{short} B: {out}");
    assert!(out.contains("AllocateTensors failed"), "{out}");

    let elf = elf("tflm", "current");
    let script = repo().join("scripts/arena.rhai");
    let out = run_memlife(&[
        "audit",
        "--elf",
        elf.to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
        script.to_str().unwrap(),
    ]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{text}");
    let pass = text
        .lines()
        .find(|l| l.starts_with("PASS arena-fit: "))
        .unwrap_or_else(|| panic!("no arena-fit verdict:\n{text}"));
    assert!(
        pass.contains(&format!("arena 4096 B, needs {needs} B")),
        "{pass}"
    );
}
