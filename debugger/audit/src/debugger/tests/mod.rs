//! The engine over a fake target: return matching by stack pointer, nested spans, re-entry of a
//! phase function, a malloc caught at its caller's return, hooks, the sampled and watermark
//! peaks, and the host-side resume. Each test scripts what the firmware does (calls, returns,
//! mallocs, frees); the fake target stops only where the engine has a breakpoint.
#![allow(clippy::unwrap_used)]

mod arena;
pub(crate) mod fake;
pub(crate) mod lifecycle_ends;
mod observers;
mod tasks;
mod trace_plan;

use fake::{BLOCKS, FREERTOS_LIKE, Firmware, HEAP_SIZE, MIN, NO_EXITS, RAM, STACK};

use super::{Debugger, Outcome};
use crate::config::PeakMethod;
use crate::error::AuditError;
use crate::model::{EventKind, PhaseRecord};

/// Return addresses in `main` (the phase functions' caller) and in `build_graph` (the spans'
/// and allocations' caller in this firmware).
const MAIN_A: u64 = 0x0800_00c4;
const MAIN_B: u64 = 0x0800_00d0;
const IN_BUILD_GRAPH: u64 = 0x0800_01e0;
const IN_BUILD_GRAPH_2: u64 = 0x0800_01f0;
const IN_OP_PREPARE: u64 = 0x0800_0480;

fn ptr(n: u64) -> u64 {
    BLOCKS + 0x100 * n + 8
}

/// Runs one phase to its end, calling no hooks; the record.
fn phase(dbg: &mut Debugger, name: &str) -> Result<PhaseRecord, AuditError> {
    let mut run = dbg.phase_begin(name)?;
    while dbg.phase_step(&mut run)?.is_some() {}
    Ok(dbg.phase_finish()?.0)
}

#[test]
fn a_phase_ends_only_when_the_stack_pointer_is_back_at_its_call() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    fw.call("model_load", STACK, MAIN_A, [0; 4]);
    // Another activation returns through the same address deeper in the stack (recursion
    // through the caller): not the phase's return.
    fw.ret(MAIN_A, STACK - 0x40, 0);
    fw.malloc(STACK - 0x60, IN_BUILD_GRAPH, ptr(1), 48);
    fw.ret(MAIN_A, STACK, 0);
    let (mut dbg, log) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
    let rec = phase(&mut dbg, "load").unwrap();
    assert_eq!((rec.function.as_str(), rec.call), ("model_load", 1));
    assert_eq!(rec.alias.as_deref(), Some("load"));
    // Had the first return to MAIN_A ended the phase, the malloc would be outside it.
    assert_eq!(rec.allocs, 1);
    assert_eq!(
        (rec.before.used, rec.after.used, rec.delta_used),
        (0, 48, 48)
    );
    assert_eq!(rec.peak_used, 48);
    let stops = log.borrow().stops.clone();
    assert_eq!(stops.iter().filter(|pc| **pc == MAIN_A).count(), 2);
    let e = &dbg.events()[0];
    assert_eq!((e.kind, e.addr, e.size), (EventKind::Alloc, ptr(1) - 8, 48));
    assert_eq!(e.phase.as_deref(), Some("model_load"));
    assert_eq!(e.site.function.as_deref(), Some("build_graph"));
}

#[test]
fn a_phase_function_reentered_inside_its_phase_is_one_phase_and_the_next_call_is_the_second() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    let load = fw.addr("model_load");
    fw.call("model_load", STACK, MAIN_A, [0; 4]);
    // Recursion: model_load calls itself; its inner return is inside model_load.
    fw.call("model_load", STACK - 0x30, load + 0x10, [0; 4]);
    fw.malloc(STACK - 0x50, IN_BUILD_GRAPH, ptr(1), 16);
    fw.ret(load + 0x10, STACK - 0x30, 0);
    fw.malloc(STACK - 0x20, IN_BUILD_GRAPH, ptr(2), 32);
    fw.ret(MAIN_A, STACK, 0);
    fw.call("model_load", STACK, MAIN_B, [0; 4]);
    fw.free(STACK - 0x20, IN_BUILD_GRAPH, ptr(1), 16);
    fw.ret(MAIN_B, STACK, 0);
    let (mut dbg, _) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
    let first = phase(&mut dbg, "load").unwrap();
    assert_eq!((first.call, first.allocs, first.delta_used), (1, 2, 48));
    let second = phase(&mut dbg, "model_load").unwrap();
    assert_eq!(second.alias, None);
    assert_eq!((second.call, second.allocs, second.frees), (2, 0, 1));
    assert_eq!(second.delta_used, -16);
    assert_eq!(
        dbg.calls("model_load"),
        2,
        "the inner call had no breakpoint"
    );
    // The freed block is no longer live; the other one is, with its site.
    assert_eq!(
        dbg.live().keys().copied().collect::<Vec<_>>(),
        vec![ptr(2) - 8]
    );
}

