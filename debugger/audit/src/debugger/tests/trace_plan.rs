//! What the trace records, decided from what the script reads (`Debugger::plan_trace`): no
//! breakpoint in the allocator for a script that reads no allocation, one stop per allocation
//! when no one reads the size asked (also on a target short of breakpoints), breakpoints only
//! while a phase of the scope is open; and what the halts cost the firmware's time.

use super::fake::{self, FREERTOS_LIKE, Firmware, STACK};
use super::{IN_BUILD_GRAPH, MAIN_A, MAIN_B, cycle, lifecycle_firmware, phase, ptr};
use crate::config::{PeakMethod, TraceScope};
use crate::debugger::Debugger;
use crate::events::{Role, TraceRole};
use crate::model::EventKind;
use crate::observers::FailChoice;
use crate::script::ScriptReads;

fn reads(allocations: &[&'static str], requests: &[&'static str]) -> ScriptReads {
    ScriptReads {
        allocations: allocations.iter().copied().collect(),
        requests: requests.iter().copied().collect(),
    }
}

/// Stops at pvPortMalloc's entry, and at its return instructions.
fn malloc_stops(dbg: &Debugger, stops: &[u64]) -> (usize, usize) {
    let malloc = dbg.symbols().function("pvPortMalloc").unwrap();
    let (addr, len) = (malloc.entry, malloc.size);
    let entry = addr & !1;
    let at_entry = stops.iter().filter(|pc| **pc == entry).count();
    let inside = stops
        .iter()
        .filter(|pc| (entry..entry + len).contains(*pc) && **pc != entry)
        .count();
    (at_entry, inside)
}

/// An event's facts but its requested size.
fn facts_of(dbg: &Debugger) -> Vec<(EventKind, u64, u64, u64, Option<String>)> {
    dbg.events()
        .iter()
        .map(|e| (e.kind, e.addr, e.size, e.used_after, e.phase.clone()))
        .collect()
}

#[test]
fn a_script_that_reads_no_allocation_halts_the_firmware_only_at_phase_boundaries() {
    let (mut dbg, log) = fake::debugger(lifecycle_firmware(), FREERTOS_LIKE, PeakMethod::Trace);
    dbg.plan_trace(&ScriptReads::default()).unwrap();
    for _ in 0..2 {
        cycle(&mut dbg).unwrap();
    }
    assert_eq!(malloc_stops(&dbg, &log.borrow().stops), (0, 0));
    assert!(dbg.events().is_empty());
    // The phases' figures come from the walks at their boundaries; their peaks are sampled.
    let load = &dbg.records()[0];
    assert_eq!(
        (load.function.as_str(), load.delta_used, load.method),
        ("model_load", 16, PeakMethod::Sample)
    );
    let facts = dbg.trace_facts();
    assert!(!facts.allocations && !facts.requests, "{facts:?}");
    assert_eq!(facts.allocations_why, "the script reads no allocation");
    // The firmware ran between the stops, and was held halted at each.
    let time = dbg.firmware_time().unwrap();
    assert!(
        time.halts > 0 && time.halted_per_second.is_some(),
        "{time:?}"
    );
    assert_eq!(time.ticks, None, "this firmware has no tick counter");
}

