//! The firmware's own heap figures against memlife's `firmware_view`, and the allocator option
//! builds (heap protector, heap_5 regions) against an independent gdb-multiarch walk, at three
//! stops of every scenario in QEMU.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use common::*;
use memlife_rsp::QemuProcess;
use serde_json::Value;

/// The option builds of the allocators: heap_4 with the V11 heap protector, heap_5's regions
/// (one not 8-aligned) without and with it (raw-NULL encoding of blocks in use).
const OPTION_ALLOCS: &[&str] = &["heap4p", "heap5", "heap5p"];
/// Every allocator build whose firmware records its own API's figures in `g_firmware_view`.
const VIEW_ALLOCS: &[&str] = &[
    "heap4", "heap4p", "heap5", "heap5p", "nano", "tlsf", "tlsfp", "tlsfpc",
];
/// The scenarios plus the one that writes past an operator's output buffer.
const VIEW_SCENARIOS: &[&str] = &[
    "healthy",
    "load-peak",
    "reorder",
    "branch-peak",
    "leak-on-switch",
    "fragmentation",
    "overlap",
    "overrun",
];
/// The JSON after `prefix` in gdb's output.
fn gdb_json(out: &std::process::Output, prefix: &str) -> Value {
    let text = stdout(out);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no {prefix} line in gdb's output:\n{text}\n{}", stderr(out)));
    serde_json::from_str(line).unwrap()
}

/// Compares memlife's `firmware_view` with the firmware's own `g_firmware_view` field by field;
/// returns how many fields were compared.
fn compare_view(name: &str, mine: &Value, fw: &Value) -> usize {
    let mut n = 0;
    let mut eq = |what: &str, a: &Value, b: &Value| {
        assert!(a.is_u64() && b.is_u64(), "{name}: {what}: {a} / {b}");
        assert_eq!(a, b, "{name}: {what} (memlife / firmware)");
        n += 1;
    };
    match mine["api"].as_str().unwrap() {
        "freertos" => {
            for f in [
                "xAvailableHeapSpaceInBytes",
                "xSizeOfLargestFreeBlockInBytes",
                "xSizeOfSmallestFreeBlockInBytes",
                "xNumberOfFreeBlocks",
                "xMinimumEverFreeBytesRemaining",
                "xNumberOfSuccessfulAllocations",
                "xNumberOfSuccessfulFrees",
            ] {
                eq(f, &mine["heap_stats"][f], &fw["stats"][f]);
            }
            eq(
                "xPortGetFreeHeapSize",
                &mine["xPortGetFreeHeapSize"],
                &fw["free_heap_size"],
            );
            eq(
                "xPortGetMinimumEverFreeHeapSize",
                &mine["xPortGetMinimumEverFreeHeapSize"],
                &fw["minimum_ever_free_heap_size"],
            );
        }
        "newlib" => {
            for f in [
                "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                "fordblks", "keepcost",
            ] {
                eq(f, &mine["mallinfo"][f], &fw["info"][f]);
            }
        }
        "esp-idf" => {
            const INFO: [&str; 7] = [
                "total_free_bytes",
                "total_allocated_bytes",
                "largest_free_block",
                "minimum_free_bytes",
                "allocated_blocks",
                "free_blocks",
                "total_blocks",
            ];
            let heaps = mine["heaps"].as_array().unwrap();
            eq("heap_count", &heaps.len().into(), &fw["heap_count"]);
            for (i, h) in heaps.iter().enumerate() {
                for f in INFO {
                    eq(
                        &format!("heaps[{i}].{f}"),
                        &h["info"][f],
                        &fw["heaps"][i][f],
                    );
                }
            }
            let count = fw["caps_count"].as_u64().unwrap() as usize;
            assert!(count > 0, "{name}: the firmware measured no caps");
            for j in 0..count {
                let caps = &fw["caps"][j];
                let c = mine_caps(mine, caps.as_u64().unwrap())
                    .unwrap_or_else(|| panic!("{name}: no heap_caps entry for {caps}"));
                for f in INFO {
                    eq(
                        &format!("heap_caps_get_info({caps}).{f}"),
                        &c["info"][f],
                        &fw["caps_info"][j][f],
                    );
                }
                eq(
                    &format!("heap_caps_get_free_size({caps})"),
                    &c["free_size"],
                    &fw["caps_free_size"][j],
                );
                eq(
                    &format!("heap_caps_get_largest_free_block({caps})"),
                    &c["largest_free_block"],
                    &fw["caps_largest_free_block"][j],
                );
            }
        }
        other => panic!("{name}: unknown api {other}"),
    }
    n
}

fn mine_caps(mine: &Value, caps: u64) -> Option<&Value> {
    mine["heap_caps"]
        .as_array()?
        .iter()
        .find(|c| c["caps"].as_u64() == Some(caps))
}

