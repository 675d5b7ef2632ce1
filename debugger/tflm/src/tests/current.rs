//! Current TFLM (tflite-micro since 2022-07): our own declarations of its classes
//! (testdata/current_tflm.cpp) compiled with arm-none-eabi-g++, and RAM images laid out as TFLM
//! lays them: the single arena and the split pair, live, stale and damaged.

use memlife_dwarf::Symbols;

use super::support::{Image, T, tflite_model};
use crate::layout::{Cursors, Generation, Tflm};
use crate::{Container, ContainerKind, TensorKind, read_arenas};

const SOURCE: &str = include_str!("../../testdata/current_tflm.cpp");

pub fn symbols() -> Symbols {
    static ELF: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let elf = ELF.get_or_init(|| {
        let dir = memlife_testkit::process::tempdir("tflm-current");
        memlife_testkit::cross_elf::cxx_elf(&dir, "current_tflm", SOURCE, &["-fno-short-enums"])
    });
    Symbols::load(elf).unwrap()
}

/// The same declarations in namespace `tflite::micro`, as tflite-micro of 2026-10 has them.
pub fn symbols_micro_namespace() -> Symbols {
    static ELF: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let elf = ELF.get_or_init(|| {
        let dir = memlife_testkit::process::tempdir("tflm-current-micro");
        memlife_testkit::cross_elf::cxx_elf(
            &dir,
            "current_tflm_micro",
            SOURCE,
            &["-fno-short-enums", "-DTFLM_MICRO_NAMESPACE"],
        )
    });
    Symbols::load(elf).unwrap()
}

const RAM: u64 = 0x2000_0000;
const MODEL: u64 = 0x2000_0100;
const ARENA: u64 = 0x2000_2000;
const ARENA_END: u64 = 0x2000_3000;
const INTERP: u64 = 0x2000_4000;
const REGS: u64 = 0x2000_5000;
// The split pair's two arenas.
const P_ARENA: u64 = 0x2000_6000;
const P_END: u64 = 0x2000_6800;
const NP_ARENA: u64 = 0x2000_7000;
const NP_END: u64 = 0x2000_7800;

/// Builtin codes of the test file's `BuiltinOperator`.
const FULLY_CONNECTED: i32 = 9;
const CUSTOM: i32 = 32;

/// Where the image puts things, for the assertions.
pub struct Placed {
    pub image: Image,
    pub containers: Vec<Container>,
    pub allocator: u64,
    pub micro_allocator: u64,
    pub tail: u64,
    pub head: u64,
    pub temp: u64,
    /// The tensors' data pointers.
    pub data: [u64; 4],
}

fn heap_block(start: u64, size: u64) -> Container {
    Container {
        start,
        size,
        kind: ContainerKind::HeapBlock,
    }
}

fn vptr(symbols: &Symbols, class: &str) -> u64 {
    symbols.elf_symbol(class).unwrap().address + 8
}

/// The model: input t0 -> FULLY_CONNECTED (weights t1) -> t2 -> custom `MyOp` -> t3 output.
fn model() -> (Vec<u8>, usize) {
    tflite_model(
        &[
            T("input", 9, &[1, 16], false),
            T("weights", 9, &[16, 16], true),
            T("hidden", 9, &[1, 16], false),
            T("output", 9, &[1, 4], false),
        ],
        &[0],
        &[3],
        &[(0, &[0, 1], &[2]), (1, &[2], &[3])],
        &[(FULLY_CONNECTED, None), (CUSTOM, Some("MyOp"))],
    )
}

