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
        if round == 2 {
            // Offline: a snapshot of the same stop gives the same tasks.
            let snap = tempdir("tasks-snapshot").join("stop.mlsnap");
            let snap_s = snap.to_str().unwrap();
            let elf_s = elf.to_str().unwrap();
            let out = run_memlife(&[
                "snapshot", "--elf", elf_s, "--gdb", &server, "-o", snap_s, "--leave", "halted",
            ]);
            assert!(out.status.success(), "{}", stderr(&out));
            let offline = memlife_json(&["tasks", "--elf", elf_s, "--snapshot", snap_s, "--json"]);
            assert_eq!(offline["tasks"], mine["tasks"], "{what}: from the snapshot");
            assert_eq!(
                offline["running"], mine["running"],
                "{what}: from the snapshot"
            );
        }
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

/// stack-deep: conv_b stages its weights on the inference task's stack, which is sized to
/// leave a few words (firmware/Makefile): after one inference the task's high-water mark is
/// that margin, as gdb counts it too, and memlife says nothing overflowed.
#[test]
fn stack_deep_shows_the_inference_tasks_few_words_left() {
    for board in ["mps2-an385", "netduinoplus2"] {
        let elf = memlife_testkit::firmware::elf("rtos", &format!("{board}-stack-deep"));
        let q = qemu(board, &elf);
        let server = q.addr().to_string();
        let mine = memlife_tasks(&elf, &server, "model_release", 1);
        let (gdb, _) = gdb_reading(&elf, &server, false);
        compare(&format!("{board} stack-deep"), &mine, &gdb);
        let infer = mine["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "Infer")
            .unwrap();
        let words = infer["high_water_words"].as_u64().unwrap();
        assert!(
            (1..=24).contains(&words),
            "{board}: Infer has {words} words left"
        );
        eprintln!("{board} stack-deep: Infer never used {words} words of its stack");
    }
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

/// A configuration far from the bundled firmware's, for the same kernel sources: 16-bit ticks,
/// list integrity words and a full `ListItem_t` as each list's end marker (every list offset
/// moves), no trace facility, no `pxEndOfStack`, no mutexes, no notifications, no stack fill,
/// only static tasks, no vTaskDelete or vTaskSuspend (no termination or suspended list).
const MINIMAL_CONFIG: &str = r#"
#define configCPU_CLOCK_HZ 25000000
#define configTICK_RATE_HZ 100
#define configTICK_TYPE_WIDTH_IN_BITS TICK_TYPE_WIDTH_16_BITS
#define configUSE_PREEMPTION 1
#define configUSE_PORT_OPTIMISED_TASK_SELECTION 0
#define configMAX_PRIORITIES 3
#define configMINIMAL_STACK_SIZE 128
#define configMAX_TASK_NAME_LEN 8
#define configUSE_LIST_DATA_INTEGRITY_CHECK_BYTES 1
#define configUSE_MINI_LIST_ITEM 0
#define configSUPPORT_DYNAMIC_ALLOCATION 0
#define configSUPPORT_STATIC_ALLOCATION 1
#define configKERNEL_PROVIDED_STATIC_MEMORY 1
#define configUSE_TRACE_FACILITY 0
#define configRECORD_STACK_HIGH_ADDRESS 0
#define configCHECK_FOR_STACK_OVERFLOW 0
#define configUSE_MUTEXES 0
#define configUSE_TASK_NOTIFICATIONS 0
#define configUSE_TIMERS 0
#define configUSE_IDLE_HOOK 0
#define configUSE_TICK_HOOK 0
#define configUSE_CO_ROUTINES 0
#define INCLUDE_vTaskDelete 0
#define INCLUDE_vTaskSuspend 0
#define INCLUDE_vTaskDelay 1
#define configKERNEL_INTERRUPT_PRIORITY 0xFF
#define configMAX_SYSCALL_INTERRUPT_PRIORITY 0xA0
"#;

/// Two static tasks that count and sleep, with a vector table and reset handler of their own.
const MINIMAL_APP: &str = r#"
#include <stdint.h>
#include "FreeRTOS.h"
#include "task.h"

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
void vPortSVCHandler(void);
void xPortPendSVHandler(void);
void xPortSysTickHandler(void);
int main(void);

static void spin(void) { for (;;) { } }
void Reset_Handler(void)
{
    uint32_t *src = &_sidata, *dst = &_sdata;
    while (dst < &_edata) *dst++ = *src++;
    for (dst = &_sbss; dst < &_ebss;) *dst++ = 0u;
    (void)main();
    spin();
}
typedef void (*vector_t)(void);
__attribute__((section(".isr_vector"), used)) const vector_t g_vectors[16] = {
    (vector_t)(uintptr_t)&_estack, Reset_Handler, spin, spin, spin, spin, spin, 0, 0, 0, 0,
    vPortSVCHandler, spin, 0, xPortPendSVHandler, xPortSysTickHandler,
};

volatile uint32_t g_counts[2];
__attribute__((noinline, used)) void work(uint32_t which)
{
    g_counts[which]++;
    __asm__ volatile("" ::: "memory");
}
static void task(void *arg)
{
    const uint32_t which = (uint32_t)(uintptr_t)arg;
    for (;;) {
        work(which);
        vTaskDelay(1 + which);
    }
}

StackType_t stack_a[160], stack_b[200];
static StaticTask_t tcb_a, tcb_b;
int main(void)
{
    (void)xTaskCreateStatic(task, "TaskA", 160, (void *)0, 1, stack_a, &tcb_a);
    (void)xTaskCreateStatic(task, "TaskB", 200, (void *)1, 2, stack_b, &tcb_b);
    vTaskStartScheduler();
    return 0;
}
"#;

/// Builds the minimal-configuration firmware for mps2-an385 from the kernel sources the
/// firmware build fetched.
fn minimal_kernel_firmware(dir: &Path) -> std::path::PathBuf {
    let fw = repo().join("firmware");
    let kernel = fw.join("build/FreeRTOS-Kernel");
    std::fs::write(dir.join("FreeRTOSConfig.h"), MINIMAL_CONFIG).unwrap();
    std::fs::write(dir.join("app.c"), MINIMAL_APP).unwrap();
    let elf = dir.join("minimal.elf");
    let out = std::process::Command::new("arm-none-eabi-gcc")
        .args(["-mcpu=cortex-m3", "-mthumb", "-O2", "-g", "-std=c11"])
        .arg(format!("-I{}", dir.display()))
        .arg(format!("-I{}", kernel.join("include").display()))
        .arg(format!(
            "-I{}",
            kernel.join("portable/GCC/ARM_CM3").display()
        ))
        .arg(dir.join("app.c"))
        .args(["tasks.c", "list.c", "queue.c"].map(|f| kernel.join(f)))
        .arg(kernel.join("portable/GCC/ARM_CM3/port.c"))
        .args(["--specs=nano.specs", "-nostartfiles", "-ffunction-sections"])
        .arg(format!("-L{}", fw.join("ld").display()))
        .arg(format!("-T{}", fw.join("ld/mps2-an385.ld").display()))
        .args(["-Wl,--gc-sections", "-Wl,--no-warn-rwx-segments", "-o"])
        .arg(&elf)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    elf
}

/// The address of a symbol, as the toolchain's nm gives it (a function static's name carries
/// a `.N` suffix).
fn nm(elf: &Path, symbol: &str) -> u64 {
    let out = std::process::Command::new("arm-none-eabi-nm")
        .arg(elf)
        .output()
        .unwrap();
    stdout(&out)
        .lines()
        .find_map(|l| {
            let mut f = l.split_whitespace();
            let addr = f.next()?;
            let _kind = f.next()?;
            let name = f.next()?;
            let base = name.split_once('.').map_or(name, |(b, _)| b);
            (base == symbol).then(|| u64::from_str_radix(addr, 16).unwrap())
        })
        .unwrap_or_else(|| panic!("{symbol} not in {}", elf.display()))
}

#[test]
fn a_kernel_built_without_the_optional_members_reads_too() {
    hwm_elf("mps2-an385"); // the firmware build fetches the kernel sources
    let dir = tempdir("tasks-minimal");
    let elf = minimal_kernel_firmware(&dir);
    let v = memlife_json(&[
        "tasks",
        "--elf",
        elf.to_str().unwrap(),
        "--qemu",
        "mps2-an385",
        "--at",
        "work",
        "--hit",
        "7",
        "--json",
    ]);
    assert_eq!(v["anomalies"], serde_json::json!([]), "{v}");
    assert_eq!(v["port"]["name"], "ARM_CM3");
    assert_eq!(v["scheduler"], "running");
    assert_eq!(v["stack_fill"]["counted"], false, "no fill in this build");
    assert!(
        v["heap"]["error"].is_string(),
        "no heap to walk: {}",
        v["heap"]
    );
    let tasks = v["tasks"].as_array().unwrap();
    let names: Vec<&str> = tasks.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    for (name, prio, stack, words) in [
        ("TaskA", 1, "stack_a", 160),
        ("TaskB", 2, "stack_b", 200),
        ("IDLE", 0, "uxIdleTaskStack", 128),
    ] {
        let t = tasks.iter().find(|t| t["name"] == name).unwrap();
        assert_eq!(t["priority"], prio, "{name}");
        for absent in ["number", "base_priority", "allocation", "high_water_bytes"] {
            assert!(t[absent].is_null(), "{name}: {absent} in {t}");
        }
        // No pxEndOfStack: the top is the end of the static array that holds the stack.
        assert_eq!(t["stack_low"], nm(&elf, stack), "{name}");
        assert_eq!(t["stack_size"], 4 * words, "{name}");
        assert_eq!(t["stack_high_from"], "static-array", "{name}");
        let sp = t["sp"].as_u64().unwrap();
        assert!(sp > t["stack_low"].as_u64().unwrap(), "{name}: {t}");
    }
    // The task that called work() runs; the other waits in vTaskDelay with its saved context.
    let running = v["running"]["label"].as_str().unwrap();
    assert!(running == "TaskA" || running == "TaskB", "{}", v["running"]);
    let other = if running == "TaskA" { "TaskB" } else { "TaskA" };
    let t = tasks.iter().find(|t| t["name"] == other).unwrap();
    assert_eq!(t["registers"]["frame"], "basic-0x40", "{t}");
    assert!(
        ["blocked", "ready"].contains(&t["state"].as_str().unwrap()),
        "{t}"
    );
    let running = tasks.iter().find(|t| t["name"] == running).unwrap();
    assert_eq!(running["function"], "work", "{running}");
}
