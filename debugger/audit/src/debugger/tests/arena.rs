//! The arena observer over the fake target: a build scripted as TFLM makes one (the
//! constructor placing the allocator object by inlined code, then a persistent allocation;
//! `AllocateTensors` with an Init and a Prepare allocation, the plan's temporary allocation
//! and size query, the head), with objects laid out by a layout of the test's own. The
//! functions broken on are the fake firmware's (any real code does: the hooks are addresses).

use std::rc::Rc;

use memlife_report::model::BuildStatus;
use memlife_tflm::{AllocatorLayout, InterpreterLayout, LiveLayout, NodeLayout, PlannerLayout};

use super::fake::{self, FREERTOS_LIKE, Firmware, RAM, STACK, Step};
use super::{IN_BUILD_GRAPH, IN_BUILD_GRAPH_2, IN_OP_PREPARE, MAIN_A, MAIN_B, phase};
use crate::config::PeakMethod;
use crate::observers::arena::{ArenaObserver, Hooks};

/// The arena as handed over, and its size.
const ARENA: u64 = RAM + 0x4000;
const ARENA_BYTES: u64 = 0x800;
const END: u64 = ARENA + ARENA_BYTES;
/// The allocator object (20 bytes) at the arena's top.
const ALLOCATOR: u64 = END - 20;
const INTERPRETER: u64 = RAM + 0x8000;
const NODES: u64 = RAM + 0x9000;
const REGISTRATION: u64 = RAM + 0x9100;
const TMP_ALLOCATOR: u64 = STACK - 0x300;
const PLANNER: u64 = STACK - 0x200;

fn layout() -> LiveLayout {
    LiveLayout {
        generation: memlife_tflm::Generation::Tflm2020,
        ptr_size: 4,
        allocator: AllocatorLayout {
            size: 20,
            buffer_head: 4,
            buffer_tail: 8,
            head: 12,
            tail: 16,
            temp: None,
        },
        interpreter: InterpreterLayout {
            model: 4,
            arena_allocator: 8,
            micro_allocator: None,
            active: Some(12),
            node_index: Some(16),
            scratch_request: Some(20),
            state: None,
            nodes: Some(24),
            subgraph_nodes: None,
        },
        node: Some(NodeLayout {
            size: 8,
            registration: 4,
            builtin_code: 0,
            builtin_code_size: 4,
            custom_name: 4,
        }),
        planner: Some(PlannerLayout {
            buffer_count: 0,
            max_buffer_count: 4,
            requirements: 8,
            buffer_offsets: 12,
            offset_size: 4,
        }),
        builtin_names: vec![(9, "FULLY_CONNECTED".into())],
    }
}

/// The fake firmware's functions as TFLM's.
fn hooks(fw: &Firmware) -> Hooks {
    Hooks {
        construct: fw.addr("k_conv2d"),
        destroy: Some(fw.addr("k_decode")),
        allocate_tensors: fw.addr("k_dense"),
        invoke: Some(fw.addr("k_dwconv")),
        allocate_from_tail: fw.addr("k_relu"),
        plan_size: Some(fw.addr("k_add")),
        current: None,
    }
}

/// A step that stops nowhere, writing `pokes`.
fn poke(fw: &mut Firmware, pokes: Vec<(u64, u32)>) {
    fw.steps.push(Step {
        pc: 0x0800_0000,
        sp: STACK,
        pokes,
        ..Step::default()
    });
}

/// `AllocateFromTail(allocator, bytes, alignment)` from `ret`, its tail moving to `placed`.
fn from_tail(fw: &mut Firmware, allocator: u64, bytes: u64, align: u64, placed: u64, ret: u64) {
    let sp = STACK - 0x80;
    fw.call("k_relu", sp, ret, [allocator, bytes, align, 0]);
    fw.steps.push(Step {
        pc: ret,
        sp,
        args: [placed, 0, 0, 0],
        pokes: vec![(allocator + 16, placed as u32)],
        ..Step::default()
    });
}