#[test]
fn nested_spans_are_recorded_in_call_order_with_their_own_peaks() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    let init = fw.addr("op_init");
    fw.call("graph_build", STACK, MAIN_A, [0; 4]);
    // op_init(ctx, 0) { malloc 32; op_init(ctx, 1) { malloc 16 }; free the 16 }
    fw.call("op_init", STACK - 0x10, IN_BUILD_GRAPH, [0, 0, 0, 0]);
    fw.malloc(STACK - 0x30, IN_OP_PREPARE, ptr(1), 32);
    fw.call("op_init", STACK - 0x40, init + 4, [0, 1, 0, 0]);
    fw.malloc(STACK - 0x60, IN_OP_PREPARE, ptr(2), 16);
    fw.ret(init + 4, STACK - 0x40, 0);
    fw.free(STACK - 0x30, IN_OP_PREPARE, ptr(2), 16);
    fw.ret(IN_BUILD_GRAPH, STACK - 0x10, 0);
    // op_init(ctx, 2) { malloc 8 }
    fw.call("op_init", STACK - 0x10, IN_BUILD_GRAPH_2, [0, 2, 0, 0]);
    fw.malloc(STACK - 0x30, IN_OP_PREPARE, ptr(3), 8);
    fw.ret(IN_BUILD_GRAPH_2, STACK - 0x10, 0);
    fw.ret(MAIN_A, STACK, 0);
    let (mut dbg, _) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
    let rec = phase(&mut dbg, "build").unwrap();
    let spans: Vec<(u64, u64, u64, i64, u64)> = rec
        .spans
        .iter()
        .map(|s| (s.call, s.args[1], s.before_used, s.delta, s.peak_used))
        .collect();
    assert_eq!(
        spans,
        vec![(1, 0, 0, 32, 48), (2, 1, 32, 16, 48), (3, 2, 32, 8, 40)]
    );
    assert_eq!(
        rec.spans.iter().map(|s| s.index).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    assert_eq!((rec.peak_used, rec.delta_used), (48, 40));
    // The peak was reached inside the inner span, by its allocation.
    let at = rec.peak_at.unwrap();
    assert_eq!(at.span.as_deref(), Some("op_init#2"));
    assert_eq!((at.span_index, at.span_arg1), (Some(1), Some(1)));
    assert!(at.site.is_some());
    // Every event is filed under the innermost span open at the time.
    let spans_of: Vec<Option<&str>> = dbg.events().iter().map(|e| e.span.as_deref()).collect();
    assert_eq!(
        spans_of,
        vec![
            Some("op_init#1"),
            Some("op_init#2"),
            Some("op_init#1"),
            Some("op_init#3")
        ]
    );
}

#[test]
fn a_malloc_without_return_instructions_is_caught_at_its_callers_return() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    fw.call("model_load", STACK, MAIN_A, [0; 4]);
    fw.malloc_without_exits(STACK - 0x20, IN_BUILD_GRAPH, ptr(1), 24);
    // A second call from the same site: its return address is still armed.
    fw.malloc_without_exits(STACK - 0x20, IN_BUILD_GRAPH, ptr(2), 40);
    fw.ret(MAIN_A, STACK, 0);
    let (mut dbg, log) = fake::debugger(fw, NO_EXITS, PeakMethod::Trace);
    let rec = phase(&mut dbg, "load").unwrap();
    assert_eq!(rec.allocs, 2);
    let got: Vec<(u64, u64, Option<u64>)> = dbg
        .events()
        .iter()
        .map(|e| (e.addr, e.size, e.request))
        .collect();
    // The requested size comes from the entry, the block from the return.
    assert_eq!(
        got,
        vec![(ptr(1) - 8, 24, Some(24)), (ptr(2) - 8, 40, Some(40))]
    );
    assert_eq!(
        log.borrow()
            .stops
            .iter()
            .filter(|pc| **pc == IN_BUILD_GRAPH)
            .count(),
        2
    );
}

