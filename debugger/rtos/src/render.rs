//! A [`TaskSnapshot`] as `memlife tasks` prints it: the table, and the JSON whose keys
//! docs/tasks-json.md documents.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::task::{
    RegisterSource, Running, StackFill, StackTop, Task, TaskRegisters, TaskSnapshot,
};

/// The snapshot as one JSON object (docs/tasks-json.md).
pub fn json(snap: &TaskSnapshot) -> Value {
    json!({
        "rtos": "freertos",
        "port": {
            "name": snap.port.name,
            "fpu_context": snap.port.saves_fpu_context(),
            "evidence": snap.port.evidence,
        },
        "scheduler": scheduler(snap),
        "scheduler_suspended": snap.scheduler_suspended,
        "tick_count": snap.tick_count,
        "task_count": snap.task_count,
        "priorities": snap.priorities,
        "current_tcb": snap.current_tcb,
        "running": running_json(&snap.running()),
        "stack_fill": {
            "counted": snap.stack_fill.counted(),
            "evidence": fill_evidence(snap.stack_fill),
        },
        "tasks": snap.tasks.iter().map(task_json).collect::<Vec<_>>(),
        "anomalies": snap.anomalies,
    })
}

fn scheduler(snap: &TaskSnapshot) -> Option<&'static str> {
    snap.scheduler_running
        .map(|r| if r { "running" } else { "not-started" })
}

fn fill_evidence(fill: StackFill) -> &'static str {
    match fill {
        StackFill::Configured(why) => why,
        StackFill::Seen => "the lowest word of a task's stack holds 0xa5a5a5a5",
        StackFill::Unknown => "the build does not fill stacks with 0xa5 (no high-water marks)",
    }
}

fn running_json(r: &Running) -> Value {
    match r {
        Running::Isr(n) => json!({"kind": "isr", "label": r.label(), "exception": n}),
        Running::BeforeScheduler => json!({"kind": "main", "label": r.label()}),
        Running::Task { tcb, .. } => json!({"kind": "task", "label": r.label(), "tcb": tcb}),
        Running::Unknown => json!({"kind": "unknown", "label": r.label()}),
    }
}

fn task_json(t: &Task) -> Value {
    let regs = t.registers.as_ref();
    let reg = |f: fn(&TaskRegisters) -> u32| regs.map(f);
    let loc = t.location.as_ref();
    json!({
        "name": t.name,
        "tcb": t.tcb,
        "number": t.number,
        "state": t.state.name(),
        "list": t.list,
        "pending_ready": t.pending_ready,
        "wake_tick": t.wake_tick,
        "priority": t.priority,
        "base_priority": t.base_priority,
        "allocation": t.allocation.map(|a| a.name()),
        "stack_low": t.stack.low,
        "stack_high": t.stack.high,
        "stack_size": t.stack.size(),
        "stack_high_from": t.stack.high_from.map(|f| match f {
            StackTop::EndOfStack => "pxEndOfStack",
            StackTop::HeapBlock => "heap-block",
            StackTop::StaticArray => "static-array",
        }),
        "top_of_stack": t.top_of_stack,
        "high_water_bytes": t.high_water.map(|h| h.bytes),
        "high_water_words": t.high_water.map(|h| h.words),
        "pc": reg(|r| r.regs.pc()),
        "sp": reg(|r| r.regs.sp()),
        "lr": reg(|r| r.regs.lr()),
        "registers": regs.map(registers_json),
        "function": loc.and_then(|l| l.function.as_deref()),
        "file": loc.and_then(|l| l.file.as_deref()),
        "line": loc.and_then(|l| l.line),
        "tcb_block": t.tcb_block.map(|b| json!({"addr": b.addr, "size": b.size})),
        "stack_block": t.stack_block.map(|b| json!({"addr": b.addr, "size": b.size})),
    })
}

fn registers_json(r: &TaskRegisters) -> Value {
    let mut m = serde_json::Map::new();
    let (source, frame) = match r.source {
        RegisterSource::Core => ("core", None),
        RegisterSource::Saved(kind) => ("saved", Some(kind.name())),
    };
    m.insert("source".into(), source.into());
    m.insert("frame".into(), frame.into());
    for (i, v) in r.regs.r.iter().enumerate().take(13) {
        m.insert(format!("r{i}"), (*v).into());
    }
    m.insert("sp".into(), r.regs.sp().into());
    m.insert("lr".into(), r.regs.lr().into());
    m.insert("pc".into(), r.regs.pc().into());
    m.insert("xpsr".into(), r.regs.xpsr.into());
    m.insert("exc_return".into(), r.exc_return.into());
    m.insert("s".into(), r.fp.map(|fp| fp.s.to_vec()).into());
    m.insert("fpscr".into(), r.fp.map(|fp| fp.fpscr).into());
    Value::Object(m)
}