/// The interpreter's objects: the `MicroAllocator` at `ma` pointing at `persistent` and
/// `non_persistent`, the tensors and nodes below it, the interpreter at `INTERP`, the
/// registrations at `REGS`. Returns the lowest tail address used and the tensors' data.
fn interpreter_objects(
    img: &mut Image,
    tflm: &Tflm,
    symbols: &Symbols,
    ma: u64,
    persistent: u64,
    non_persistent: u64,
    np_start: u64,
) -> (u64, [u64; 4]) {
    let mac = tflm.micro_allocator.as_ref().unwrap();
    img.u32(ma, vptr(symbols, "_ZTVN6tflite14MicroAllocatorE"));
    img.u32(ma + mac.persistent.unwrap(), persistent);
    img.u32(ma + mac.non_persistent.unwrap(), non_persistent);
    // SubgraphAllocations, the eval tensors and the nodes, further down the tail.
    let sa = ma - 0x100;
    let tensors = sa - 0x100;
    let nodes = tensors - 0x100;
    let sc = tflm.subgraph.as_ref().unwrap();
    img.u32(sa + sc.tensors, tensors);
    img.u32(sa + sc.node_and_registrations, nodes);
    let (model, root) = model();
    img.put(MODEL, &model);
    let root = MODEL + root as u64;
    let weights = MODEL + 0x40; // any address inside the model: read-only
    // input at 0, hidden at 16, output reuses input's bytes (input is dead after op 0).
    let data = [np_start, weights, np_start + 16, np_start];
    let tc = tflm.tensor.as_ref().unwrap();
    for (i, d) in data.iter().enumerate() {
        img.u32(tensors + i as u64 * tc.size + tc.data, *d);
    }
    let nc = tflm.node.as_ref().unwrap();
    let (reg0, reg1, name) = (REGS, REGS + 0x40, REGS + 0x80);
    img.u32(nodes + nc.registration, reg0);
    img.u32(nodes + nc.size + nc.registration, reg1);
    img.u32(reg0 + nc.builtin_code, FULLY_CONNECTED as u64);
    img.u32(reg1 + nc.builtin_code, CUSTOM as u64);
    img.u32(reg1 + nc.custom_name, name);
    img.put(name, b"MyOp\0");
    let ic = tflm.interpreter.as_ref().unwrap();
    img.u32(INTERP + ic.model, root);
    img.u32(INTERP + ic.allocator, ma);
    img.u32(INTERP + ic.graph_allocator.unwrap(), ma);
    img.u32(INTERP + ic.subgraph_allocations.unwrap(), sa);
    img.u32(
        INTERP + ic.graph_context.unwrap(),
        INTERP + ic.context.unwrap(),
    );
    img.u8(INTERP + ic.tensors_allocated.unwrap(), 1);
    (nodes, data)
}

fn containers() -> Vec<Container> {
    vec![
        heap_block(MODEL - 8, 0x1000),
        heap_block(ARENA - 8, ARENA_END - ARENA + 8),
        heap_block(INTERP - 8, 0x100),
        heap_block(REGS - 8, 0x100),
    ]
}

/// A single arena in a heap block, with a temporary allocation outstanding (halted in Prepare).
pub fn single_arena(symbols: &Symbols, tflm: &Tflm) -> Placed {
    let mut img = Image::new(RAM, 0x8000);
    let class = tflm
        .arenas
        .iter()
        .find(|a| a.name == "tflite::SingleArenaBufferAllocator")
        .unwrap();
    // Create(): the allocator is the first persistent allocation, at the top.
    let alloc = (ARENA_END - class.size) & !3;
    let ma = alloc - 0x100;
    let (tail, data) = interpreter_objects(
        &mut img,
        tflm,
        symbols,
        ma,
        alloc + class.persistent_iface,
        alloc + class.non_persistent_iface,
        ARENA,
    );
    let (head, temp) = (ARENA + 0x100, ARENA + 0x120);
    let vt = class.vtable.as_ref().unwrap();
    img.u32(alloc + vt.vptrs[0], vt.address + 8);
    // The secondary vtable's address point, as g++ lays the vtable out: past the primary's two
    // words and five functions, and its own two words.
    img.u32(alloc + vt.vptrs[1], vt.address + 36);
    let Cursors::Single {
        head: h,
        tail: t,
        temp: Some(tp),
    } = class.cursors
    else {
        panic!("single arena cursors: {:?}", class.cursors);
    };
    img.u32(alloc + class.buffer_head, ARENA);
    img.u32(alloc + class.buffer_tail, ARENA_END);
    img.u32(alloc + h, head);
    img.u32(alloc + t, tail);
    img.u32(alloc + tp, temp);
    Placed {
        image: img,
        containers: containers(),
        allocator: alloc,
        micro_allocator: ma,
        tail,
        head,
        temp,
        data,
    }
}