fn a32(x: u64) -> u32 {
    x as u32
}

/// One build: 20 B object, 768 B of tensors (construction), 40 B Init of node 0 (padded to
/// 48 from a 16-aligned... tail), 32 B Prepare, a 40-byte plan temporary, 2 buffers of 36 B,
/// a 64-byte head; then one inference in the run phase and the destructor.
fn scripted_build(fw: &mut Firmware) {
    fw.call("graph_build", STACK, MAIN_A, [0; 4]);
    let sp = STACK - 0x20;
    fw.call("k_conv2d", sp, IN_BUILD_GRAPH, [INTERPRETER, 0, 0, ARENA]);
    // The allocator places itself at the top (inlined in TFLM: no stop).
    poke(
        fw,
        vec![
            (ALLOCATOR + 4, a32(ARENA)),
            (ALLOCATOR + 8, a32(END)),
            (ALLOCATOR + 12, a32(ARENA)),
            (ALLOCATOR + 16, a32(ALLOCATOR)),
            (INTERPRETER + 8, a32(ALLOCATOR)),
            (INTERPRETER + 12, 1),
            (INTERPRETER + 24, a32(NODES)),
            (NODES + 4, a32(REGISTRATION)),
            (REGISTRATION, 9),
        ],
    );
    let t1 = ALLOCATOR - 768;
    from_tail(fw, ALLOCATOR, 768, 4, t1, IN_OP_PREPARE);
    fw.ret(IN_BUILD_GRAPH, sp, INTERPRETER);
    fw.call("k_dense", sp, IN_BUILD_GRAPH_2, [INTERPRETER, 0, 0, 0]);
    // Node 0's Init: 40 B aligned down to 16.
    poke(fw, vec![(INTERPRETER + 16, 0)]);
    let t2 = (t1 - 40) & !15;
    from_tail(fw, ALLOCATOR, 40, 16, t2, IN_OP_PREPARE);
    // Its Prepare.
    poke(fw, vec![(INTERPRETER + 20, 1)]);
    let t3 = (t2 - 32) & !15;
    from_tail(fw, ALLOCATOR, 32, 16, t3, IN_OP_PREPARE);
    poke(fw, vec![(INTERPRETER + 16, u32::MAX)]);
    // The plan: a temporary allocator over the free gap, then the planner.
    poke(
        fw,
        vec![
            (TMP_ALLOCATOR + 4, a32(ARENA)),
            (TMP_ALLOCATOR + 8, a32(t3)),
            (TMP_ALLOCATOR + 12, a32(ARENA)),
            (TMP_ALLOCATOR + 16, a32(t3)),
            (PLANNER, 2),
            (PLANNER + 4, 10),
            (PLANNER + 8, a32(ARENA)),
            (PLANNER + 12, a32(ARENA + 32 * 10)),
        ],
    );
    from_tail(fw, TMP_ALLOCATOR, 40, 4, t3 - 40, IN_OP_PREPARE);
    fw.call("k_add", STACK - 0x80, IN_OP_PREPARE, [PLANNER, 0, 0, 0]);
    fw.ret(IN_OP_PREPARE, STACK - 0x80, 64);
    poke(
        fw,
        vec![(ALLOCATOR + 12, a32(ARENA + 64)), (INTERPRETER + 12, 0)],
    );
    fw.ret(IN_BUILD_GRAPH_2, sp, 0);
    fw.ret(MAIN_A, STACK, 0);
    fw.call("inference_run", STACK, MAIN_B, [0; 4]);
    fw.call("k_dwconv", sp, IN_BUILD_GRAPH, [INTERPRETER, 0, 0, 0]);
    fw.ret(IN_BUILD_GRAPH, sp, 0);
    fw.ret(MAIN_B, STACK, 0);
}

