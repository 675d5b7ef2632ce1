//! `memlife serve` as an RTOS-aware stub, end to end on the RTOS firmware (FreeRTOS V11) in
//! QEMU, on both boards (the Cortex-M3 mps2-an385 and the Cortex-M4F netduinoplus2, whose
//! tasks have the FPU frames too). gdb-multiarch, connected to memlife, reads the tasks on its
//! own with firmware/tools/rtoswalk.py, and reads what memlife serves as threads
//! (tests/gdb/threads.py): at a stop before the scheduler starts, in the kernel's vTaskDelete
//! and in the SysTick handler, every task is a thread with its name and state, a task's
//! backtrace starts where rtoswalk says its saved pc is and ends at its entry function (never
//! in a bogus xPortPendSVHandler frame), and a task's registers are rtoswalk's decode of its
//! saved frame. LLDB lists the same threads and their backtraces. memlife's own call chains
//! (allocation sites in an audit) end at the task's entry function too.
#![allow(clippy::unwrap_used, clippy::panic)] // tests fail loudly

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use memlife_rsp::QemuProcess;
use serde_json::Value;

/// QEMU for the RTOS firmware with `-icount` (as tasks_e2e.rs runs it), so that the timing
/// self-check sees every tick however slow the host and never parks the firmware.
fn qemu(board: &str, elf: &Path) -> QemuProcess {
    QemuProcess::start(board, elf, &["-icount", "shift=auto"]).unwrap()
}

/// The entry function of the firmware's tasks, by the start of their names
/// (firmware/rtos/app.h).
const ENTRIES: &[(&str, &str)] = &[
    ("Infer", "infer_task"),
    ("Worker", "worker_task"),
    ("Sleeper", "sleeper_task"),
    ("Spawner", "spawner_task"),
    ("Logger", "logger_task"),
    ("Producer", "producer_task"),
    ("Consumer", "consumer_task"),
    ("Check", "check_task"),
    ("Tmr Svc", "prvTimerTask"),
    ("IDLE", "prvIdleTask"),
];

fn entry_of(name: &str) -> &'static str {
    ENTRIES
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|(_, f)| *f)
        .unwrap_or_else(|| panic!("no entry function known for task {name}"))
}

/// rtoswalk's state names as gdb's thread extra info says them.
fn state(rtoswalk: &str) -> &'static str {
    match rtoswalk {
        "Running" => "Running",
        "Ready" | "Ready (pending)" => "Ready",
        "Blocked" | "Blocked (no timeout)" => "Blocked",
        "Suspended" => "Suspended",
        "Deleted (awaiting idle)" => "Deleted",
        other => panic!("rtoswalk state {other}"),
    }
}

/// One stop as gdb read it: rtoswalk's tasks and gdb's threads.
struct Stop {
    what: String,
    tasks: Vec<Value>,
    threads: Value,
}

/// The lines of one `info threads` for tasks, by the thread id memlife gave (the TCB's
/// address; 1 and 2 are the core's and the handler's threads).
fn info_threads(info: &str) -> BTreeMap<u64, String> {
    info.lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once("Thread 1.")?;
            let tid: String = rest.chars().take_while(char::is_ascii_digit).collect();
            Some((tid.parse().ok()?, l.to_string()))
        })
        .filter(|(tid, _)| *tid > 2)
        .collect()
}

/// gdb reads the target and memlife's threads at each stop of `plan` (gdb commands that end
/// halted); every `rtos-tasks json` is followed by a `ref-threads`.
fn gdb_stops(elf: &Path, server: &str, plan: &[(&str, &[&str])]) -> Vec<Stop> {
    let walk = format!(
        "source {}",
        repo().join("firmware/tools/rtoswalk.py").display()
    );
    let threads = format!("source {}", gdb_script("threads.py").display());
    let mut cmds: Vec<&str> = vec![&walk, &threads];
    for (_, run) in plan {
        cmds.extend(*run);
        cmds.extend(["rtos-tasks json", "ref-threads", "delete"]);
    }
    cmds.push("detach");
    let out = gdb_batch(elf, server, &cmds);
    let text = stdout(&out);
    let tasks: Vec<&str> = text.lines().filter(|l| l.starts_with("[{")).collect();
    let threads: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("REF-THREADS "))
        .collect();
    assert_eq!(
        (tasks.len(), threads.len()),
        (plan.len(), plan.len()),
        "a reading per stop:\n{text}\n{}",
        stderr(&out)
    );
    plan.iter()
        .zip(tasks.iter().zip(threads))
        .map(|((what, _), (t, th))| Stop {
            what: what.to_string(),
            tasks: serde_json::from_str(t).unwrap(),
            threads: serde_json::from_str(th).unwrap(),
        })
        .collect()
}

