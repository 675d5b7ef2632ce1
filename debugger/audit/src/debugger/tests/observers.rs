//! Observers added at run time (`crate::events::Observer`): their own breakpoints, the
//! boundaries and events they see, tags on events, and stops they leave out; what the arena
//! observer (TFLM) and the task observer (FreeRTOS) are built on.

use std::cell::RefCell;
use std::rc::Rc;

use super::fake::{self, FREERTOS_LIKE, Firmware, RAM, STACK, Step};
use super::{IN_BUILD_GRAPH, IN_BUILD_GRAPH_2, IN_OP_PREPARE, MAIN_A, MAIN_B, phase, ptr};
use crate::config::PeakMethod;
use crate::error::AuditError;
use crate::events::{Admission, Boundary, Ctx, HeapEvent, Observer};
use crate::session::Arm;

/// What the test observer saw, shared with the test.
#[derive(Debug, Default)]
struct Seen {
    /// `code@phase/span` of each of its breakpoints' stops.
    breaks: Vec<String>,
    /// The boundaries, in order.
    boundaries: Vec<String>,
}

/// Breaks at `op_init`'s entry and awaits its return; tags every event with the task the
/// firmware says is running (a word in RAM); with `only_task`, leaves out the entries and heap
/// events of other tasks.
struct TaskAndOperator {
    seen: Rc<RefCell<Seen>>,
    only_task: Option<u32>,
}

/// Where the fake firmware keeps the running task's number.
const CURRENT_TASK: u64 = RAM + 0x10;
const ENTRY: u32 = 1;
const RETURN: u32 = 2;

impl TaskAndOperator {
    fn task(ctx: &mut Ctx<'_>) -> Result<u32, AuditError> {
        Ok(ctx.memory().read_u32(CURRENT_TASK)?)
    }
}

impl Observer for TaskAndOperator {
    fn name(&self) -> &'static str {
        "task-and-operator"
    }

    fn attach(&mut self, ctx: &mut Ctx<'_>) -> Result<(), AuditError> {
        let addr = ctx
            .symbols()
            .function("op_init")
            .ok_or_else(|| AuditError::Config("no op_init".into()))?
            .entry;
        ctx.break_at(addr, ENTRY, Arm::Inside);
        Ok(())
    }

    fn on_break(&mut self, ctx: &mut Ctx<'_>, code: u32) -> Result<(), AuditError> {
        let open = ctx.open().clone();
        self.seen.borrow_mut().breaks.push(format!(
            "{code}@{}/{}",
            open.phase.unwrap_or_default(),
            open.span.unwrap_or_default()
        ));
        if code == ENTRY
            && let Some(regs) = ctx.regs()
        {
            ctx.await_return(regs.return_address(), regs.sp, RETURN);
        }
        Ok(())
    }

    fn on_boundary(&mut self, _: &mut Ctx<'_>, b: &Boundary<'_>) -> Result<(), AuditError> {
        let text = match b {
            Boundary::PhaseEntered { function, call, .. } => format!("enter {function}#{call}"),
            Boundary::PhaseReturned(r) => format!("return {}#{}", r.function, r.call),
            Boundary::SpanOpened { function, call, .. } => format!("open {function}#{call}"),
            Boundary::SpanClosed(s) => format!("close {}#{}", s.function, s.call),
        };
        self.seen.borrow_mut().boundaries.push(text);
        Ok(())
    }

    fn on_heap_event(&mut self, ctx: &mut Ctx<'_>, e: &mut HeapEvent) -> Result<(), AuditError> {
        let task = Self::task(ctx)?;
        e.tags.push(("task", task.to_string()));
        Ok(())
    }

    fn admits(&mut self, ctx: &mut Ctx<'_>, _: Admission<'_>) -> Result<bool, AuditError> {
        match self.only_task {
            Some(t) => Ok(Self::task(ctx)? == t),
            None => Ok(true),
        }
    }

    fn report(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({ "breaks": self.seen.borrow().breaks.len() }))
    }
}

/// The firmware switches to task `task` (a step that stops nowhere).
fn switch_to(fw: &mut Firmware, task: u32) {
    fw.steps.push(Step {
        pc: 0x0800_0000,
        sp: STACK,
        pokes: vec![(CURRENT_TASK, task)],
        ..Step::default()
    });
}

#[test]
fn an_added_observer_breaks_where_it_asks_sees_boundaries_and_tags_events() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    switch_to(&mut fw, 7);
    fw.call("graph_build", STACK, MAIN_A, [0; 4]);
    for (i, ret) in [IN_BUILD_GRAPH, IN_BUILD_GRAPH_2].into_iter().enumerate() {
        fw.call("op_init", STACK - 0x10, ret, [0, i as u64, 0, 0]);
        fw.malloc(STACK - 0x30, IN_OP_PREPARE, ptr(i as u64 + 1), 16);
        fw.ret(ret, STACK - 0x10, 0);
    }
    fw.ret(MAIN_A, STACK, 0);
    let (mut dbg, _) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
    let seen = Rc::new(RefCell::new(Seen::default()));
    let observer = TaskAndOperator {
        seen: Rc::clone(&seen),
        only_task: None,
    };
    dbg.add_observer(Box::new(observer)).unwrap();
    let rec = phase(&mut dbg, "build").unwrap();
    assert_eq!(rec.spans.len(), 2, "the built-in spans are as without it");
    let seen = seen.borrow();
    // Its entry breakpoint comes before the span's at the same address (it was added first),
    // so its return was awaited first too and comes while the span is still open.
    assert_eq!(
        seen.breaks,
        [
            "1@graph_build/",
            "2@graph_build/op_init#1",
            "1@graph_build/",
            "2@graph_build/op_init#2"
        ]
    );
    assert_eq!(
        seen.boundaries,
        [
            "enter graph_build#1",
            "open op_init#1",
            "close op_init#1",
            "open op_init#2",
            "close op_init#2",
            "return graph_build#1"
        ]
    );
    let tags: Vec<_> = dbg.events().iter().map(|e| dbg.event_tags(e.seq)).collect();
    assert_eq!(tags.len(), 2);
    assert!(
        tags.iter()
            .all(|t| t.is_some_and(|t| t == &[("task", "7".to_string())])),
        "{tags:?}"
    );
    let reports = dbg.observer_reports();
    assert_eq!(
        reports,
        [("task-and-operator", serde_json::json!({"breaks": 4}))]
    );
}

#[test]
fn a_phase_scoped_to_a_task_counts_only_that_tasks_calls_and_allocations() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    for (task, ret) in [(1, MAIN_A), (2, MAIN_B)] {
        switch_to(&mut fw, task);
        fw.call("model_load", STACK, ret, [0; 4]);
        fw.malloc(
            STACK - 0x20,
            IN_BUILD_GRAPH,
            ptr(u64::from(task)),
            16 * task,
        );
        fw.ret(ret, STACK, 0);
    }
    let (mut dbg, _) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
    let observer = TaskAndOperator {
        seen: Rc::default(),
        only_task: Some(2),
    };
    dbg.add_observer(Box::new(observer)).unwrap();
    let rec = phase(&mut dbg, "load").unwrap();
    // Task 1's call was neither counted nor taken for the phase, its allocation not traced.
    assert_eq!((rec.call, dbg.calls("model_load")), (1, 1));
    assert_eq!((rec.allocs, rec.before.used, rec.after.used), (1, 16, 48));
    let sizes: Vec<u64> = dbg.events().iter().map(|e| e.size).collect();
    assert_eq!(sizes, [32]);
}
