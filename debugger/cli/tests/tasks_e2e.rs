//! `memlife tasks` on the RTOS firmware (FreeRTOS V11) in QEMU, on both boards: the Cortex-M3
//! mps2-an385 (ARM_CM3 port) and the Cortex-M4F netduinoplus2 (ARM_CM4F port, FPU frames).
//! At each stop memlife reads the tasks with `--at ... --leave halted`, then gdb-multiarch reads
//! the same halted QEMU on its own with firmware/tools/rtoswalk.py (names, TCBs, states,
//! priorities, stack bounds, saved pc/sp/lr and frame shapes, high-water marks, the TCB and
//! stack heap blocks), and, in the hwm build, the firmware's own uxTaskGetStackHighWaterMark
//! results (`g_stack_hwm`). Stops: before the scheduler starts, the recorder's stops, a task
//! deleted and not yet freed, and an exception handler.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use memlife_rsp::QemuProcess;
use serde_json::Value;

/// The hwm build: the healthy firmware plus StackMon, which records every task's
/// uxTaskGetStackHighWaterMark into `g_stack_hwm` and then calls `stack_hwm_recorded`.
fn hwm_elf(board: &str) -> std::path::PathBuf {
    memlife_testkit::firmware::elf("rtos", &format!("{board}-hwm"))
}

/// QEMU for the RTOS firmware as firmware/tools/qemu_check.sh runs it: `-icount`, so that the
/// firmware's timing self-check sees every tick however slow the host (a self-check that
/// fires parks the firmware in vAssertCalled, where no stop below is ever reached).
fn qemu(board: &str, elf: &Path) -> QemuProcess {
    QemuProcess::start(board, elf, &["-icount", "shift=auto"]).unwrap()
}

/// `memlife tasks --json` run to the `hit`-th entry of `at`, the target left halted there.
fn memlife_tasks(elf: &Path, server: &str, at: &str, hit: u32) -> Value {
    let hit = hit.to_string();
    memlife_json(&[
        "tasks",
        "--elf",
        elf.to_str().unwrap(),
        "--gdb",
        server,
        "--at",
        at,
        "--hit",
        &hit,
        "--timeout",
        "60",
        "--leave",
        "halted",
        "--json",
    ])
}

/// gdb's own reading of the halted QEMU: rtoswalk.py's `rtos-tasks json`, and with `hwm` the
/// firmware's `g_stack_hwm`; gdb then disconnects, leaving QEMU halted for the next stop.
fn gdb_reading(elf: &Path, server: &str, hwm: bool) -> (Vec<Value>, Option<Value>) {
    let walk = format!(
        "source {}",
        repo().join("firmware/tools/rtoswalk.py").display()
    );
    let fw = format!("source {}", gdb_script("stack_hwm.py").display());
    let mut cmds = vec![walk.as_str(), "rtos-tasks json"];
    if hwm {
        cmds.extend([fw.as_str(), "ref-hwm"]);
    }
    cmds.push("disconnect");
    let out = gdb_batch(elf, server, &cmds);
    let text = stdout(&out);
    let tasks = text
        .lines()
        .find(|l| l.starts_with("[{"))
        .unwrap_or_else(|| {
            panic!(
                "no rtos-tasks JSON in gdb's output:\n{text}\n{}",
                stderr(&out)
            )
        });
    let tasks: Vec<Value> = serde_json::from_str(tasks).unwrap();
    let fw = hwm.then(|| {
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("REF-HWM "))
            .unwrap_or_else(|| panic!("no REF-HWM line:\n{text}\n{}", stderr(&out)));
        serde_json::from_str(line).unwrap()
    });
    (tasks, fw)
}

/// rtoswalk's state names as memlife's (and whether the task was readied while the scheduler
/// was suspended).
fn state(gdb: &str) -> (&'static str, bool) {
    match gdb {
        "Running" => ("running", false),
        "Ready" => ("ready", false),
        "Ready (pending)" => ("ready", true),
        "Blocked" | "Blocked (no timeout)" => ("blocked", false),
        "Suspended" => ("suspended", false),
        "Deleted (awaiting idle)" => ("deleted", false),
        other => panic!("rtoswalk state {other}"),
    }
}