#[test]
fn a_malloc_caught_at_its_return_instruction_records_the_size_asked_at_its_entry() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    fw.call("model_load", STACK, MAIN_A, [0; 4]);
    // The allocator rounds up: asked 20 and 33, the blocks are 24 and 40.
    fw.malloc_asking(STACK - 0x20, IN_BUILD_GRAPH, ptr(1), 20, 24);
    fw.malloc_asking(STACK - 0x20, IN_BUILD_GRAPH_2, ptr(2), 33, 40);
    fw.ret(MAIN_A, STACK, 0);
    let (mut dbg, _) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
    phase(&mut dbg, "load").unwrap();
    let got: Vec<(u64, Option<u64>)> = dbg.events().iter().map(|e| (e.size, e.request)).collect();
    assert_eq!(got, vec![(24, Some(20)), (40, Some(33))]);
}

#[test]
fn turning_tracing_off_when_it_is_off_is_allowed_under_every_method() {
    for method in [PeakMethod::Sample, PeakMethod::Watermark, PeakMethod::Trace] {
        let sym = fake::symbols();
        let fw = Firmware::new(&sym);
        let (mut dbg, _) = fake::debugger(fw, FREERTOS_LIKE, method);
        dbg.set_tracing(false).unwrap();
        assert!(!dbg.tracing(), "{method:?}");
        dbg.set_tracing(false).unwrap();
        // Turning it on is still refused where the method does not trace.
        assert_eq!(dbg.set_tracing(true).is_ok(), method == PeakMethod::Trace);
    }
}

#[test]
fn hooks_interrupt_a_phase_which_then_completes() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    fw.call("graph_build", STACK, MAIN_A, [0; 4]);
    for (i, ret) in [IN_BUILD_GRAPH, IN_BUILD_GRAPH_2].into_iter().enumerate() {
        fw.call("op_init", STACK - 0x10, ret, [0, i as u64, 0, 0]);
        fw.ret(ret, STACK - 0x10, 0);
    }
    fw.ret(MAIN_A, STACK, 0);
    let (mut dbg, _) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
    dbg.add_hook("op_init").unwrap();
    // A hook on the phase function itself fires at the very stop that starts the phase.
    dbg.add_hook("graph_build").unwrap();
    let mut run = dbg.phase_begin("build").unwrap();
    let mut hooks = Vec::new();
    while let Some(out) = dbg.phase_step(&mut run).unwrap() {
        let Outcome::Hook(h) = out else {
            unreachable!("phase_step returns hooks only")
        };
        hooks.push(h);
    }
    assert_eq!(hooks, vec!["graph_build", "op_init", "op_init"]);
    let (rec, _, _) = dbg.phase_finish().unwrap();
    assert_eq!(rec.spans.len(), 2);
    assert_eq!(dbg.calls("op_init"), 2);
}

#[test]
fn a_return_that_never_comes_is_reported_with_what_was_awaited() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    fw.call("inference_run", STACK, MAIN_A, [0; 4]);
    let (mut dbg, _) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
    let mut run = dbg.phase_begin("run").unwrap();
    let err = dbg.phase_step(&mut run).unwrap_err();
    assert!(
        matches!(&err, AuditError::NotReached { what, .. } if what == "return of inference_run"),
        "{err}"
    );
    // It says where the firmware was instead.
    assert!(
        err.to_string().contains("; the target was halted at pc 0x"),
        "{err}"
    );
    // A phase still open cannot be begun again, and breakpoints come out on the way out.
    assert!(dbg.phase_begin("run").is_err());
    let target = dbg.into_target();
    assert!(target_breakpoints(target).is_empty());
}

fn target_breakpoints(mut t: Box<dyn memlife_core::Target>) -> Vec<u64> {
    t.breakpoints()
        .unwrap()
        .inserted()
        .into_iter()
        .map(|b| b.0)
        .collect()
}