/// gdb's thread whose remote id is `tid`.
fn thread(stop: &Stop, tid: u64) -> &Value {
    stop.threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["ptid"][1] == tid || t["ptid"][2] == tid)
        .unwrap_or_else(|| panic!("{}: no gdb thread {tid:#x}: {}", stop.what, stop.threads))
}

fn functions(t: &Value) -> Vec<String> {
    t["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["function"].as_str().unwrap_or("??").to_string())
        .collect()
}

/// A task's backtrace ends at its entry function: the last frame gdb names is it, and at most
/// one frame follows (pc 0: the task-exit return address memlife shows as 0); never the
/// function the linker put before the trap, never a "corrupt stack" stop. A Worker ends by
/// tail-calling vTaskDelete (`b.w`): once it deleted itself its chain is vTaskDelete alone,
/// returning to the task-exit address.
fn assert_chain_ends_at_entry(what: &str, name: &str, t: &Value) {
    let bt = t["bt"].as_str().unwrap();
    let frames = t["frames"].as_array().unwrap();
    let entry = entry_of(name);
    let last_named = frames
        .iter()
        .rposition(|f| f["function"].is_string())
        .unwrap_or_else(|| panic!("{what}: task {name}: no named frame:\n{bt}"));
    let last = frames[last_named]["function"].as_str().unwrap();
    let tail_called = entry == "worker_task" && last == "vTaskDelete";
    assert!(
        last == entry || tail_called,
        "{what}: task {name}: the chain ends at its entry {entry}:\n{bt}"
    );
    let after: Vec<&Value> = frames[last_named + 1..].iter().collect();
    assert!(
        after.is_empty() || (after.len() == 1 && after[0]["pc"] == 0),
        "{what}: task {name}: frames after the entry:\n{bt}"
    );
    assert!(!bt.contains("xPortPendSVHandler"), "{what}: {name}:\n{bt}");
    assert!(!bt.contains("corrupt stack"), "{what}: {name}:\n{bt}");
}

/// Every task rtoswalk reads is a thread with its name, state and priority; a task that is not
/// running has its saved registers and a backtrace from its saved pc to its entry function.
/// Returns the threads checked.
fn compare(stop: &Stop, task_exit: u64, in_handler: bool) -> usize {
    let what = &stop.what;
    let info = info_threads(stop.threads["info"].as_str().unwrap());
    let mut checked = 0;
    for task in &stop.tasks {
        let tcb = task["tcb"].as_u64().unwrap();
        let name = task["name"].as_str().unwrap();
        let line = info
            .get(&tcb)
            .unwrap_or_else(|| panic!("{what}: task {name} is not in `info threads`:\n{info:?}"));
        let state_text = if task["state"] == "Running" && in_handler {
            "Running (in exception 15: SysTick)".to_string()
        } else {
            state(task["state"].as_str().unwrap()).to_string()
        };
        let extra = format!(
            "(Name: {name}, State: {state_text}{}, Priority: {})",
            if task["state"] == "Ready (pending)" {
                " (readied while the scheduler was suspended)"
            } else {
                ""
            },
            task["priority"]
        );
        assert!(line.contains(&extra), "{what}: {extra} in\n{line}");
        let t = thread(stop, tcb);
        let regs = &t["registers"];
        let frames = functions(t);
        if task["state"] == "Running" {
            // The core's registers (rtoswalk reads `$pc`, `$sp` of the thread that stopped).
            assert_eq!(regs["pc"], task["pc"], "{what}: {name}: pc");
            assert_eq!(regs["sp"], task["sp"], "{what}: {name}: sp");
            if !in_handler {
                assert_chain_ends_at_entry(what, name, t);
            }
        } else {
            for r in ["pc", "sp"] {
                assert_eq!(regs[r], task[r], "{what}: {name}: {r} (memlife / rtoswalk)");
            }
            // The task-exit return address (a task that never ran) reads as 0.
            let lr = task["lr"].as_u64().unwrap();
            let shown = if lr & !1 == task_exit { 0 } else { lr };
            assert_eq!(regs["lr"], shown, "{what}: {name}: lr (rtoswalk {lr:#x})");
            assert_eq!(
                frames[0],
                task["function"].as_str().unwrap(),
                "{what}: {name}: frame 0 is where rtoswalk says the saved pc is"
            );
            assert_chain_ends_at_entry(what, name, t);
        }
        checked += 1;
    }
    assert_eq!(info.len(), stop.tasks.len(), "{what}: one thread per task");
    checked
}

/// The address of `prvTaskExitError`.
fn task_exit(elf: &Path) -> u64 {
    memlife_dwarf::Symbols::load(elf)
        .unwrap()
        .task_exit_traps()
        .first()
        .copied()
        .expect("prvTaskExitError in the RTOS firmware")
}

fn gdb_board(board: &str) {
    let elf = memlife_testkit::firmware::elf("rtos", &format!("{board}-healthy"));
    let q = qemu(board, &elf);
    let served = serve::start(&elf, &["--gdb", &q.addr().to_string()]);
    let stops = gdb_stops(
        &elf,
        &served.addr,
        &[
            (
                "before the scheduler",
                &["break vTaskStartScheduler", "continue"],
            ),
            (
                "in vTaskDelete",
                &["break vTaskDelete", "continue", "continue"],
            ),
            ("in SysTick", &["break xPortSysTickHandler", "continue"]),
        ],
    );
    let exit = task_exit(&elf);
    let log = served.log();
    assert!(
        log.contains("FreeRTOS tasks are served as gdb threads"),
        "{log}"
    );

    // Before the scheduler: the core is thread 1, `main`, the current one; the tasks wait
    // with the context they will start from (pc at their entry).
    let before = &stops[0];
    let main = thread(before, 1);
    assert_eq!(main["selected"], true, "{}", before.threads);
    assert_eq!(functions(main)[0], "vTaskStartScheduler");
    assert!(
        before.threads["info"]
            .as_str()
            .unwrap()
            .contains("(Name: main, State: Running (scheduler not started))"),
        "{}",
        before.threads["info"]
    );
    let mut checked = compare(before, exit, false);
    for task in &before.tasks {
        let t = thread(before, task["tcb"].as_u64().unwrap());
        assert_eq!(
            functions(t)[0],
            entry_of(task["name"].as_str().unwrap()),
            "not started: {}",
            t["bt"]
        );
    }

    // In vTaskDelete: the running task (a Worker deleting itself, or the Spawner deleting a
    // Sleeper) is the current thread.
    let delete = &stops[1];
    let current = delete.threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["selected"] == true)
        .unwrap();
    assert_eq!(functions(current)[0], "vTaskDelete", "{}", current["bt"]);
    checked += compare(delete, exit, false);

    // In the SysTick handler: without PSP from QEMU the interrupted task is the current
    // thread, with the core's registers.
    let systick = &stops[2];
    checked += compare(systick, exit, true);
    let running = systick
        .tasks
        .iter()
        .find(|t| t["state"] == "Running")
        .unwrap();
    let t = thread(systick, running["tcb"].as_u64().unwrap());
    assert_eq!(t["selected"], true);
    assert_eq!(functions(t)[0], "xPortSysTickHandler", "{}", t["bt"]);
    assert!(checked >= 20, "{board}: only {checked} threads compared");
    eprintln!("{board}: {checked} threads compared with rtoswalk");
}