/// rtoswalk's frame names as memlife's (`core` for the running task).
fn frame(gdb: &str) -> &'static str {
    match gdb {
        "basic 0x40" => "basic-0x40",
        "basic 0x44" => "basic-0x44",
        "extended (FPU) 0xcc" => "extended-0xcc",
        "running (core registers)" => "core",
        other => panic!("rtoswalk frame {other}"),
    }
}

/// gdb reads `$lr` as a signed int: 0xFFFFFFFD (an EXC_RETURN in a handler) comes as -3.
fn word(v: &Value) -> Value {
    match v.as_i64() {
        Some(n) if n < 0 => Value::from(n + (1i64 << 32)),
        _ => v.clone(),
    }
}

fn block(v: &Value) -> Value {
    match v {
        Value::Null => Value::Null,
        b => serde_json::json!([b["addr"], b["size"]]),
    }
}

/// Compares every task memlife lists with gdb's reading; returns the fields compared.
fn compare(what: &str, mine: &Value, gdb: &[Value]) -> usize {
    let tasks: BTreeMap<u64, &Value> = mine["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["tcb"].as_u64().unwrap(), t))
        .collect();
    let theirs: Vec<u64> = gdb.iter().map(|t| t["tcb"].as_u64().unwrap()).collect();
    assert_eq!(
        tasks.keys().copied().collect::<Vec<_>>(),
        {
            let mut v = theirs.clone();
            v.sort_unstable();
            v
        },
        "{what}: the TCBs (memlife / gdb)"
    );
    let mut n = 0;
    for g in gdb {
        let t = tasks[&g["tcb"].as_u64().unwrap()];
        let who = format!("{what}: task {}", g["name"]);
        let mut eq = |field: &str, a: &Value, b: &Value| {
            assert_eq!(a, b, "{who}: {field} (memlife / gdb)");
            n += 1;
        };
        let (st, pending) = state(g["state"].as_str().unwrap());
        eq("state", &t["state"], &st.into());
        eq("pending_ready", &t["pending_ready"], &pending.into());
        for (m, r) in [
            ("name", "name"),
            ("number", "number"),
            ("priority", "priority"),
            ("stack_low", "stack_low"),
            ("stack_high", "stack_high"),
            ("stack_size", "stack_bytes"),
            ("top_of_stack", "top_of_stack"),
            ("high_water_bytes", "hwm_bytes"),
            ("high_water_words", "hwm_words"),
            ("pc", "pc"),
            ("sp", "sp"),
            ("lr", "lr"),
        ] {
            eq(m, &t[m], &word(&g[r]));
        }
        let kind = match t["registers"]["source"].as_str() {
            Some("core") => Value::from("core"),
            _ => t["registers"]["frame"].clone(),
        };
        eq("frame", &kind, &frame(g["frame"].as_str().unwrap()).into());
        eq("tcb_block", &block(&t["tcb_block"]), &g["tcb_block"]);
        eq("stack_block", &block(&t["stack_block"]), &g["stack_block"]);
        let stat = g["static"].as_bool().unwrap();
        eq(
            "allocation",
            &(t["allocation"] != "dynamic").into(),
            &stat.into(),
        );
    }
    assert_eq!(
        mine["anomalies"],
        serde_json::json!([]),
        "{what}: anomalies"
    );
    n
}

/// memlife's high-water marks against the firmware's own uxTaskGetStackHighWaterMark of every
/// task it recorded (every task the kernel has, deleted ones awaiting the idle task included).
fn compare_firmware(what: &str, mine: &Value, fw: &Value) -> usize {
    let rows = fw["tasks"].as_array().unwrap();
    assert_eq!(
        rows.len(),
        mine["tasks"].as_array().unwrap().len(),
        "{what}: tasks recorded by the firmware / listed by memlife"
    );
    for row in rows {
        let t = mine["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tcb"] == row["tcb"])
            .unwrap_or_else(|| panic!("{what}: the firmware's task {row} is not listed"));
        assert_eq!(t["name"], row["name"], "{what}: name of {}", row["tcb"]);
        assert_eq!(
            t["high_water_words"], row["hwm_words"],
            "{what}: task {}: high-water mark in words (memlife / uxTaskGetStackHighWaterMark)",
            row["name"]
        );
    }
    rows.len()
}