#[test]
fn sampled_spans_credit_the_peak_to_the_span_that_returned_highest() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    fw.call("graph_build", STACK, MAIN_A, [0; 4]);
    fw.call("op_init", STACK - 0x10, IN_BUILD_GRAPH, [0, 7, 0, 0]);
    fw.malloc(STACK - 0x30, IN_OP_PREPARE, ptr(1), 64);
    fw.ret(IN_BUILD_GRAPH, STACK - 0x10, 0);
    fw.free(STACK - 0x30, IN_OP_PREPARE, ptr(1), 64);
    fw.ret(MAIN_A, STACK, 0);
    let (mut dbg, log) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Sample);
    let rec = phase(&mut dbg, "build").unwrap();
    assert!(dbg.events().is_empty(), "nothing traced");
    let malloc = sym.function("pvPortMalloc").unwrap().entry;
    assert!(!log.borrow().stops.contains(&malloc));
    assert_eq!((rec.peak_used, rec.delta_used), (64, 0));
    let at = rec.peak_at.unwrap();
    assert_eq!(
        (at.seq, at.span.as_deref(), at.span_arg1),
        (None, Some("op_init#1"), Some(7))
    );
    assert_eq!(rec.spans[0].after_used, 64);
}

#[test]
fn the_watermark_method_reads_the_phases_own_minimum_and_restores_the_allocators() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    // Before the phase the heap once went 0x300 bytes deep.
    fw.dip(0x300);
    fw.call("inference_run", STACK, MAIN_A, [0; 4]);
    fw.malloc(STACK - 0x20, IN_BUILD_GRAPH, ptr(1), 0x40);
    // A transient 0x100 bytes deeper inside the phase than its blocks show.
    fw.dip(0x100);
    fw.ret(MAIN_A, STACK, 0);
    let (mut dbg, log) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Watermark);
    let rec = phase(&mut dbg, "run").unwrap();
    assert_eq!(
        rec.peak_used, 0x140,
        "the phase's own low-water mark, not the older one"
    );
    assert_eq!(rec.peak_at, None);
    drop(dbg);
    let ram = &log.borrow().ram;
    let o = (MIN - RAM) as usize;
    let restored = u32::from_le_bytes(ram[o..o + 4].try_into().unwrap());
    assert_eq!(
        u64::from(restored),
        HEAP_SIZE - 0x300,
        "the older minimum is put back"
    );
}

#[test]
fn breakpoints_are_left_by_executing_their_instruction_on_the_host() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    fw.call("graph_build", STACK, MAIN_A, [0; 4]);
    fw.call("op_init", STACK - 0x10, IN_BUILD_GRAPH, [0; 4]);
    fw.ret(IN_BUILD_GRAPH, STACK - 0x10, 0);
    fw.ret(MAIN_A, STACK, 0);
    let (mut dbg, log) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
    phase(&mut dbg, "build").unwrap();
    // op_init starts with `push {r3, lr}`: executed here, so lr is on the stack below sp.
    assert_eq!((dbg.emulated(), dbg.stepped()), (1, 0));
    drop(dbg);
    let ram = &log.borrow().ram;
    let o = (STACK - 0x10 - 4 - RAM) as usize;
    let pushed_lr = u32::from_le_bytes(ram[o..o + 4].try_into().unwrap());
    assert_eq!(u64::from(pushed_lr), IN_BUILD_GRAPH | 1);
}

/// Observes one cycle to its end, calling no hooks.
fn cycle(dbg: &mut Debugger) -> Result<super::Cycle, AuditError> {
    let mut run = dbg.cycle_begin()?;
    let stepped = (|| {
        while dbg.cycle_step(&mut run)?.is_some() {}
        Ok::<(), AuditError>(())
    })();
    let done = dbg.cycle_finish(run);
    stepped?;
    Ok(done.unwrap())
}