#[test]
fn gdb_sees_every_task_as_a_thread_on_mps2_an385() {
    gdb_board("mps2-an385");
}

#[test]
fn gdb_sees_every_task_as_a_thread_on_netduinoplus2() {
    gdb_board("netduinoplus2");
}

/// LLDB: `thread list` lists every task (the ids are the TCBs `monitor tasks` prints), and
/// every thread's backtrace ends at its entry function. The stop is in the inference task's
/// inference_run: LLDB (as gdb) takes some of model_load's return addresses for a kernel
/// function whose DWARF ranges the link left at address 0, and LLDB then ends that chain
/// early, with or without memlife in between.
fn lldb_board(board: &str) {
    let elf = memlife_testkit::firmware::elf("rtos", &format!("{board}-healthy"));
    let q = qemu(board, &elf);
    let served = serve::start(&elf, &["--gdb", &q.addr().to_string()]);
    let out = lldb_batch(
        &elf,
        &served.addr,
        &[
            "breakpoint set --name inference_run",
            "continue",
            "thread list",
            "thread backtrace all",
            "process plugin packet monitor tasks",
            "thread select 3",
            "bt",
            "register read pc",
            "detach",
        ],
    );
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{text}\n{}", served.log());
    // `monitor tasks`: each task's TCB and name.
    let tasks: BTreeMap<u64, String> = text
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let _n: u32 = w.next()?.parse().ok()?;
            let mut name = w.next()?.to_string();
            // "Tmr Svc" is two words.
            let mut next = w.next()?;
            if !["running", "ready", "blocked", "suspended", "deleted"].contains(&next) {
                name = format!("{name} {next}");
                next = w.next()?;
            }
            let _state = next;
            let _prio = w.next()?;
            let tcb = u64::from_str_radix(w.next()?.strip_prefix("0x")?, 16).ok()?;
            Some((tcb, name))
        })
        .collect();
    assert!(tasks.len() >= 7, "monitor tasks: {text}");
    // `thread list`: one line per task, its id the TCB.
    let ids = thread_ids(&text);
    let mut listed: Vec<u64> = ids.values().copied().collect();
    listed.sort_unstable();
    assert_eq!(
        listed,
        tasks.keys().copied().collect::<Vec<_>>(),
        "thread list / monitor tasks:\n{text}"
    );
    // `thread backtrace all`: every thread's last frame is its task's entry function.
    let traces = backtraces(&text);
    for (number, frames) in &traces {
        let name = &tasks[&ids[number]];
        let last = frames
            .last()
            .unwrap_or_else(|| panic!("{board}: {name}: no frames"));
        assert!(
            last.contains(&format!("`{}", entry_of(name))),
            "{board}: {name}: the last frame is its entry function:\n{}",
            frames.join("\n")
        );
        assert!(
            !frames.iter().any(|f| f.contains("xPortPendSVHandler")),
            "{board}: {name}:\n{}",
            frames.join("\n")
        );
    }
    assert_eq!(traces.len(), tasks.len(), "a backtrace per task:\n{text}");
    // `thread select 3` then `bt`: that task's own chain. In batch mode lldb may print what
    // `thread select` shows (the thread and its frame 0) after the echo of `bt`, so the chain is
    // the last thread block of the section.
    let selected = &tasks[&ids[&3]];
    let section = text
        .split("(lldb) bt\n")
        .nth(1)
        .and_then(|rest| rest.split("(lldb) ").next())
        .unwrap_or_default();
    let bt: Vec<&str> = section
        .rfind("* thread #")
        .map_or(section, |at| &section[at..])
        .lines()
        .map(|l| l.trim_start().trim_start_matches('*').trim_start())
        .filter(|l| l.starts_with("frame #"))
        .collect();
    assert_eq!(
        bt,
        traces[&3].iter().map(String::as_str).collect::<Vec<_>>(),
        "{board}: bt in thread 3 ({selected}):\n{text}"
    );
    assert!(
        text.contains("pc = 0x"),
        "register read in another thread: {text}"
    );
}