#[test]
fn the_current_classes_are_found_by_name_through_their_bases() {
    let symbols = symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    assert_eq!(tflm.generation(), Generation::Current);
    let single = tflm
        .arenas
        .iter()
        .find(|a| a.name == "tflite::SingleArenaBufferAllocator")
        .unwrap();
    // The Cortex-M layout: two vtable pointers, then the cursors.
    assert_eq!(single.size, 36);
    assert_eq!(single.vtable.as_ref().unwrap().vptrs, [0, 4]);
    assert_eq!((single.buffer_head, single.buffer_tail), (8, 12));
    assert_eq!(
        single.cursors,
        Cursors::Single {
            head: 16,
            tail: 20,
            temp: Some(24)
        }
    );
    assert_eq!(
        (single.non_persistent_iface, single.persistent_iface),
        (0, 4)
    );
    assert!(
        tflm.arena_classes()
            .contains(&"tflite::micro::PersistentArenaBufferAllocator")
    );
    let ma = tflm.micro_allocator.as_ref().unwrap();
    assert_eq!((ma.non_persistent, ma.persistent), (Some(4), Some(8)));
    let ic = tflm.interpreter.as_ref().unwrap();
    assert!(!ic.allocator_by_value);
    assert_eq!(
        (
            ic.model,
            ic.allocator,
            ic.subgraph_allocations,
            ic.graph_allocator
        ),
        (0, 20, Some(40), Some(36))
    );
    assert_eq!(tflm.tensor.as_ref().unwrap().name, "TfLiteEvalTensor");
    assert_eq!(tflm.builtin_name(9), "FULLY_CONNECTED");
    assert_eq!(tflm.builtin_name(0), "ADD");
    assert_eq!(tflm.builtin_name(77), "BUILTIN_77");
}

#[test]
fn the_classes_in_namespace_tflite_micro_are_found_with_their_interfaces() {
    // The interface subobjects are found under either namespace: with only `tflite::` looked
    // for, the persistent interface of a `tflite::micro` class read as offset 0.
    let symbols = symbols_micro_namespace();
    let tflm = Tflm::detect(&symbols).unwrap();
    assert_eq!(tflm.generation(), Generation::Current);
    let single = tflm
        .arenas
        .iter()
        .find(|a| a.name == "tflite::micro::SingleArenaBufferAllocator")
        .unwrap();
    assert_eq!(
        (single.non_persistent_iface, single.persistent_iface),
        (0, 4)
    );
    assert!(
        single.vtable.is_some(),
        "_ZTVN6tflite5micro26Single…E found"
    );
    let ma = tflm.micro_allocator.as_ref().unwrap();
    assert_eq!((ma.non_persistent, ma.persistent), (Some(4), Some(8)));
    assert!(!tflm.interpreter.as_ref().unwrap().allocator_by_value);
}

#[test]
fn a_single_arena_is_read_with_its_interpreter_and_plan() {
    let symbols = symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    let p = single_arena(&symbols, &tflm);
    let mut mem = p.image.snapshot();
    let arenas = read_arenas(&mut mem, &symbols, &tflm, &p.containers).unwrap();
    assert_eq!(arenas.len(), 1, "{arenas:#?}");
    let a = &arenas[0];
    assert_eq!(a.allocator.address, p.allocator);
    assert_eq!(a.allocator.class, "tflite::SingleArenaBufferAllocator");
    assert_eq!((a.start, a.end, a.size), (ARENA, ARENA_END, 0x1000));
    assert_eq!(a.container.as_ref().unwrap().start, ARENA - 8);
    assert_eq!(a.persistent_bytes, ARENA_END - p.tail);
    assert_eq!(a.head_bytes, p.head - ARENA);
    assert_eq!(a.temp_bytes, p.temp - p.head);
    assert_eq!(a.free_bytes, p.tail - p.temp);
    // max(head, temp) - buffer_head + buffer_tail - tail.
    assert_eq!(
        a.arena_used_bytes,
        Some((p.temp - ARENA) + (ARENA_END - p.tail))
    );
    assert_eq!(a.micro_allocator, Some(p.micro_allocator));
    let it = a.interpreter.as_ref().unwrap();
    assert_eq!((it.address, it.tensors_allocated), (INTERP, Some(true)));
    let plan = a.plan.as_ref().unwrap();
    let kinds: Vec<TensorKind> = plan.tensors.iter().map(|t| t.kind).collect();
    assert_eq!(
        kinds,
        [
            TensorKind::Planned,
            TensorKind::ReadOnly,
            TensorKind::Planned,
            TensorKind::Planned
        ]
    );
    let offsets: Vec<Option<u64>> = plan.tensors.iter().map(|t| t.offset).collect();
    assert_eq!(offsets, [Some(0), None, Some(16), Some(0)]);
    assert_eq!(plan.tensors[2].bytes, Some(16));
    assert_eq!(plan.tensors[2].name.as_deref(), Some("hidden"));
    let names: Vec<&str> = plan.operators.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["FULLY_CONNECTED", "MyOp"]);
    let live: Vec<u64> = plan.operators.iter().map(|o| o.live_bytes).collect();
    assert_eq!(live, [32, 20]);
    assert_eq!(plan.planned_bytes, 36);
    assert!(plan.overlaps.is_empty(), "{:?}", plan.overlaps);
    assert!(a.anomalies.is_empty(), "{:?}", a.anomalies);
}

