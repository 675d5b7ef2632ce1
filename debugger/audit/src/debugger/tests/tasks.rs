//! The task observer over the fake target, with a kernel of the test's own (the running task's
//! number and the tick count are words in RAM): events tagged with their task and tick, each
//! task's totals and live blocks in the report, a role limited to a task or to a caller, and a
//! reset forgetting the live blocks.

use memlife_core::Memory;
use memlife_heap::HeapState;
use memlife_rtos::{Now, RtosError, Running, TaskBlock};

use super::fake::{self, FREERTOS_LIKE, Firmware, RAM, STACK, Step};
use super::{IN_BUILD_GRAPH, MAIN_A, MAIN_B, phase, ptr};
use crate::config::{AuditConfig, PeakMethod, Scope};
use crate::observers::TaskObserver;
use crate::observers::tasks::Kernel;
use crate::report::EngineRecord;

/// The running task's number (0: an exception handler, ISR 15).
const CURRENT: u64 = RAM + 0x20;
/// The tick count.
const TICKS: u64 = RAM + 0x24;

/// Task n is `T<n>`; 0 is exception 15.
struct FakeKernel;

impl Kernel for FakeKernel {
    fn now(&self, mem: &mut dyn Memory, _xpsr: u32) -> Result<Now, RtosError> {
        let n = mem.read_u32(CURRENT)?;
        let running = match n {
            0 => Running::Isr(15),
            n => Running::Task {
                tcb: u64::from(n),
                name: format!("T{n}"),
            },
        };
        Ok(Now {
            running,
            tick: Some(u64::from(mem.read_u32(TICKS)?)),
        })
    }
    fn stack_low(&self, _: &mut dyn Memory, _: u64) -> Result<Option<u64>, RtosError> {
        Ok(None)
    }
    fn unused_stack(&self, _: &mut dyn Memory, _: u64, _: u64) -> Result<Option<u64>, RtosError> {
        Ok(None)
    }
    fn fills_stacks(&self) -> bool {
        false
    }
    fn stack_word(&self) -> u64 {
        4
    }
    fn task_blocks(&self, _: &mut dyn Memory, _: &HeapState) -> Result<Vec<TaskBlock>, RtosError> {
        Ok(Vec::new())
    }
}

/// The firmware switches to task `n` at tick `tick` (a step that stops nowhere).
fn switch_to(fw: &mut Firmware, n: u32, tick: u32) {
    fw.steps.push(Step {
        pc: 0x0800_0000,
        sp: STACK,
        pokes: vec![(CURRENT, n), (TICKS, tick)],
        ..Step::default()
    });
}

fn observer(config: AuditConfig) -> Box<TaskObserver> {
    Box::new(TaskObserver::new(Some(Box::new(FakeKernel)), &config))
}

/// `load` standing for model_load, limited to `scope`.
fn load_limited_to(task: Option<&str>, caller: Option<&str>) -> AuditConfig {
    let scope = Scope {
        task: task.map(Into::into),
        caller: caller.map(Into::into),
    };
    AuditConfig::default().with_scoped_role("load", "model_load", scope)
}

