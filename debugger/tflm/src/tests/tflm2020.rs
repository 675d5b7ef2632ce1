//! TFLM of 2020 (tfmicro 0.1.0) from the real firmware's DWARF (firmware/build/tflm-healthy.elf),
//! with RAM images laid out as that TFLM lays them: the allocator in place at the arena's top,
//! the interpreter holding its `MicroAllocator` by value.

use memlife_dwarf::Symbols;

use super::support::{Image, T, tflite_model};
use crate::layout::{Cursors, Generation, Tflm};
use crate::{Container, ContainerKind, TensorKind, read_arenas};

pub fn symbols() -> Symbols {
    Symbols::load(&memlife_testkit::firmware::elf("tflm", "healthy")).unwrap()
}

const RAM: u64 = 0x2000_0000;
const MODEL: u64 = 0x2000_0100;
const ARENA: u64 = 0x2000_2000;
const ARENA_END: u64 = 0x2000_2800;
const INTERP: u64 = 0x2000_4000;
const REGS: u64 = 0x2000_5000;
const FULLY_CONNECTED: u64 = 9;
const SOFTMAX: u64 = 25;

pub struct Placed {
    pub image: Image,
    pub containers: Vec<Container>,
    pub allocator: u64,
    pub tail: u64,
    pub head: u64,
    pub tensors: u64,
}

/// An arena after a successful `AllocateTensors`: input t0 -> FULLY_CONNECTED (weights t1) ->
/// t2 -> SOFTMAX -> t3, one scratch buffer of 32 bytes for operator 0.
pub fn allocated(tflm: &Tflm) -> Placed {
    let mut img = Image::new(RAM, 0x8000);
    let mut p = allocated_in(tflm, &mut img, 0);
    p.image = img;
    p
}

/// [`allocated`]'s objects written into `img`, every address `shift` bytes up.
fn allocated_in(tflm: &Tflm, img: &mut Image, shift: u64) -> Placed {
    let (model_at, arena, arena_end, interp, regs) = (
        MODEL + shift,
        ARENA + shift,
        ARENA_END + shift,
        INTERP + shift,
        REGS + shift,
    );
    let class = &tflm.arenas[0];
    let alloc = (arena_end - class.size) & !3;
    let ic = tflm.interpreter.as_ref().unwrap();
    let ma = tflm.micro_allocator.as_ref().unwrap();
    let tc = tflm.tensor.as_ref().unwrap();
    let nc = tflm.node.as_ref().unwrap();
    let sc = tflm.scratch.as_ref().unwrap();
    // Tail, top down: the allocator, the tensors, the nodes, the scratch handle.
    let tensors = alloc - 4 * tc.size;
    let nodes = tensors - 2 * nc.size;
    let handle = (nodes - sc.size) & !3;
    let tail = handle;
    let head = arena + 0x60;
    let (model, root) = tflite_model(
        &[
            T("input", 9, &[1, 16], false),
            T("weights", 9, &[16, 16], true),
            T("hidden", 9, &[1, 16], false),
            T("probabilities", 9, &[1, 4], false),
        ],
        &[0],
        &[3],
        &[(0, &[0, 1], &[2]), (1, &[2], &[3])],
        &[(FULLY_CONNECTED as i32, None), (SOFTMAX as i32, None)],
    );
    img.put(model_at, &model);
    let Cursors::Single {
        head: h,
        tail: t,
        temp: None,
    } = class.cursors
    else {
        panic!("2020 cursors: {:?}", class.cursors);
    };
    img.u32(alloc + class.buffer_head, arena);
    img.u32(alloc + class.buffer_tail, arena_end);
    img.u32(alloc + h, head);
    img.u32(alloc + t, tail);
    // Planned: input and the scratch at 0..16 and 32..64 (the scratch lives at op 0 only, the
    // input too), hidden at 16, probabilities at 0 (after the input is dead).
    let data = [arena, model_at + 0x40, arena + 16, arena];
    let bytes = [16, 256, 16, 4];
    for i in 0..4 {
        let rec = tensors + i as u64 * tc.size;
        img.u32(rec + tc.data, data[i]);
        img.u32(rec + tc.bytes.unwrap(), bytes[i]);
    }
    img.u32(handle + sc.data, arena + 32);
    img.u32(handle + sc.bytes, 32);
    img.u32(handle + sc.node_idx, 0);
    let (reg0, reg1) = (regs, regs + 0x40);
    img.u32(nodes + nc.registration, reg0);
    img.u32(nodes + nc.size + nc.registration, reg1);
    img.u32(reg0 + nc.builtin_code, FULLY_CONNECTED);
    img.u32(reg1 + nc.builtin_code, SOFTMAX);
    let m = interp + ic.allocator;
    img.u32(interp + ic.model, model_at + root as u64);
    img.u32(m + ma.model.unwrap(), model_at + root as u64);
    img.u32(m + ma.memory_allocator.unwrap(), alloc);
    img.u32(m + ma.context.unwrap(), interp + ic.context.unwrap());
    img.u8(m + ma.active.unwrap(), 0);
    img.u32(m + ma.scratch_handles.unwrap(), handle);
    img.u32(m + ma.scratch_count.unwrap(), 1);
    img.u32(interp + ic.context_tensors.unwrap(), tensors);
    img.u32(interp + ic.context_tensors_size.unwrap(), 4);
    img.u32(interp + ic.node_and_registrations.unwrap(), nodes);
    img.u8(interp + ic.tensors_allocated.unwrap(), 1);
    let block = |start: u64, size: u64| Container {
        start,
        size,
        kind: ContainerKind::HeapBlock,
    };
    Placed {
        image: Image::new(RAM, 0),
        containers: vec![
            block(model_at - 8, 0x1000),
            block(arena - 8, arena_end - arena + 8),
            block(interp - 8, 0x100),
            Container {
                start: regs,
                size: 0x100,
                kind: ContainerKind::Static {
                    name: "registrations".into(),
                },
            },
        ],
        allocator: alloc,
        tail,
        head,
        tensors,
    }
}