/// One board: five stops on one QEMU, each read by memlife and then by gdb.
fn board(board: &str) {
    let elf = hwm_elf(board);
    let q = qemu(board, &elf);
    let server = q.addr().to_string();
    let fpu = board == "netduinoplus2";
    let mut compared = 0;

    // Before the scheduler starts: the application's tasks exist, none runs.
    let mine = memlife_tasks(&elf, &server, "vTaskStartScheduler", 1);
    let (gdb, _) = gdb_reading(&elf, &server, false);
    assert_eq!(mine["scheduler"], "not-started", "{board}");
    assert_eq!(mine["running"]["label"], "main", "{board}");
    assert!(
        mine["tasks"].as_array().unwrap().len() >= 6,
        "{board}: {mine}"
    );
    assert!(
        mine["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["state"] == "ready" && t["registers"]["source"] == "saved"),
        "{board}: {mine}"
    );
    compared += compare(&format!("{board} before the scheduler"), &mine, &gdb);
    assert_eq!(mine["port"]["fpu_context"], fpu, "{board}");
    assert_eq!(
        mine["port"]["name"],
        if fpu { "ARM_CM4F" } else { "ARM_CM3" },
        "{board}"
    );

    // The recorder's first and second rounds: every task against the firmware's own figures.
    for (round, hit) in [(1, 1), (2, 1)] {
        let mine = memlife_tasks(&elf, &server, "stack_hwm_recorded", hit);
        let (gdb, fw) = gdb_reading(&elf, &server, true);
        let fw = fw.unwrap();
        assert_eq!(fw["rounds"], round, "{board}");
        let what = format!("{board} recorder round {round}");
        compared += compare(&what, &mine, &gdb);
        compared += compare_firmware(&what, &mine, &fw);
        assert_eq!(mine["running"]["label"], "StackMon", "{what}");
        assert_eq!(mine["heap"]["allocator"], "freertos-heap4", "{what}");
        if fpu {
            // The timing check's task computes in floating point: its context has the FPU
            // registers.
            let check = mine["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == "Check")
                .unwrap();
            assert_eq!(check["registers"]["frame"], "extended-0xcc", "{what}");
            assert_eq!(check["registers"]["s"].as_array().unwrap().len(), 32);
        }
    }

    // Workers delete themselves; the idle task frees them later: catch one in between.
    let mut deleted_seen = false;
    for _ in 0..6 {
        let mine = memlife_tasks(&elf, &server, "vTaskDelete", 2);
        let (gdb, _) = gdb_reading(&elf, &server, false);
        compared += compare(&format!("{board} at vTaskDelete"), &mine, &gdb);
        if let Some(t) = mine["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["state"] == "deleted")
        {
            assert_eq!(t["list"], "xTasksWaitingTermination");
            assert!(
                t["tcb_block"].is_object() && t["stack_block"].is_object(),
                "{t}"
            );
            deleted_seen = true;
            eprintln!("{board}: {} deleted, awaiting the idle task", t["name"]);
            break;
        }
    }
    assert!(
        deleted_seen,
        "{board}: no task was caught deleted and not yet freed"
    );

    // In the tick interrupt: the core runs a handler, pxCurrentTCB is the interrupted task.
    let mine = memlife_tasks(&elf, &server, "xPortSysTickHandler", 3);
    let (gdb, _) = gdb_reading(&elf, &server, false);
    assert_eq!(mine["running"]["kind"], "isr", "{board}");
    assert_eq!(mine["running"]["label"], "ISR 15", "{board}");
    compared += compare(&format!("{board} in SysTick"), &mine, &gdb);

    assert!(compared > 300, "{board}: only {compared} fields compared");
    eprintln!("{board}: {compared} fields compared with gdb and the firmware");
}

#[test]
fn tasks_match_gdb_and_the_firmware_on_mps2_an385() {
    board("mps2-an385");
}

#[test]
fn tasks_match_gdb_and_the_firmware_on_netduinoplus2() {
    board("netduinoplus2");
}

#[test]
fn a_firmware_without_freertos_is_refused_with_a_message() {
    let out = run_memlife(&[
        "tasks",
        "--elf",
        elf("heap4", "healthy").to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no FreeRTOS kernel found"),
        "{}",
        stderr(&out)
    );
}