/// One QEMU per ELF, three stops at model_release: at each, gdb reads `g_firmware_view` (what
/// the firmware's own API returned just before the call) and, for the option builds, walks the
/// heap itself decoding the canary; then `memlife heap --json` walks the same halted QEMU.
/// Returns the number of firmware fields compared.
fn three_stops(alloc: &str, scenario: &str, view: bool) -> usize {
    let elf = elf(alloc, scenario);
    let elf_s = elf.to_str().unwrap();
    let qemu = QemuProcess::start("netduinoplus2", &elf, &[]).unwrap();
    let server = qemu.addr().to_string();
    let fv_script = gdb_script("firmware_view.py");
    let ref_script = gdb_script("heap_reference.py");
    let walk_ref = OPTION_ALLOCS.contains(&alloc);
    let mut compared = 0;
    for hit in 1..=3u64 {
        let name = format!("{alloc}-{scenario} hit {hit}");
        let source_fv = format!("source {}", fv_script.display());
        let source_ref = format!("source {}", ref_script.display());
        let mut cmds = vec![
            "break model_release",
            "continue",
            source_fv.as_str(),
            "ref-fv",
        ];
        if walk_ref {
            cmds.extend([source_ref.as_str(), "ref-heap"]);
        }
        cmds.extend(["delete", "disconnect"]);
        let gdb = gdb_batch(&elf, &server, &cmds);
        let fw = if view {
            let fw = gdb_json(&gdb, "REF-FV ");
            assert_eq!(fw["captures"], hit, "{name}: g_firmware_view.captures");
            fw
        } else {
            Value::Null
        };
        let mut args = vec![
            "heap", "--elf", elf_s, "--gdb", &server, "--json", "--leave", "halted",
        ];
        let caps: Vec<String> = fw["caps"]
            .as_array()
            .map(|c| {
                c.iter()
                    .take(fw["caps_count"].as_u64().unwrap_or(0) as usize)
                    .map(|x| x.to_string())
                    .collect()
            })
            .unwrap_or_default();
        for c in &caps {
            args.extend(["--caps", c.as_str()]);
        }
        let v = memlife_json(&args);
        let poisoning = match alloc {
            "tlsf" => "none",
            "tlsfp" => "light",
            "tlsfpc" => "comprehensive",
            _ => "",
        };
        if !poisoning.is_empty() {
            assert_eq!(v["poisoning"], poisoning, "{name}");
        }
        if alloc.starts_with("tlsfp") && scenario == "overrun" {
            // The block det_post overran is kept: its broken tail canary is all that is wrong.
            assert_eq!(v["status"], "corrupt", "{name}");
            let kinds: Vec<&Value> = v["anomalies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| &a["kind"])
                .collect();
            assert_eq!(kinds, ["overrun"], "{name}: {}", v["anomalies"]);
        } else {
            assert_eq!(v["status"], "ok", "{name}: {}", v["anomalies"]);
        }
        assert_eq!(
            v["pc"]["function"], "model_release",
            "{name}: stopped elsewhere"
        );
        if view {
            compared += compare_view(&name, &v["firmware_view"], &fw);
        }
        if walk_ref {
            let reference = gdb_json(&gdb, "REF-HEAP ");
            assert_eq!(v["allocator"], reference["allocator"], "{name}");
            for k in ["total_free", "free_blocks", "used_blocks"] {
                assert_eq!(v[k], reference[k], "{name}: {k}");
            }
            assert_eq!(
                v["total_free"], reference["counter_free"],
                "{name}: xFreeBytesRemaining"
            );
            assert_eq!(free_list(&v), free_list(&reference), "{name}: free list");
            assert_eq!(blocks(&v), blocks(&reference), "{name}: blocks");
        }
    }
    drop(qemu);
    compared
}

/// Runs `job` over `jobs` on two threads (the machine's cores; each job is one QEMU plus gdb
/// and memlife in turn) and returns the sum of what the jobs return.
fn two_at_a_time(jobs: &[(&str, &str)], job: impl Fn(&str, &str) -> usize + Sync) -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Build every ELF first, outside the threads.
    for (a, s) in jobs {
        elf(a, s);
    }
    let next = AtomicUsize::new(0);
    let total = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while let Some((a, s)) = jobs.get(next.fetch_add(1, Ordering::SeqCst)) {
                    total.fetch_add(job(a, s), Ordering::SeqCst);
                }
            });
        }
    });
    total.into_inner()
}

/// The acceptance checks, at model_release hits 1..3 of every scenario, one QEMU per
/// ELF: `firmware_view` equals, field by field, what the firmware's own API returned
/// (`g_firmware_view`, read by gdb) for every allocator build; and the option builds
/// (heap4p/heap5/heap5p) walk as gdb walks them (the canary and the regions decoded by gdb's
/// script itself), status ok. On the poisoning builds the overrun scenario's heap is
/// corrupt (one overrun) by design.
#[test]
fn firmware_view_equals_the_firmwares_own_figures_at_three_stops() {
    let jobs: Vec<(&str, &str)> = VIEW_ALLOCS
        .iter()
        .flat_map(|a| VIEW_SCENARIOS.iter().map(move |s| (*a, *s)))
        .collect();
    let total = two_at_a_time(&jobs, |a, s| three_stops(a, s, true));
    println!(
        "{} ELFs, 3 stops each, {total} firmware fields compared",
        jobs.len()
    );
    assert!(total >= jobs.len() * 3 * 9, "{total} fields");
}