#[test]
fn two_tensors_sharing_bytes_while_live_are_named() {
    let symbols = symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    let mut p = single_arena(&symbols, &tflm);
    // hidden (written by op 0) over input (read by op 0).
    let tc = tflm.tensor.as_ref().unwrap();
    let tensors = p.micro_allocator - 0x200;
    p.image.u32(tensors + 2 * tc.size + tc.data, p.data[0]);
    let mut mem = p.image.snapshot();
    let arenas = read_arenas(&mut mem, &symbols, &tflm, &p.containers).unwrap();
    let plan = arenas[0].plan.as_ref().unwrap();
    // hidden now shares input's bytes while op 0 reads input, and output's while op 1 writes
    // output.
    assert_eq!(plan.overlaps_total, 2, "{:#?}", plan.overlaps);
    let pairs: Vec<(&str, &str, u32)> = plan
        .overlaps
        .iter()
        .map(|o| (o.a.name.as_str(), o.b.name.as_str(), o.first_op))
        .collect();
    assert!(pairs.contains(&("input", "hidden", 0)), "{pairs:?}");
    assert!(
        pairs.contains(&("hidden", "output", 1)) || pairs.contains(&("output", "hidden", 1)),
        "{pairs:?}"
    );
    let o = plan.overlaps.iter().find(|o| o.first_op == 0).unwrap();
    assert_eq!((o.last_op, o.start, o.end), (0, ARENA, ARENA + 16));
    let kinds: Vec<&str> = arenas[0].anomalies.iter().map(|a| a.kind).collect();
    assert_eq!(kinds, ["tensor-overlap", "tensor-overlap"]);
    assert!(arenas[0].anomalies[0].message.contains("\"hidden\""));
}

#[test]
fn a_stale_allocator_inside_a_live_arena_is_set_aside() {
    let symbols = symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    let mut p = single_arena(&symbols, &tflm);
    // A copy of an older, smaller arena's allocator left in what is now the live head.
    let size = 36;
    let (old, old_end) = (ARENA + 0x10, ARENA + 0x90);
    let obj = old_end - size;
    let live: Vec<u8> = {
        let off = (p.allocator - RAM) as usize;
        p.image.bytes[off..off + size as usize].to_vec()
    };
    p.image.put(obj, &live);
    p.image.u32(obj + 8, old);
    p.image.u32(obj + 12, old_end);
    p.image.u32(obj + 16, old);
    p.image.u32(obj + 20, obj);
    p.image.u32(obj + 24, old);
    let mut mem = p.image.snapshot();
    let arenas = read_arenas(&mut mem, &symbols, &tflm, &p.containers).unwrap();
    assert_eq!(arenas.len(), 1, "{arenas:#?}");
    assert_eq!(arenas[0].allocator.address, p.allocator);
    assert!(arenas[0].anomalies.is_empty(), "{:?}", arenas[0].anomalies);
}

#[test]
fn the_split_pair_is_read_through_its_micro_allocator() {
    let symbols = symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    let mut img = Image::new(RAM, 0x8000);
    let pc = tflm
        .arenas
        .iter()
        .find(|a| matches!(a.cursors, Cursors::Persistent { .. }))
        .unwrap();
    let npc = tflm
        .arenas
        .iter()
        .find(|a| matches!(a.cursors, Cursors::NonPersistent { .. }))
        .unwrap();
    let palloc = (P_END - pc.size) & !3;
    let np = palloc - 0x40;
    let ma = np - 0x100;
    let (tail, _) = interpreter_objects(
        &mut img,
        &tflm,
        &symbols,
        ma,
        palloc + pc.persistent_iface,
        np + npc.non_persistent_iface,
        NP_ARENA,
    );
    let pvt = pc.vtable.as_ref().unwrap();
    img.u32(palloc, pvt.address + 8);
    img.u32(palloc + pc.buffer_head, P_ARENA);
    img.u32(palloc + pc.buffer_tail, P_END);
    let Cursors::Persistent { tail_temp } = pc.cursors else {
        unreachable!()
    };
    img.u32(palloc + tail_temp, tail);
    let npvt = npc.vtable.as_ref().unwrap();
    img.u32(np, npvt.address + 8);
    let Cursors::NonPersistent {
        head_temp,
        next_temp,
    } = npc.cursors
    else {
        unreachable!()
    };
    img.u32(np + npc.buffer_head, NP_ARENA);
    img.u32(np + npc.buffer_tail, NP_END);
    img.u32(np + head_temp, NP_ARENA + 0x40);
    img.u32(np + next_temp, NP_ARENA + 0x40);
    let containers = vec![
        heap_block(MODEL - 8, 0x1000),
        heap_block(INTERP - 8, 0x100),
        heap_block(REGS - 8, 0x100),
        heap_block(P_ARENA - 8, P_END - P_ARENA + 8),
        heap_block(NP_ARENA - 8, NP_END - NP_ARENA + 8),
    ];
    let mut mem = img.snapshot();
    let arenas = read_arenas(&mut mem, &symbols, &tflm, &containers).unwrap();
    assert_eq!(arenas.len(), 1, "{arenas:#?}");
    let a = &arenas[0];
    assert_eq!((a.start, a.end), (NP_ARENA, NP_END));
    assert_eq!(a.container.as_ref().unwrap().start, NP_ARENA - 8);
    let pa = a.persistent_arena.as_ref().unwrap();
    assert_eq!((pa.start, pa.end, pa.tail), (P_ARENA, P_END, tail));
    assert_eq!(pa.allocator.address, palloc);
    assert_eq!(a.head_bytes, 0x40);
    assert_eq!(a.persistent_bytes, P_END - tail);
    assert_eq!(a.arena_used_bytes, Some(0x40 + (P_END - tail)));
    assert_eq!(a.free_bytes, (NP_END - NP_ARENA - 0x40) + (tail - P_ARENA));
    assert_eq!(a.interpreter.as_ref().unwrap().address, INTERP);
    let plan = a.plan.as_ref().unwrap();
    assert_eq!(plan.tensors[2].offset, Some(16));
}