/// The snapshot as the table `memlife tasks` prints.
pub fn text(snap: &TaskSnapshot) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", headline(snap));
    let _ = writeln!(out, "running: {}", running_text(snap));
    if snap.tasks.is_empty() {
        let _ = writeln!(out, "no tasks on the kernel's lists");
    } else {
        out.push('\n');
        task_table(&mut out, snap);
        heap_lines(&mut out, snap);
    }
    if !snap.anomalies.is_empty() {
        let _ = writeln!(out, "\nanomalies:");
        for a in &snap.anomalies {
            let kind = serde_json::to_value(a.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let _ = writeln!(out, "  {kind}: {}", a.message);
        }
    }
    out
}

fn headline(snap: &TaskSnapshot) -> String {
    let port = match (&snap.port.name, snap.port.saves_fpu_context()) {
        (Some(n), Some(true)) => format!("port {n} (FPU context saved)"),
        (Some(n), _) => format!("port {n}"),
        (None, Some(true)) => "port with FPU context".to_string(),
        (None, Some(false)) => "port without FPU context".to_string(),
        (None, None) => "saved contexts not decoded".to_string(),
    };
    let scheduler = match (snap.scheduler_running, snap.scheduler_suspended) {
        (Some(false), _) => "scheduler not started".to_string(),
        (_, Some(s)) if s > 0 => format!("scheduler suspended ({s})"),
        (Some(true), _) => "scheduler running".to_string(),
        (None, _) => "scheduler state unknown".to_string(),
    };
    let mut s = format!("FreeRTOS, {port}, {scheduler}");
    if let Some(tick) = snap.tick_count {
        let _ = write!(s, ", tick {tick}");
    }
    let _ = write!(s, ", {} tasks", snap.tasks.len());
    if let Some(n) = snap.task_count.filter(|n| *n != snap.tasks.len() as u64) {
        let _ = write!(s, " (uxCurrentNumberOfTasks {n})");
    }
    s
}

fn running_text(snap: &TaskSnapshot) -> String {
    match snap.running() {
        Running::Task { tcb, name } => format!("{name} (TCB {tcb:#010x})"),
        Running::Isr(n) => format!(
            "ISR {n} (handler mode; pxCurrentTCB {:#010x})",
            snap.current_tcb
        ),
        Running::BeforeScheduler => "main (the scheduler has not started)".to_string(),
        Running::Unknown => format!("unknown (pxCurrentTCB {:#010x})", snap.current_tcb),
    }
}

fn task_table(out: &mut String, snap: &TaskSnapshot) {
    let _ = writeln!(
        out,
        "  {:>3}  {:<12} {:<9} {:>4}  {:<10}  {:<23} {:>6}  {:>15}  {:<10}  where",
        "#", "name", "state", "prio", "TCB", "stack", "size", "never used", "pc"
    );
    for t in &snap.tasks {
        let number = t.number.map_or("-".to_string(), |n| n.to_string());
        let prio = match t.base_priority {
            Some(b) if b != t.priority => format!("{}/{b}", t.priority),
            _ => t.priority.to_string(),
        };
        let stack = match t.stack.high {
            Some(h) => format!("{:#010x}-{h:#010x}", t.stack.low),
            None => format!("{:#010x}-?", t.stack.low),
        };
        let size = t.stack.size().map_or("?".to_string(), |s| s.to_string());
        let hwm = t.high_water.map_or("-".to_string(), |h| {
            format!("{} B ({} w)", h.bytes, h.words)
        });
        let pc = t
            .registers
            .map_or("-".to_string(), |r| format!("{:#010x}", r.regs.pc()));
        let at = t.location.as_ref().map_or(String::new(), |l| l.to_string());
        let _ = writeln!(
            out,
            "  {number:>3}  {:<12} {:<9} {prio:>4}  {:#010x}  {stack:<23} {size:>6}  {hwm:>15}  {pc:<10}  {at}",
            t.name,
            t.state.name(),
            t.tcb
        );
    }
}