/// A line of LLDB's thread output without its selection mark: `thread #3: ...`.
fn thread_line(line: &str) -> Option<(u32, &str)> {
    let l = line.trim_start().trim_start_matches('*').trim_start();
    let rest = l.strip_prefix("thread #")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((digits.parse().ok()?, rest))
}

/// LLDB's thread numbers and the thread ids `thread list` gives them.
fn thread_ids(text: &str) -> BTreeMap<u32, u64> {
    text.lines()
        .filter_map(thread_line)
        .filter_map(|(n, rest)| {
            let tid = rest.split("tid = 0x").nth(1)?;
            Some((n, u64::from_str_radix(tid.split(',').next()?, 16).ok()?))
        })
        .collect()
}

/// The frames of each thread in `thread backtrace all`, by LLDB's thread number.
fn backtraces(text: &str) -> BTreeMap<u32, Vec<String>> {
    let mut out: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut in_bt = false;
    let mut thread = None;
    for line in text.lines() {
        if line.starts_with("(lldb) ") {
            in_bt = line.contains("thread backtrace all");
            continue;
        }
        if !in_bt {
            continue;
        }
        if let Some((n, _)) = thread_line(line) {
            thread = Some(n);
            out.entry(n).or_default();
        } else if let Some(n) = thread {
            let l = line.trim_start().trim_start_matches('*').trim_start();
            if l.starts_with("frame #") {
                out.entry(n).or_default().push(l.to_string());
            }
        }
    }
    out
}