#[test]
fn an_allocation_is_one_stop_unless_its_requested_size_is_read() {
    let (mut one, one_log) = fake::debugger(lifecycle_firmware(), FREERTOS_LIKE, PeakMethod::Trace);
    one.plan_trace(&reads(&["events"], &[])).unwrap();
    let (mut two, two_log) = fake::debugger(lifecycle_firmware(), FREERTOS_LIKE, PeakMethod::Trace);
    two.plan_trace(&reads(&["buffers"], &["request"])).unwrap();
    for dbg in [&mut one, &mut two] {
        for _ in 0..2 {
            cycle(dbg).unwrap();
        }
    }
    // The same events, blocks and figures; the size asked only where it is read.
    assert_eq!(one.events().len(), 12);
    assert_eq!(facts_of(&one), facts_of(&two));
    assert!(one.events().iter().all(|e| e.request.is_none()));
    assert!(
        two.events()
            .iter()
            .filter(|e| e.kind == EventKind::Alloc)
            .all(|e| e.request == Some(e.size))
    );
    // Six allocations: six stops at the return instructions, and six at the entry with the
    // requested sizes read.
    assert_eq!(malloc_stops(&one, &one_log.borrow().stops), (0, 6));
    assert_eq!(malloc_stops(&two, &two_log.borrow().stops), (6, 6));
    let (f1, f2) = (one.trace_facts(), two.trace_facts());
    assert!(f1.allocations && !f1.requests, "{f1:?}");
    assert!(f1.requests_why.starts_with("nothing reads them"), "{f1:?}");
    assert!(
        f2.requests && f2.requests_why == "read by request",
        "{f2:?}"
    );
    assert_eq!(f1.allocations_why, "the script reads events");
}

#[test]
fn the_outputs_and_the_settings_decide_what_the_script_does_not_say() {
    let reads_requests = |setting: Option<bool>, shown_by: &[&str], script: &[&'static str]| {
        let (mut dbg, _) = fake::debugger(lifecycle_firmware(), FREERTOS_LIKE, PeakMethod::Trace);
        let trace = &mut dbg.settings.config.trace;
        trace.requests = setting;
        trace.requests_shown_by = shown_by.iter().map(|s| s.to_string()).collect();
        dbg.plan_trace(&reads(&["events"], script)).unwrap();
        let facts = dbg.trace_facts();
        (facts.requests, facts.requests_why)
    };
    assert_eq!(
        reads_requests(None, &["--json"], &[]),
        (true, "read by --json".to_string())
    );
    assert_eq!(
        reads_requests(Some(false), &["--json"], &["request"]),
        (false, "[trace] requests = false".to_string())
    );
    assert_eq!(
        reads_requests(Some(true), &[], &[]),
        (true, "[trace] requests = true".to_string())
    );
    // `[trace] allocations` wins over the script's text, both ways.
    let (mut dbg, _) = fake::debugger(lifecycle_firmware(), FREERTOS_LIKE, PeakMethod::Trace);
    dbg.settings.config.trace.allocations = Some(true);
    dbg.plan_trace(&ScriptReads::default()).unwrap();
    assert!(dbg.tracing() && dbg.trace_facts().allocations_why == "[trace] allocations = true");
    let (mut dbg, _) = fake::debugger(lifecycle_firmware(), FREERTOS_LIKE, PeakMethod::Sample);
    dbg.plan_trace(&reads(&["leaks"], &[])).unwrap();
    let facts = dbg.trace_facts();
    assert!(!facts.allocations, "{facts:?}");
    assert_eq!(
        facts.allocations_why,
        "the sample method traces no allocation"
    );
    // No trace, no requested size: an output that would show them does not say otherwise.
    let (mut dbg, _) = fake::debugger(lifecycle_firmware(), FREERTOS_LIKE, PeakMethod::Trace);
    dbg.settings.config.trace.requests_shown_by = vec!["--json".to_string()];
    dbg.plan_trace(&ScriptReads::default()).unwrap();
    let facts = dbg.trace_facts();
    assert_eq!(
        (
            facts.allocations,
            facts.requests,
            facts.requests_why.as_str()
        ),
        (false, false, "no allocation is traced"),
        "{facts:?}"
    );
}