fn heap_lines(out: &mut String, snap: &TaskSnapshot) {
    let owned: Vec<&Task> = snap
        .tasks
        .iter()
        .filter(|t| t.tcb_block.is_some() || t.stack_block.is_some())
        .collect();
    if owned.is_empty() {
        return;
    }
    let bytes: u64 = owned
        .iter()
        .flat_map(|t| [t.tcb_block, t.stack_block])
        .flatten()
        .map(|b| b.size)
        .sum();
    let _ = writeln!(out, "\nheap blocks of the tasks ({bytes} B in all):");
    for t in owned {
        let block = |b: Option<crate::HeapBlock>| {
            b.map_or("-".to_string(), |b| {
                format!("{:#010x} ({} B)", b.addr, b.size)
            })
        };
        let _ = writeln!(
            out,
            "  {:<12} TCB {:<22} stack {}",
            t.name,
            block(t.tcb_block),
            block(t.stack_block)
        );
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::AnomalyKind;
    use crate::frame::{ContextLayout, FrameKind};
    use crate::testing::{Builder, kernel};

    /// The backticked keys in the first column of the table under `heading` in
    /// docs/tasks-json.md (the first table when `heading` is empty).
    fn documented(heading: &str) -> Vec<String> {
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tasks-json.md"),
        )
        .unwrap();
        let start = if heading.is_empty() {
            0
        } else {
            doc.find(heading).unwrap()
        };
        let table = doc[start..]
            .lines()
            .skip_while(|l| !l.starts_with("| "))
            .take_while(|l| l.starts_with('|'))
            .skip(2);
        table
            .flat_map(|row| {
                let first = row.split('|').nth(1).unwrap_or("").to_string();
                first
                    .split('`')
                    .skip(1)
                    .step_by(2)
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn snapshot() -> TaskSnapshot {
        let mut b = Builder::new();
        let l = b.layout.clone();
        let run = b.task(
            "Infer",
            1,
            l.ready_list(1),
            FrameKind::Extended,
            0x0800_0100,
        );
        b.task(
            "Float",
            1,
            l.ready_list(1),
            FrameKind::Extended,
            0x0800_0300,
        );
        b.task(
            "Idle",
            0,
            l.ready_list(0),
            FrameKind::BasicWithExcReturn,
            0x0800_0200,
        );
        let mut mem = b.finish(run);
        let mut s = kernel(ContextLayout::Fpu)
            .read_tasks(&mut mem, None)
            .unwrap();
        s.anomalies.push(crate::Anomaly::new(
            AnomalyKind::Cycle,
            Some(0x2000_0000),
            "a test anomaly",
        ));
        s
    }

    #[test]
    fn every_documented_key_is_in_the_json_and_every_key_is_documented() {
        let v = json(&snapshot());
        let top: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        let doc_top = documented("");
        for key in &doc_top {
            // Added by the command, with the heap walk and the target.
            if !["heap", "target", "at"].contains(&key.as_str()) {
                assert!(top.contains(key), "documented key {key} missing");
            }
        }
        for key in &top {
            assert!(doc_top.contains(key), "key {key} not documented");
        }
        let task = v["tasks"][1].as_object().unwrap();
        let doc_task = documented("## Each task");
        for key in &doc_task {
            assert!(task.contains_key(key), "documented task key {key} missing");
        }
        for key in task.keys() {
            assert!(doc_task.contains(key), "task key {key} not documented");
        }
        let kinds = documented("## Anomaly kinds");
        for kind in [
            AnomalyKind::Cycle,
            AnomalyKind::BadPointer,
            AnomalyKind::CountMismatch,
            AnomalyKind::ListMismatch,
            AnomalyKind::TooManyItems,
            AnomalyKind::BadFrame,
            AnomalyKind::BadStack,
            AnomalyKind::StackOverflow,
            AnomalyKind::FreeBlock,
        ] {
            let name = serde_json::to_value(kind).unwrap();
            assert!(
                kinds.contains(&name.as_str().unwrap().to_string()),
                "{name}"
            );
        }
        assert_eq!(kinds.len(), 9);
        assert_eq!(v["anomalies"][0]["kind"], "cycle");
        assert_eq!(v["tasks"][1]["registers"]["frame"], "extended-0xcc");
        assert_eq!(
            v["tasks"][1]["registers"]["s"].as_array().unwrap().len(),
            32
        );
        assert_eq!(v["tasks"][2]["registers"]["frame"], "basic-0x44");
        assert!(
            v["tasks"][0]["registers"].is_null(),
            "running, and no core registers given"
        );
        assert_eq!(v["running"]["label"], "Infer");
    }

    #[test]
    fn the_table_names_every_task_and_what_is_wrong() {
        let t = text(&snapshot());
        assert!(
            t.starts_with("FreeRTOS, port with FPU context, scheduler running, tick 1234, 3 tasks"),
            "{t}"
        );
        assert!(t.contains("running: Infer (TCB 0x20001000)"), "{t}");
        let row = t.lines().find(|l| l.contains(" Idle ")).unwrap();
        assert!(row.contains("ready") && row.contains("0x08000200"), "{row}");
        assert!(t.contains("anomalies:\n  cycle: a test anomaly"), "{t}");
    }
}
