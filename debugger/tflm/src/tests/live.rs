//! What a run-time observer reads, on the real firmware's DWARF (firmware/build/tflm-healthy.elf):
//! the offsets found by name equal those gdb shows (`ptype /o`), and on RAM images: cursors, the
//! node being prepared, operator names, the planner's bytes per buffer, a model named by the
//! ELF symbol its copy came from, and by its shape when no symbol has its bytes.

use memlife_core::Memory;

use super::support::{Image, T, tflite_model};
use super::tflm2020::symbols;
use crate::layout::Tflm;
use crate::live::LiveLayout;

const RAM: u64 = 0x2000_0000;

fn layout() -> (memlife_dwarf::Symbols, LiveLayout) {
    let s = symbols();
    let tflm = Tflm::detect(&s).unwrap();
    let l = LiveLayout::of(&tflm, &s).unwrap();
    (s, l)
}

#[test]
fn the_offsets_are_the_ones_gdb_shows_for_tflm_of_2020() {
    let (_, l) = layout();
    let a = &l.allocator;
    assert_eq!(
        (a.size, a.buffer_head, a.buffer_tail, a.head, a.tail),
        (20, 4, 8, 12, 16)
    );
    let i = &l.interpreter;
    // MicroInterpreter: allocator_ at 96 (memory_allocator_ +4, active_ +16), context_ at 16
    // (RequestScratchBufferInArena +64), context_helper_ at 140 (current_node_idx_ +8).
    assert_eq!(
        (
            i.model,
            i.arena_allocator,
            i.active,
            i.node_index,
            i.scratch_request,
            i.nodes
        ),
        (4, 100, Some(112), Some(148), Some(80), Some(0))
    );
    let p = l.planner.as_ref().unwrap();
    assert_eq!(
        (
            p.max_buffer_count,
            p.buffer_count,
            p.requirements,
            p.buffer_offsets,
            p.offset_size
        ),
        (4, 8, 12, 32, 4)
    );
    assert!(
        l.builtin_names
            .iter()
            .any(|(v, n)| *v == 9 && n == "FULLY_CONNECTED")
    );
}

#[test]
fn cursors_node_stage_operator_and_planner_are_read_by_those_offsets() {
    let (_, l) = layout();
    let mut img = Image::new(RAM, 0x4000);
    // An arena 0x2000_1000..0x2000_1800 with its allocator object at the top.
    let alloc = 0x2000_17ec;
    for (off, v) in [
        (4, 0x2000_1000),
        (8, 0x2000_1800),
        (12, 0x2000_1030),
        (16, 0x2000_1700),
    ] {
        img.u32(alloc + off, v);
    }
    let interp = 0x2000_2000;
    img.u32(interp + 100, alloc);
    img.u32(interp + 148, 2);
    img.u32(interp + 80, 0x0800_1234);
    img.u8(interp + 112, 0);
    // Node 2's registration: builtin code 25 (SOFTMAX), no custom name.
    let nodes = 0x2000_3000;
    let reg = 0x2000_3800;
    img.u32(interp, nodes);
    let node = l.node.as_ref().unwrap();
    img.u32(nodes + 2 * node.size + node.registration, reg);
    img.u32(reg + node.builtin_code, 25);
    let mut snap = img.snapshot();
    let mem: &mut dyn Memory = &mut snap;
    let c = l.cursors(mem, alloc).unwrap();
    assert!(c.consistent() && c.holds_itself(alloc, 20));
    assert!(
        !c.holds_itself(alloc - 0x100, 20),
        "a temporary allocator is not at the top"
    );
    assert_eq!(
        (c.persistent_bytes(), c.head_bytes(), c.free_bytes()),
        (0x100, 0x30, 0x6d0)
    );
    assert_eq!(l.arena_allocator(mem, interp), Some(alloc));
    assert_eq!(l.current_node(mem, interp), Some(2));
    assert_eq!(l.in_prepare(mem, interp), Some(true));
    assert_eq!(l.used_bytes(mem, interp, &c), Some(0x130));
    assert_eq!(l.operator_name(mem, interp, 2).as_deref(), Some("SOFTMAX"));
    assert_eq!(l.operator_name(mem, interp, -1), None);
    // A planner over 10 buffers whose arrays run from +0 to +320: 32 + 4 bytes per buffer.
    let planner = 0x2000_3c00;
    img.u32(planner + 8, 3);
    img.u32(planner + 4, 10);
    img.u32(planner + 12, 0x2000_1030);
    img.u32(planner + 32, 0x2000_1030 + 320);
    let mut snap = img.snapshot();
    let p = l.planner(&mut snap, planner).unwrap();
    assert_eq!((p.buffers, p.max_buffers, p.bytes_per_buffer), (3, 10, 36));
}