#[test]
fn a_trace_scoped_to_phases_is_armed_only_while_one_of_them_is_open() {
    let firmware = || {
        let sym = fake::symbols();
        let mut fw = Firmware::new(&sym);
        fw.malloc(STACK - 0x20, IN_BUILD_GRAPH, ptr(1), 16);
        fw.call("model_load", STACK, MAIN_A, [0; 4]);
        fw.malloc(STACK - 0x20, IN_BUILD_GRAPH, ptr(2), 32);
        fw.ret(MAIN_A, STACK, 0);
        fw.malloc(STACK - 0x20, IN_BUILD_GRAPH, ptr(3), 48);
        fw.call("graph_build", STACK, MAIN_B, [0; 4]);
        fw.malloc(STACK - 0x20, IN_BUILD_GRAPH, ptr(4), 64);
        fw.ret(MAIN_B, STACK, 0);
        fw
    };
    for (scope, traced) in [
        (TraceScope::Phases, vec![32, 64]),
        (TraceScope::Only(vec!["load".into()]), vec![32]),
        (TraceScope::Only(vec!["graph_build".into()]), vec![64]),
    ] {
        let (mut dbg, log) = fake::debugger(firmware(), FREERTOS_LIKE, PeakMethod::Trace);
        dbg.settings.config.trace.scope = scope.clone();
        dbg.plan_trace(&reads(&["events"], &[])).unwrap();
        assert!(!dbg.tracing(), "{scope}: disarmed between phases");
        let load = phase(&mut dbg, "load").unwrap();
        let build = phase(&mut dbg, "build").unwrap();
        let sizes: Vec<u64> = dbg.events().iter().map(|e| e.size).collect();
        assert_eq!(sizes, traced, "{scope}");
        assert_eq!(
            malloc_stops(&dbg, &log.borrow().stops),
            (0, traced.len()),
            "{scope}: no stop between phases"
        );
        // A phase's figures are the same either way: its entry's walk starts the count.
        assert_eq!(
            (
                load.before.used,
                load.delta_used,
                build.before.used,
                build.delta_used
            ),
            (16, 32, 96, 64),
            "{scope}"
        );
        let method = |traced: bool| {
            if traced {
                PeakMethod::Trace
            } else {
                PeakMethod::Sample
            }
        };
        assert_eq!(load.method, method(traced.contains(&32)), "{scope}");
        assert_eq!(build.method, method(traced.contains(&64)), "{scope}");
        assert_eq!(dbg.trace_facts().scope, scope.to_string());
        assert!(!dbg.tracing(), "{scope}: disarmed after the last phase");
    }
}

#[test]
fn a_target_short_of_breakpoints_reads_the_block_at_the_callers_return_in_one_stop_too() {
    let (mut free, _) =
        fake::debugger_with(lifecycle_firmware(), FREERTOS_LIKE, PeakMethod::Trace, None);
    let (mut lean, lean_log) = fake::debugger_with(
        lifecycle_firmware(),
        FREERTOS_LIKE,
        PeakMethod::Trace,
        Some(6),
    );
    for dbg in [&mut free, &mut lean] {
        dbg.plan_trace(&reads(&["events"], &[])).unwrap();
        for _ in 0..2 {
            cycle(dbg).unwrap();
        }
    }
    assert_eq!(facts_of(&lean), facts_of(&free));
    // Lean, the entry (armed for lean only) awaits the caller's return: the size asked is
    // read there on the way, as before.
    assert_eq!(malloc_stops(&lean, &lean_log.borrow().stops), (6, 0));
    assert_eq!(lean.breakpoint_use().max_armed, 6);
}

#[test]
fn failure_injection_arms_the_allocators_entry_where_the_failure_is_made() {
    let (mut dbg, _) = fake::debugger(lifecycle_firmware(), FREERTOS_LIKE, PeakMethod::Trace);
    dbg.plan_trace(&reads(&["events"], &[])).unwrap();
    let entry_roles = |dbg: &Debugger| {
        let addr = dbg.symbols().function("pvPortMalloc").unwrap().entry;
        dbg.session.roles_at(addr & !1)
    };
    assert_eq!(
        entry_roles(&dbg),
        [Role::Trace(TraceRole::MallocLean { size_arg: 0 })]
    );
    dbg.fail_alloc(FailChoice {
        site: None,
        phase: Some("load".into()),
        nth: 1,
    })
    .unwrap();
    assert_eq!(
        entry_roles(&dbg),
        [Role::Trace(TraceRole::MallocRequest { size_arg: 0 })]
    );
    assert!(dbg.trace_facts().requests);
}