#[test]
fn the_2020_classes_are_found_by_name_in_the_firmware() {
    let symbols = symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    assert_eq!(tflm.generation(), Generation::Tflm2020);
    assert_eq!(tflm.arena_classes(), ["tflite::SimpleMemoryAllocator"]);
    // As gdb's `ptype /o` shows them for this build.
    let a = &tflm.arenas[0];
    assert_eq!((a.size, a.buffer_head, a.buffer_tail), (20, 4, 8));
    assert_eq!(
        a.cursors,
        Cursors::Single {
            head: 12,
            tail: 16,
            temp: None
        }
    );
    assert!(a.vtable.is_none());
    let ic = tflm.interpreter.as_ref().unwrap();
    assert!(ic.allocator_by_value);
    assert_eq!(
        (ic.model, ic.allocator, ic.context, ic.size),
        (4, 96, Some(16), 152)
    );
    assert_eq!(
        (
            ic.context_tensors,
            ic.context_tensors_size,
            ic.node_and_registrations
        ),
        (Some(24), Some(16), Some(0))
    );
    let ma = tflm.micro_allocator.as_ref().unwrap();
    assert_eq!(
        (ma.model, ma.memory_allocator, ma.context, ma.active),
        (Some(0), Some(4), Some(12), Some(16))
    );
    let tc = tflm.tensor.as_ref().unwrap();
    assert_eq!(
        (tc.name, tc.size, tc.data, tc.bytes),
        ("TfLiteTensor", 64, 4, Some(24))
    );
    let nc = tflm.node.as_ref().unwrap();
    assert_eq!(
        (nc.size, nc.registration, nc.builtin_code, nc.custom_name),
        (40, 36, 20, 24)
    );
    assert_eq!(tflm.builtin_name(9), "FULLY_CONNECTED");
    assert_eq!(tflm.builtin_name(114), "QUANTIZE");
}

#[test]
fn a_2020_arena_is_read_with_its_interpreter_plan_and_scratch() {
    let symbols = symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    let p = allocated(&tflm);
    let mut mem = p.image.snapshot();
    let arenas = read_arenas(&mut mem, &symbols, &tflm, &p.containers).unwrap();
    assert_eq!(arenas.len(), 1, "{arenas:#?}");
    let a = &arenas[0];
    assert_eq!(a.generation, Generation::Tflm2020);
    assert_eq!(
        (a.allocator.address, a.start, a.end),
        (p.allocator, ARENA, ARENA_END)
    );
    assert_eq!(a.persistent_bytes, ARENA_END - p.tail);
    assert_eq!((a.head_bytes, a.temp_bytes), (0x60, 0));
    assert_eq!(a.free_bytes, p.tail - p.head);
    // MicroAllocator::used_bytes(): not active, so head + tail.
    assert_eq!(a.arena_used_bytes, Some(0x60 + ARENA_END - p.tail));
    assert_eq!(a.micro_allocator, None);
    assert_eq!(a.interpreter.as_ref().unwrap().address, INTERP);
    let plan = a.plan.as_ref().unwrap();
    assert_eq!(plan.tensors[1].kind, TensorKind::ReadOnly);
    assert_eq!(plan.tensors[1].bytes, Some(256));
    let names: Vec<&str> = plan.operators.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["FULLY_CONNECTED", "SOFTMAX"]);
    assert_eq!(plan.scratch.len(), 1);
    assert_eq!(
        (plan.scratch[0].operator, plan.scratch[0].offset),
        (0, Some(32))
    );
    // op 0: input 16 + hidden 16 + scratch 32; op 1: hidden 16 + probabilities 4.
    let live: Vec<u64> = plan.operators.iter().map(|o| o.live_bytes).collect();
    assert_eq!(live, [64, 20]);
    assert_eq!(plan.peak_operator, Some(0));
    assert!(plan.overlaps.is_empty(), "{:?}", plan.overlaps);
    assert!(a.anomalies.is_empty(), "{:?}", a.anomalies);
}