#[test]
fn cycles_record_every_role_call_in_the_firmwares_order_and_begin_at_the_start_role() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    let mut used = 0u64;
    // A release before the first load is in no cycle.
    fw.call("model_release", STACK, MAIN_A, [0; 4]);
    fw.ret(MAIN_A, STACK, 0);
    for k in 0..2u64 {
        fw.call("model_load", STACK, MAIN_A, [0; 4]);
        used += 1;
        fw.malloc(STACK - 0x20, IN_BUILD_GRAPH, ptr(used), 16);
        fw.ret(MAIN_A, STACK, 0);
        // Three runs, no build, no switch: roles may be absent or repeat.
        for _ in 0..3 {
            fw.call("inference_run", STACK, MAIN_B, [0; 4]);
            // A role's function called inside a phase is part of that phase.
            fw.call("model_release", STACK - 0x40, IN_BUILD_GRAPH_2, [0; 4]);
            fw.ret(IN_BUILD_GRAPH_2, STACK - 0x40, 0);
            fw.ret(MAIN_B, STACK, 0);
        }
        if k == 0 {
            fw.call("model_release", STACK, MAIN_A, [0; 4]);
            fw.ret(MAIN_A, STACK, 0);
        }
    }
    fw.call("model_load", STACK, MAIN_A, [0; 4]);
    fw.ret(MAIN_A, STACK, 0);
    let (mut dbg, _) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
    let first = cycle(&mut dbg).unwrap();
    let roles: Vec<&str> = first.calls.iter().map(|c| c.role.as_str()).collect();
    assert_eq!(roles, ["load", "run", "run", "run", "release"]);
    assert_eq!((first.index, first.start_role.as_str()), (1, "load"));
    assert_eq!((first.before.used, first.after.used), (0, 16));
    let second = cycle(&mut dbg).unwrap();
    let roles: Vec<&str> = second.calls.iter().map(|c| c.role.as_str()).collect();
    assert_eq!(roles, ["load", "run", "run", "run"]);
    assert_eq!(second.index, 2);
    let runs: Vec<u64> = second
        .calls
        .iter()
        .filter(|c| c.role == "run")
        .map(|c| c.record.call)
        .collect();
    assert_eq!(runs, [4, 5, 6]);
    assert!(second.calls.iter().all(|c| c.record.cycle == Some(2)));
    // The cycle ended halted at the third load's entry: `t.phase("load")` records that call.
    let load = phase(&mut dbg, "load").unwrap();
    assert_eq!((load.call, load.cycle), (3, None));
    assert_eq!(dbg.records().len(), 10);
}

#[test]
fn cycles_begin_at_the_configured_role() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    for _ in 0..2 {
        fw.call("model_load", STACK, MAIN_A, [0; 4]);
        fw.ret(MAIN_A, STACK, 0);
        fw.call("inference_run", STACK, MAIN_B, [0; 4]);
        fw.ret(MAIN_B, STACK, 0);
    }
    fw.call("inference_run", STACK, MAIN_B, [0; 4]);
    let (mut dbg, _) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Trace);
    dbg.settings.config.lifecycle.cycle_starts = Some("run".into());
    let c = cycle(&mut dbg).unwrap();
    let roles: Vec<&str> = c.calls.iter().map(|c| c.role.as_str()).collect();
    assert_eq!(roles, ["run", "load"]);
    dbg.settings.config.lifecycle.cycle_starts = Some("warmup".into());
    let e = dbg.cycle_begin().unwrap_err().to_string();
    assert!(e.contains("cycle_starts = \"warmup\""), "{e}");
}

/// Two cycles of a firmware whose build phase nests spans with allocations in both, then the
/// third load's entry.
fn lifecycle_firmware() -> Firmware {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    let init = fw.addr("op_init");
    for k in 0..2 {
        let base = 4 * k;
        fw.call("model_load", STACK, MAIN_A, [0; 4]);
        fw.malloc(STACK - 0x20, IN_BUILD_GRAPH, ptr(base + 1), 16);
        fw.ret(MAIN_A, STACK, 0);
        fw.call("graph_build", STACK, MAIN_B, [0; 4]);
        // op_init(ctx, 0) { malloc 32; op_init(ctx, 1) { malloc 48 } }
        fw.call("op_init", STACK - 0x10, IN_BUILD_GRAPH, [0; 4]);
        fw.malloc(STACK - 0x30, IN_OP_PREPARE, ptr(base + 2), 32);
        fw.call("op_init", STACK - 0x40, init + 4, [0, 1, 0, 0]);
        fw.malloc(STACK - 0x60, IN_OP_PREPARE, ptr(base + 3), 48);
        fw.ret(init + 4, STACK - 0x40, 0);
        fw.ret(IN_BUILD_GRAPH, STACK - 0x10, 0);
        fw.ret(MAIN_B, STACK, 0);
        fw.call("inference_run", STACK, MAIN_A, [0; 4]);
        fw.free(STACK - 0x20, IN_BUILD_GRAPH_2, ptr(base + 3), 48);
        fw.ret(MAIN_A, STACK, 0);
        fw.call("model_release", STACK, MAIN_B, [0; 4]);
        fw.free(STACK - 0x20, IN_BUILD_GRAPH_2, ptr(base + 2), 32);
        fw.free(STACK - 0x20, IN_BUILD_GRAPH_2, ptr(base + 1), 16);
        fw.ret(MAIN_B, STACK, 0);
    }
    fw.call("model_load", STACK, MAIN_A, [0; 4]);
    fw
}