#[test]
fn lldb_sees_every_task_as_a_thread_on_mps2_an385() {
    lldb_board("mps2-an385");
}

#[test]
fn lldb_sees_every_task_as_a_thread_on_netduinoplus2() {
    lldb_board("netduinoplus2");
}

/// The allocation sites of an audit from reset: blocks the tasks allocated while traced (the
/// Spawner's new tasks' TCBs and stacks, the Producer's messages...) have chains that end at
/// the task's entry function, never in xPortPendSVHandler (before, every task's chain ended
/// there on the Cortex-M3 build: the task-exit return address read as a call); main's, before
/// the scheduler starts, end at the reset handler.
#[test]
fn memlifes_own_chains_end_at_the_tasks_entry_functions() {
    let dir = tempdir("task-chains");
    let script = dir.join("chains.rhai");
    std::fs::write(
        &script,
        r#"
let t = target();
t.trace(true);
let before = t.heap();
t.run_to("vTaskDelete", 4);
for b in t.leaks(before, t.heap()) {
    let c = "";
    for x in b.chain { if c != "" { c += " <- "; } c += x; }
    print(`CHAIN ${c}`);
}
"#,
    )
    .unwrap();
    for board in ["mps2-an385", "netduinoplus2"] {
        let elf = memlife_testkit::firmware::elf("rtos", &format!("{board}-healthy"));
        let q = qemu(board, &elf);
        let out = run_memlife(&[
            "audit",
            "--elf",
            elf.to_str().unwrap(),
            "--gdb",
            &q.addr().to_string(),
            script.to_str().unwrap(),
        ]);
        let text = format!("{}{}", stdout(&out), stderr(&out));
        assert!(out.status.success(), "{board}: {text}");
        let chains: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("CHAIN "))
            .collect();
        let mut in_tasks = Vec::new();
        for chain in &chains {
            assert!(!chain.contains("xPortPendSVHandler"), "{board}: {chain}");
            let last = chain.rsplit(" <- ").next().unwrap();
            let function = last.split(" (").next().unwrap();
            if ENTRIES.iter().any(|(_, entry)| *entry == function) {
                in_tasks.push(*chain);
            } else {
                assert_eq!(
                    function, "Reset_Handler",
                    "{board}: a chain ends at a task's entry function or at reset: {chain}"
                );
            }
        }
        assert!(in_tasks.len() >= 4, "{board}: {text}");
        eprintln!(
            "{board}: {} chains in tasks, e.g. {}",
            in_tasks.len(),
            in_tasks[0]
        );
    }
}

/// `--no-threads`: the core is the one thread, as for a firmware without an RTOS.
#[test]
fn no_threads_serves_the_core_alone() {
    let elf = memlife_testkit::firmware::elf("rtos", "mps2-an385-healthy");
    let q = qemu("mps2-an385", &elf);
    let served = serve::start(&elf, &["--gdb", &q.addr().to_string(), "--no-threads"]);
    let out = gdb_batch(
        &elf,
        &served.addr,
        &["break mem_alloc", "continue", "info threads", "detach"],
    );
    let text = stdout(&out);
    let threads: Vec<&str> = text.lines().filter(|l| l.contains("Thread 1.")).collect();
    assert_eq!(threads.len(), 1, "{text}\n{}", stderr(&out));
    assert!(
        threads[0].contains("Thread 1.1 ") && !threads[0].contains("Name:"),
        "{text}"
    );
    assert!(!served.log().contains("FreeRTOS"), "{}", served.log());
}