#[test]
fn a_damaged_allocator_is_reported_through_its_interpreter() {
    let symbols = symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    let mut p = single_arena(&symbols, &tflm);
    // head_ above tail_: the object fails the arena rules.
    p.image.u32(p.allocator + 16, p.tail + 0x40);
    let mut mem = p.image.snapshot();
    let arenas = read_arenas(&mut mem, &symbols, &tflm, &p.containers).unwrap();
    assert_eq!(arenas.len(), 1, "{arenas:#?}");
    let a = &arenas[0];
    assert_eq!(a.allocator.address, p.allocator);
    assert_eq!(a.interpreter.as_ref().unwrap().address, INTERP);
    assert_eq!((a.arena_used_bytes, a.plan.is_none()), (None, true));
    let kinds: Vec<&str> = a.anomalies.iter().map(|x| x.kind).collect();
    assert_eq!(kinds, ["allocator-damaged"]);
    assert!(
        a.anomalies[0]
            .message
            .contains(&format!("head_ {:#010x}", p.tail + 0x40)),
        "{}",
        a.anomalies[0].message
    );
}

#[test]
fn a_damaged_model_or_tensor_pointer_is_an_anomaly() {
    let symbols = symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    let mut p = single_arena(&symbols, &tflm);
    let tc = tflm.tensor.as_ref().unwrap();
    let tensors = p.micro_allocator - 0x200;
    // hidden's data in the interpreter's block: neither the arena nor the model.
    p.image.u32(tensors + 2 * tc.size + tc.data, INTERP + 0x40);
    let mut mem = p.image.snapshot();
    let arenas = read_arenas(&mut mem, &symbols, &tflm, &p.containers).unwrap();
    let kinds: Vec<&str> = arenas[0].anomalies.iter().map(|x| x.kind).collect();
    assert_eq!(kinds, ["tensor-outside-arena"]);
    assert_eq!(
        arenas[0].plan.as_ref().unwrap().tensors[2].kind,
        TensorKind::Outside
    );
    // model_ at zeros.
    let ic = tflm.interpreter.as_ref().unwrap();
    p.image.u32(INTERP + ic.model, MODEL + 0x800);
    let mut mem = p.image.snapshot();
    let arenas = read_arenas(&mut mem, &symbols, &tflm, &p.containers).unwrap();
    let kinds: Vec<&str> = arenas[0].anomalies.iter().map(|x| x.kind).collect();
    assert_eq!(kinds, ["model-unreadable"]);
    assert!(arenas[0].plan.is_none());
}

#[test]
fn an_arena_in_a_static_array_is_named_by_it() {
    let symbols = symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    let mut p = single_arena(&symbols, &tflm);
    p.containers[1] = Container {
        start: ARENA,
        size: ARENA_END - ARENA,
        kind: ContainerKind::Static {
            name: "tensor_arena".into(),
        },
    };
    let mut mem = p.image.snapshot();
    let arenas = read_arenas(&mut mem, &symbols, &tflm, &p.containers).unwrap();
    let c = arenas[0].container.as_ref().unwrap();
    assert_eq!(c.describe(), "static tensor_arena (4096 bytes)");
    assert_eq!(arenas[0].interpreter.as_ref().unwrap().address, INTERP);
}