#[test]
fn a_model_copied_to_ram_is_named_by_the_symbol_it_came_from_else_by_its_shape() {
    let (s, l) = layout();
    // hello_world's flatbuffer as the firmware keeps it in flash, copied into RAM.
    let sym = s.elf_symbol("g_hello_world_tflite").unwrap();
    let end = s.elf_symbol("g_hello_world_tflite_end").unwrap();
    let len = (end.address - sym.address) as usize;
    let bytes = s
        .rodata(sym.address, len)
        .or_else(|| s.code(sym.address, len))
        .unwrap()
        .to_vec();
    let mut img = Image::new(RAM, 0x4000);
    let copy = RAM + 0x30;
    img.put(copy, &bytes);
    let root = copy + u64::from(u32::from_le_bytes(bytes[0..4].try_into().unwrap()));
    let mut snap = img.snapshot();
    let m = l.model_summary(&mut snap, &s, root).unwrap();
    assert_eq!(m.name, "g_hello_world_tflite");
    assert_eq!(
        m.operators,
        [
            "QUANTIZE",
            "FULLY_CONNECTED",
            "FULLY_CONNECTED",
            "FULLY_CONNECTED",
            "DEQUANTIZE"
        ]
    );
    assert_eq!((m.tensors, m.variables), (12, 0));
    // A model of the test's own: no symbol has its bytes.
    let (fb, root_at) = tflite_model(
        &[T("in", 9, &[1, 4], false), T("out", 9, &[1, 4], false)],
        &[0],
        &[1],
        &[(0, &[0], &[1])],
        &[(25, None)],
    );
    let mut img = Image::new(RAM, 0x4000);
    img.put(RAM + 0x100, &fb);
    let root = RAM + 0x100 + root_at as u64;
    let mut snap = img.snapshot();
    let m = l.model_summary(&mut snap, &s, root).unwrap();
    assert_eq!(m.name, "model (SOFTMAX; 2 tensors)");
}

#[test]
fn current_tflm_has_a_live_layout_in_both_namespaces() {
    for s in [
        super::current::symbols(),
        super::current::symbols_micro_namespace(),
    ] {
        let tflm = Tflm::detect(&s).unwrap();
        let l = LiveLayout::of(&tflm, &s).unwrap();
        assert_eq!(l.generation, crate::Generation::Current);
        // SingleArenaBufferAllocator: two vtable pointers, then the cursors with temp_.
        let a = &l.allocator;
        assert_eq!(
            (a.size, a.buffer_head, a.buffer_tail, a.head, a.tail, a.temp),
            (36, 8, 12, 16, 20, Some(24))
        );
        let i = &l.interpreter;
        // MicroInterpreter: allocator_ (a reference) at 20, graph_ at 24 (current_operator_index_
        // +24, subgraph_allocations_ +16), micro_context_ at 84 (state_ +16).
        assert_eq!(
            (i.model, i.arena_allocator, i.node_index, i.nodes),
            (0, 20, Some(48), Some(40))
        );
        assert_eq!(
            i.micro_allocator,
            Some(crate::live::MicroAllocatorHop {
                persistent: 8,
                interface: 4
            })
        );
        assert_eq!(
            i.state,
            Some(crate::live::StateLayout {
                offset: 100,
                prepare: 1
            })
        );
        assert_eq!(i.subgraph_nodes, Some(0));
        assert_eq!((i.active, i.scratch_request), (None, None));
        let p = l.planner.as_ref().unwrap();
        assert_eq!(
            (
                p.max_buffer_count,
                p.buffer_count,
                p.requirements,
                p.buffer_offsets
            ),
            (4, 8, 12, 36)
        );
    }
}

