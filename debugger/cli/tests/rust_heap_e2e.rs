//! The Rust firmware (firmware/rust: embedded-alloc's LlffHeap and TlsfHeap) under real QEMU:
//! `memlife heap` against an independent gdb-multiarch walk and against the allocator's own
//! `used()`/`free()` as the firmware called them, and damaged hole and block headers.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use common::*;
use memlife_rsp::QemuProcess;
use serde_json::Value;

const RUST_ALLOCS: &[&str] = &["rust-llff", "rust-tlsf"];
const RUST_SCENARIOS: &[&str] = &["healthy", "leak-on-switch", "fragmentation", "load-peak"];

/// The JSON after `prefix` in gdb's output.
fn gdb_json(out: &std::process::Output, prefix: &str) -> Value {
    let text = stdout(out);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no {prefix} line in gdb's output:\n{text}\n{}", stderr(out)));
    serde_json::from_str(line).unwrap()
}

/// gdb stops at the `hit`th entry of model_release and prints its own walk and the firmware's
/// own figures.
fn gdb_reference(elf: &std::path::Path, server: &str, hit: u32) -> (Value, Value) {
    let script = format!("source {}", gdb_script("rust_heap_reference.py").display());
    let mut cmds = vec!["break firmware::engine::model_release"];
    cmds.extend(std::iter::repeat_n("continue", hit as usize));
    cmds.extend([
        script.as_str(),
        "ref-rust-heap",
        "ref-rust-fv",
        "delete",
        "disconnect",
    ]);
    let out = gdb_batch(elf, server, &cmds);
    (gdb_json(&out, "REF-HEAP "), gdb_json(&out, "REF-FV "))
}

/// The acceptance check on every Rust ELF: at the 2nd entry of model_release, memlife's
/// walk equals gdb's (blocks, free list, totals), and `firmware_view` equals what
/// `HEAP.used()`/`HEAP.free()` returned in the firmware right before the call.
#[test]
fn rust_heaps_match_gdb_and_the_allocators_own_figures() {
    for alloc in RUST_ALLOCS {
        for scenario in RUST_SCENARIOS {
            let name = format!("{alloc}-{scenario}");
            let elf = elf(alloc, scenario);
            let elf_s = elf.to_str().unwrap();
            let qemu = QemuProcess::start("netduinoplus2", &elf, &[]).unwrap();
            let server = qemu.addr().to_string();
            let (reference, fw) = gdb_reference(&elf, &server, 2);
            let v = memlife_json(&[
                "heap", "--elf", elf_s, "--gdb", &server, "--json", "--leave", "halted",
            ]);
            drop(qemu);
            assert_eq!(v["status"], "ok", "{name}: {}", v["anomalies"]);
            assert_eq!(v["allocator"], reference["allocator"], "{name}");
            assert_eq!(
                v["pc"]["function"], "firmware::engine::model_release",
                "{name}"
            );
            assert_eq!(
                v["pc"]["address"], reference["pc"],
                "{name}: stopped elsewhere"
            );
            for k in [
                "heap_start",
                "heap_size",
                "total_free",
                "free_blocks",
                "used_blocks",
            ] {
                assert_eq!(v[k], reference[k], "{name}: {k}");
            }
            assert_eq!(free_list(&v), free_list(&reference), "{name}: free list");
            assert_eq!(blocks(&v), blocks(&reference), "{name}: blocks");
            // The allocator's own accounting, as the firmware read it.
            assert_eq!(fw["captures"], 2, "{name}");
            let view = &v["firmware_view"];
            assert_eq!(view["api"], "embedded-alloc", "{name}");
            assert_eq!(view["used"], fw["used"], "{name}: used()");
            assert_eq!(view["free"], fw["free"], "{name}: free()");
            assert_eq!(view["used"], reference["used"], "{name}: used() per gdb");
            assert_eq!(view["free"], reference["free"], "{name}: free() per gdb");
            if scenario == &"fragmentation" {
                let ratio = v["largest_free_ratio"].as_f64().unwrap();
                assert!(ratio < 0.5, "{name}: largest/total {ratio}");
            }
        }
    }
}

/// A hole (LlffHeap) or block (TlsfHeap) header overwritten in the halted target is reported as
/// corruption naming its address: no panic, no hang, a JSON answer.
#[test]
fn a_damaged_hole_or_block_header_is_reported() {
    for (alloc, what) in [("rust-llff", "hole"), ("rust-tlsf", "block")] {
        let elf = elf(alloc, "healthy");
        let elf_s = elf.to_str().unwrap();
        let qemu = QemuProcess::start("netduinoplus2", &elf, &[]).unwrap();
        let server = qemu.addr().to_string();
        let (reference, _) = gdb_reference(&elf, &server, 1);
        // LlffHeap: the first hole's size; TlsfHeap: the size word of the second block.
        let target = if what == "hole" {
            free_list(&reference)[0]
        } else {
            blocks(&reference)[1].0
        };
        let poke = format!("set {{unsigned int}}{target} = 3");
        gdb_batch(
            &elf,
            &server,
            &["set language c", poke.as_str(), "disconnect"],
        );
        let out = run_memlife(&[
            "heap", "--elf", elf_s, "--gdb", &server, "--json", "--leave", "halted",
        ]);
        drop(qemu);
        assert!(
            out.status.code().is_some_and(|c| c != 101),
            "{alloc}: memlife crashed: {}",
            stderr(&out)
        );
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{alloc}: no JSON ({e}): {}", stderr(&out)));
        assert_eq!(v["status"], "corrupt", "{alloc}: {v}");
        let anomalies = v["anomalies"].as_array().unwrap();
        assert!(
            anomalies.iter().any(|a| a["addr"] == target),
            "{alloc}: no anomaly at the damaged {what} {target:#x}: {anomalies:?}"
        );
    }
}

/// Halted inside the allocator (its functions by their Rust names), the heap may be mid-update:
/// busy, naming the function, not corrupt.
#[test]
fn inside_a_rust_allocator_is_busy() {
    for (alloc, function) in [
        (
            "rust-llff",
            "linked_list_allocator::hole::HoleList::allocate_first_fit",
        ),
        (
            "rust-tlsf",
            "<embedded_alloc::tlsf::Heap as core::alloc::global::GlobalAlloc>::dealloc",
        ),
    ] {
        let elf = elf(alloc, "healthy");
        let v = memlife_json(&[
            "heap",
            "--elf",
            elf.to_str().unwrap(),
            "--qemu",
            "netduinoplus2",
            "--at",
            function,
            "--json",
        ]);
        assert_eq!(v["status"], "busy", "{alloc}: {v}");
        assert_eq!(v["pc"]["function"], function, "{alloc}");
        assert_eq!(
            v["busy_reason"],
            format!("halted inside {function}"),
            "{alloc}"
        );
    }
}