/// What a traced run recorded, for comparing two runs.
fn recorded(dbg: &Debugger) -> (Vec<String>, Vec<String>) {
    let events = dbg
        .events()
        .iter()
        .map(|e| {
            format!(
                "{:?} {:#x} {} {:?} {:?} {:?} {:?} {}",
                e.kind, e.addr, e.size, e.request, e.used_after, e.phase, e.span, e.site
            )
        })
        .collect();
    let phases = dbg
        .records()
        .iter()
        .map(|r| {
            let spans: Vec<_> = r
                .spans
                .iter()
                .map(|s| (s.call, s.before_used, s.delta, s.peak_used))
                .collect();
            format!(
                "{} {} {} {} {} {:?}",
                r.function, r.allocs, r.frees, r.peak_used, r.delta_used, spans
            )
        })
        .collect();
    (events, phases)
}

#[test]
fn six_breakpoints_trace_a_lifecycle_like_an_unlimited_target() {
    let (mut free, free_log) =
        fake::debugger_with(lifecycle_firmware(), FREERTOS_LIKE, PeakMethod::Trace, None);
    let (mut lean, lean_log) = fake::debugger_with(
        lifecycle_firmware(),
        FREERTOS_LIKE,
        PeakMethod::Trace,
        Some(6),
    );
    for dbg in [&mut free, &mut lean] {
        for _ in 0..2 {
            cycle(dbg).unwrap();
        }
    }
    let (events, phases) = recorded(&free);
    assert_eq!(events.len(), 12, "{events:#?}");
    assert_eq!(recorded(&lean), (events, phases));
    // Lean: the block is read at the caller's return, never at the allocator's return
    // instruction, which the unlimited target stops at once per allocation.
    let malloc = lean.symbols().function("pvPortMalloc").unwrap();
    let (addr, len) = (malloc.entry, malloc.size);
    let in_malloc = |pc: &&u64| (addr..addr + len).contains(*pc) && **pc != addr;
    assert_eq!(lean_log.borrow().stops.iter().filter(in_malloc).count(), 0);
    assert_eq!(free_log.borrow().stops.iter().filter(in_malloc).count(), 6);
    // Inside the inner span with its allocation in flight: the allocator's two entries, the
    // span entry, and the innermost phase, span and allocation returns. The estimate before
    // the run is that maximum.
    let used = lean.breakpoint_use();
    assert_eq!(
        (used.max_armed, used.capacity, used.planned),
        (6, Some(6), Some(6))
    );
    let unlimited = free.breakpoint_use();
    assert_eq!(unlimited.capacity, None);
    assert!(unlimited.max_armed > 6, "{unlimited:?}");
    // Everything armed awaits both nested spans' returns; the estimate counts one level.
    assert_eq!(
        unlimited.planned,
        Some(unlimited.max_armed - 1),
        "{unlimited:?}"
    );
}

#[test]
fn a_plan_that_does_not_fit_even_lean_is_refused_before_the_run_with_its_counts() {
    let (mut dbg, log) = fake::debugger_with(
        lifecycle_firmware(),
        FREERTOS_LIKE,
        PeakMethod::Trace,
        Some(5),
    );
    let e = dbg.cycle_begin().unwrap_err().to_string();
    assert!(
        e.contains("needs 6 hardware breakpoints at once (5 between phases, 6 inside a phase"),
        "{e}"
    );
    assert!(e.contains("the target has 5"), "{e}");
    assert!(log.borrow().stops.is_empty(), "refused before running");
}