#[test]
fn current_tflm_is_read_through_its_micro_allocator() {
    let s = super::current::symbols();
    let tflm = Tflm::detect(&s).unwrap();
    let l = LiveLayout::of(&tflm, &s).unwrap();
    const INTERP: u64 = RAM + 0x100;
    const MA: u64 = RAM + 0xf00;
    const ALLOC: u64 = RAM + 0xfd0;
    const SUBGRAPHS: u64 = RAM + 0xe00;
    const NODES: u64 = RAM + 0xd00;
    const REG: u64 = RAM + 0xc00;
    let mut img = Image::new(RAM, 0x1000);
    let w = |img: &mut Image, at: u64, v: u64| img.put(at, &(v as u32).to_le_bytes());
    w(&mut img, INTERP + 20, MA);
    // persistent_buffer_allocator_ points at the IPersistentBufferAllocator subobject (+4).
    w(&mut img, MA + 8, ALLOC + 4);
    for (off, v) in [(8, RAM + 0x400), (12, RAM + 0x1000), (16, RAM + 0x480)] {
        w(&mut img, ALLOC + off, v);
    }
    w(&mut img, ALLOC + 20, RAM + 0xc00);
    w(&mut img, ALLOC + 24, RAM + 0x4c0);
    w(&mut img, INTERP + 48, 1);
    w(&mut img, INTERP + 100, 1);
    w(&mut img, INTERP + 40, SUBGRAPHS);
    w(&mut img, SUBGRAPHS, NODES);
    let node_size = l.node.as_ref().unwrap().size;
    let reg_off = l.node.as_ref().unwrap().registration;
    w(&mut img, NODES + node_size + reg_off, REG);
    w(&mut img, REG + l.node.as_ref().unwrap().builtin_code, 9);
    let mut snap = img.snapshot();
    let a = l.arena_allocator(&mut snap, INTERP).unwrap();
    assert_eq!(a, ALLOC);
    let c = l.cursors(&mut snap, a).unwrap();
    assert!(c.consistent());
    assert_eq!(
        (c.head_bytes(), c.temp_bytes(), c.persistent_bytes()),
        (0x80, 0x40, 0x400)
    );
    assert_eq!(c.free_bytes(), 0xc00 - 0x4c0);
    assert_eq!(l.used_bytes(&mut snap, INTERP, &c), Some(0xc0 + 0x400));
    assert_eq!(l.current_node(&mut snap, INTERP), Some(1));
    assert_eq!(l.in_prepare(&mut snap, INTERP), Some(true));
    assert_eq!(
        l.operator_name(&mut snap, INTERP, 1).as_deref(),
        Some("FULLY_CONNECTED")
    );
}

#[test]
fn members_of_classes_declared_in_another_unit_are_found_in_the_definition() {
    // firmware/tflm-current (our model of current TFLM, -O2, several compile units): main.cpp's
    // unit describes MicroInterpreter with graph_ and micro_context_ of types only declared
    // there. Their members are read from the definitions in micro_model.cpp's unit.
    let s =
        memlife_dwarf::Symbols::load(&memlife_testkit::firmware::elf("tflm", "current")).unwrap();
    let tflm = Tflm::detect(&s).unwrap();
    let l = LiveLayout::of(&tflm, &s).unwrap();
    let i = &l.interpreter;
    // The offsets gdb shows (`ptype /o tflite::micro::MicroInterpreter`).
    assert_eq!((i.nodes, i.node_index), (Some(44), Some(52)));
    assert_eq!(
        i.state.as_ref().map(|s| (s.offset, s.prepare)),
        Some((100, 1))
    );
}