#[test]
fn two_interpreters_at_once_each_get_their_own_arena() {
    let symbols = symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    let mut img = Image::new(RAM, 0x10000);
    let first = allocated_in(&tflm, &mut img, 0);
    let second = allocated_in(&tflm, &mut img, 0x8000);
    let containers: Vec<Container> = first
        .containers
        .iter()
        .chain(&second.containers)
        .cloned()
        .collect();
    let mut mem = img.snapshot();
    let arenas = read_arenas(&mut mem, &symbols, &tflm, &containers).unwrap();
    let seen: Vec<(u64, u64)> = arenas
        .iter()
        .map(|a| (a.allocator.address, a.interpreter.as_ref().unwrap().address))
        .collect();
    assert_eq!(
        seen,
        [
            (first.allocator, INTERP),
            (second.allocator, INTERP + 0x8000)
        ]
    );
    for a in &arenas {
        assert_eq!(a.plan.as_ref().unwrap().operators.len(), 2);
        assert!(a.anomalies.is_empty(), "{:?}", a.anomalies);
    }
}

#[test]
fn used_bytes_is_zero_while_the_allocator_is_active() {
    let symbols = symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    let mut p = allocated(&tflm);
    let ic = tflm.interpreter.as_ref().unwrap();
    let ma = tflm.micro_allocator.as_ref().unwrap();
    p.image.u8(INTERP + ic.allocator + ma.active.unwrap(), 1);
    p.image.u8(INTERP + ic.tensors_allocated.unwrap(), 0);
    let mut mem = p.image.snapshot();
    let arenas = read_arenas(&mut mem, &symbols, &tflm, &p.containers).unwrap();
    assert_eq!(arenas[0].arena_used_bytes, Some(0));
    assert_eq!(
        arenas[0].interpreter.as_ref().unwrap().tensors_allocated,
        Some(false)
    );
    assert!(
        arenas[0].plan.is_none(),
        "no plan before AllocateTensors succeeded"
    );
}

#[test]
fn a_scratch_buffer_over_a_live_tensor_is_an_overlap() {
    let symbols = symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    let mut p = allocated(&tflm);
    let tc = tflm.tensor.as_ref().unwrap();
    // hidden moved onto the scratch buffer, both live at operator 0.
    p.image.u32(p.tensors + 2 * tc.size + tc.data, ARENA + 40);
    let mut mem = p.image.snapshot();
    let arenas = read_arenas(&mut mem, &symbols, &tflm, &p.containers).unwrap();
    let plan = arenas[0].plan.as_ref().unwrap();
    assert_eq!(plan.overlaps_total, 1, "{:?}", plan.overlaps);
    let o = &plan.overlaps[0];
    assert_eq!((o.a.what, o.b.what), ("scratch", "tensor"));
    assert_eq!(o.b.name, "hidden");
    assert_eq!((o.start, o.end), (ARENA + 40, ARENA + 56));
}

#[test]
fn a_2020_allocator_overwritten_is_reported_through_its_interpreter() {
    let symbols = symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    let mut p = allocated(&tflm);
    // Something wrote over the allocator object at the arena's top.
    for w in 0..5 {
        p.image.u32(p.allocator + 4 * w, 0xdead_beef);
    }
    let mut mem = p.image.snapshot();
    let arenas = read_arenas(&mut mem, &symbols, &tflm, &p.containers).unwrap();
    assert_eq!(arenas.len(), 1, "{arenas:#?}");
    assert_eq!(arenas[0].anomalies[0].kind, "allocator-damaged");
    assert_eq!(arenas[0].interpreter.as_ref().unwrap().address, INTERP);
    assert_eq!(arenas[0].allocator.address, p.allocator);
}

#[test]
fn containers_are_blocks_in_use_and_statics_off_the_heap() {
    let symbols = Symbols::load(&memlife_testkit::firmware::elf("tflm", "view")).unwrap();
    let heap = symbols.variable("ucHeap", &[]).unwrap();
    let (start, size) = (heap.address.unwrap(), 98304);
    let block = (start + 0x40, 0x80);
    let all = crate::containers(&symbols, &[block], Some((start, size)));
    assert!(
        all.iter()
            .any(|c| (c.start, c.size, &c.kind) == (block.0, block.1, &ContainerKind::HeapBlock))
    );
    let view = all
        .iter()
        .find(|c| {
            c.kind
                == ContainerKind::Static {
                    name: "g_tflm_view".into(),
                }
        })
        .expect("the firmware's own view is a static worth looking in");
    assert!(view.size >= 16);
    for c in &all {
        if let ContainerKind::Static { name } = &c.kind {
            assert!(c.size >= 16, "{name}");
            assert!(
                c.end() <= start || c.start >= start + size,
                "{name} is on the heap"
            );
        }
    }
}