#[test]
fn every_event_carries_its_task_and_tick_and_each_task_its_totals() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    switch_to(&mut fw, 1, 100);
    fw.call("model_load", STACK, MAIN_A, [0; 4]);
    fw.malloc(STACK - 0x20, IN_BUILD_GRAPH, ptr(1), 16);
    // An interrupt allocates, then task 2 preempts and allocates.
    switch_to(&mut fw, 0, 101);
    fw.malloc(STACK - 0x40, IN_BUILD_GRAPH, ptr(2), 32);
    switch_to(&mut fw, 2, 102);
    fw.malloc(STACK - 0x20, IN_BUILD_GRAPH, ptr(3), 48);
    fw.free(STACK - 0x20, IN_BUILD_GRAPH, ptr(2), 32);
    switch_to(&mut fw, 1, 103);
    fw.ret(MAIN_A, STACK, 0);
    let (mut dbg, _) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
    dbg.add_observer(observer(AuditConfig::default())).unwrap();
    let rec = phase(&mut dbg, "load").unwrap();
    assert_eq!((rec.allocs, rec.frees), (3, 1), "unscoped: every task's");
    let record = EngineRecord::from(&dbg);
    let who: Vec<(Option<&str>, Option<u64>)> = record
        .events
        .iter()
        .map(|e| (e.task.as_deref(), e.tick))
        .collect();
    assert_eq!(
        who,
        [
            (Some("T1"), Some(100)),
            (Some("ISR 15"), Some(101)),
            (Some("T2"), Some(102)),
            (Some("T2"), Some(102))
        ]
    );
    let tasks: Vec<(&str, u64, u64, u64, u64)> = record
        .tasks
        .iter()
        .map(|t| {
            (
                t.task.as_str(),
                t.allocs,
                t.frees,
                t.live_blocks,
                t.live_bytes,
            )
        })
        .collect();
    // The interrupt's block was freed by T2: T2's free, nobody's live block.
    assert_eq!(
        tasks,
        [
            ("ISR 15", 1, 0, 0, 0),
            ("T1", 1, 0, 1, 16),
            ("T2", 1, 1, 1, 48)
        ]
    );
    assert_eq!(
        record.phases[0].ticks.map(|t| (t.begin, t.end)),
        Some((100, 103))
    );
    assert!(dbg.has_tasks());
    // A reset forgets the live blocks, not what was done.
    dbg.reset().unwrap();
    let after: Vec<u64> = EngineRecord::from(&dbg)
        .tasks
        .iter()
        .map(|t| t.live_blocks)
        .collect();
    assert_eq!(after, [0, 0, 0]);
}

#[test]
fn a_role_limited_to_a_task_counts_its_calls_and_only_its_allocations_inside() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    // T1 calls model_load first: not counted.
    switch_to(&mut fw, 1, 10);
    fw.call("model_load", STACK, MAIN_A, [0; 4]);
    fw.malloc(STACK - 0x20, IN_BUILD_GRAPH, ptr(1), 16);
    fw.ret(MAIN_A, STACK, 0);
    // T2's call; T3 preempts it and allocates inside the window.
    switch_to(&mut fw, 2, 20);
    fw.call("model_load", STACK - 0x100, MAIN_B, [0; 4]);
    fw.malloc(STACK - 0x120, IN_BUILD_GRAPH, ptr(2), 32);
    switch_to(&mut fw, 3, 21);
    fw.malloc(STACK - 0x220, IN_BUILD_GRAPH, ptr(3), 64);
    switch_to(&mut fw, 2, 22);
    fw.ret(MAIN_B, STACK - 0x100, 0);
    let (mut dbg, _) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
    dbg.add_observer(observer(load_limited_to(Some("T2"), None)))
        .unwrap();
    let rec = phase(&mut dbg, "load").unwrap();
    assert_eq!(
        (rec.call, dbg.calls("model_load")),
        (1, 1),
        "T1's call is not counted"
    );
    assert_eq!(
        rec.allocs, 1,
        "T3's allocation inside T2's call is left out"
    );
    assert_eq!(rec.peak_above_before, 32);
    let sizes: Vec<u64> = dbg.events().iter().map(|e| e.size).collect();
    assert_eq!(
        sizes,
        [16, 32],
        "outside the phase every task's allocations are traced"
    );
}

#[test]
fn a_role_limited_to_a_caller_counts_only_the_calls_from_there() {
    let sym = fake::symbols();
    // The return addresses' functions, as the ELF's line table says.
    let caller_of = |ret: u64| -> String {
        sym.locate(ret - 2)
            .into_iter()
            .find_map(|l| l.function)
            .unwrap()
    };
    let from_a = caller_of(IN_BUILD_GRAPH);
    assert_ne!(caller_of(MAIN_A), from_a);
    let mut fw = Firmware::new(&sym);
    switch_to(&mut fw, 1, 1);
    fw.call("model_load", STACK, MAIN_A, [0; 4]);
    fw.ret(MAIN_A, STACK, 0);
    fw.call("model_load", STACK - 0x40, IN_BUILD_GRAPH, [0; 4]);
    fw.malloc(STACK - 0x60, IN_BUILD_GRAPH, ptr(1), 16);
    fw.ret(IN_BUILD_GRAPH, STACK - 0x40, 0);
    let (mut dbg, _) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
    dbg.add_observer(observer(load_limited_to(None, Some(&from_a))))
        .unwrap();
    let rec = phase(&mut dbg, "load").unwrap();
    assert_eq!((rec.call, rec.allocs), (1, 1), "the call from {from_a}");
}