#[test]
fn a_build_is_recorded_step_by_step_with_its_plan_peak_and_smallest_arena() {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    let hooks = hooks(&fw);
    scripted_build(&mut fw);
    let (mut dbg, _) = fake::debugger(fw, FREERTOS_LIKE, PeakMethod::Sample);
    let observer = ArenaObserver::new(Rc::clone(&sym), layout(), hooks);
    dbg.add_observer(Box::new(observer)).unwrap();
    phase(&mut dbg, "build").unwrap();
    phase(&mut dbg, "run").unwrap();
    let r = dbg.arena_record().unwrap();
    assert_eq!(r.builds.len(), 1);
    let b = &r.builds[0];
    assert_eq!(b.status, BuildStatus::Ok);
    assert_eq!(
        (b.arena, b.arena_bytes, b.buffer_head, b.allocator),
        (Some(ARENA), ARENA_BYTES, ARENA, ALLOCATOR)
    );
    assert_eq!((b.phase.as_deref(), b.call), (Some("graph_build"), Some(1)));
    let steps: Vec<(i64, &str, &str, u64)> = b
        .steps
        .iter()
        .map(|s| (s.node, s.stage.as_str(), s.category.as_str(), s.bytes))
        .collect();
    let t1 = ALLOCATOR - 768;
    let init = t1 - ((t1 - 40) & !15);
    assert_eq!(
        steps,
        [
            (-1, "construct", "arena-allocator", 20),
            (-1, "construct", "other", 768),
            (0, "init", "other", init),
            (0, "prepare", "other", 32),
        ]
    );
    assert_eq!(b.steps[2].operator.as_deref(), Some("FULLY_CONNECTED"));
    // The steps sum to the persistent bytes.
    let sum: u64 = b.steps.iter().map(|s| s.bytes).sum();
    assert_eq!(sum, b.persistent_bytes);
    assert_eq!(b.head_bytes, 64);
    let peak = &b.peaks[0];
    assert_eq!(
        (
            peak.kind.as_str(),
            peak.below_tail,
            peak.above_head,
            peak.buffers
        ),
        ("plan", 40, 72, Some(2))
    );
    assert_eq!(b.arena_used_bytes, Some(64 + sum));
    let node0 = b.operators.iter().find(|o| o.node == 0).unwrap();
    assert_eq!((node0.init_bytes, node0.prepare_bytes), (init, 32));
    // The smallest arena: the persistent bytes and the plan's peak (larger than the head),
    // replayed: in an arena ending 12 past 16 the Init's 40 bytes need no padding, so it is
    // 20 + 768 + 40 + 32 + 40 + 72 = 972, 4 less than this arena's 864 + 112.
    let needs = b.needs.unwrap();
    assert_eq!((sum, needs), (864, 972));
    assert!(
        b.exact,
        "the build ran to its end, every step asked at a stop"
    );
    assert_eq!(b.inferences, 1);
    // The figures at the boundaries after the build: the build phase's return, the run
    // phase's entry and return; and the milestones.
    let at: Vec<(&str, &str)> = b
        .figures
        .iter()
        .map(|f| (f.at.as_str(), f.when.as_str()))
        .collect();
    assert_eq!(
        at,
        [
            ("constructed", ""),
            ("allocated", ""),
            ("graph_build", "return"),
            ("inference_run", "entry"),
            ("invoked", ""),
            ("inference_run", "return")
        ]
    );
    assert!(
        b.figures
            .iter()
            .skip(1)
            .all(|f| f.persistent_bytes == sum && f.head_bytes == 64)
    );
    let m = &r.models[0];
    assert_eq!((m.arena_bytes, m.needs), (ARENA_BYTES, Some(needs)));
    assert_eq!(m.spare, Some(ARENA_BYTES as i64 - needs as i64));
    // The report gets the same record through the observer.
    let report = crate::report::EngineRecord::from(&dbg);
    assert_eq!(report.arenas, Some(r));
}
