//! The bounded flatbuffer reader on models written by the test writer, whole, cut short and
//! scrambled.

use memlife_core::Memory;

use super::support::{T, tflite_model};
use crate::flatbuffer::Fb;
use crate::model::{self, Model};
use crate::ram::Ram;

const BASE: u64 = 0x2000_0000;

fn read(mem: &mut dyn Memory, lo: u64, hi: u64, root: u64) -> Option<Model> {
    let symbols = super::current::symbols();
    let mut ram = Ram::new(mem, &symbols);
    let mut fb = Fb::new(&mut ram, lo, hi);
    model::read(&mut fb, root)
}

fn sample() -> (Vec<u8>, usize) {
    tflite_model(
        &[
            T("in", 0, &[1, 3], false),
            T("w", 9, &[3, 3], true),
            T("out", 2, &[], false),
        ],
        &[0],
        &[2],
        &[(0, &[0, 1, -1], &[2])],
        &[(9, None), (32, Some("Custom"))],
    )
}

#[test]
fn a_model_reads_back_field_by_field() {
    let (bytes, root) = sample();
    let len = bytes.len() as u64;
    let mut mem = memlife_testkit::ram::at(BASE, bytes);
    let m = read(&mut mem, BASE, BASE + len, BASE + root as u64).unwrap();
    assert_eq!(m.subgraphs, 1);
    let names: Vec<_> = m.tensors.iter().map(|t| t.name.clone().unwrap()).collect();
    assert_eq!(names, ["in", "w", "out"]);
    assert_eq!(m.tensors[0].bytes(), Some(12), "float32 [1, 3]");
    assert_eq!(m.tensors[1].bytes(), Some(9), "int8 [3, 3]");
    assert_eq!(m.tensors[2].bytes(), Some(4), "an int32 scalar");
    assert!(m.tensors[1].has_data && !m.tensors[0].has_data);
    assert_eq!(
        (m.inputs.as_slice(), m.outputs.as_slice()),
        (&[0][..], &[2][..])
    );
    assert_eq!(m.operators[0].inputs, [0, 1, -1]);
    assert_eq!(m.codes[0].builtin, 9);
    assert_eq!(m.codes[1].custom.as_deref(), Some("Custom"));
    // The root offset at the buffer's start leads to the same table.
    let mut mem = memlife_testkit::ram::at(BASE, sample().0);
    let symbols = super::current::symbols();
    let mut ram = Ram::new(&mut mem, &symbols);
    let mut fb = Fb::new(&mut ram, BASE, BASE + len);
    assert!(fb.root(BASE).is_some());
}

#[test]
fn a_model_cut_short_or_scrambled_reads_as_nothing_or_less() {
    let (bytes, root) = sample();
    for cut in 0..bytes.len() {
        let mut mem = memlife_testkit::ram::at(BASE, bytes[..cut.max(1)].to_vec());
        // Bounds say the buffer is whole: reads past the cut fail as unmapped memory.
        let m = read(
            &mut mem,
            BASE,
            BASE + bytes.len() as u64,
            BASE + root as u64,
        );
        if let Some(m) = m {
            assert!(m.tensors.len() <= 3 && m.operators.len() <= 1);
        }
    }
    memlife_testkit::fuzz::cases(0x7f1b, 300, |_, rng| {
        let mut b = bytes.clone();
        for _ in 0..1 + rng.below(8) {
            let i = rng.below(b.len() as u64) as usize;
            b[i] = rng.byte();
        }
        let len = b.len() as u64;
        let mut mem = memlife_testkit::ram::Counted::new(memlife_testkit::ram::at(BASE, b));
        let _ = read(&mut mem, BASE, BASE + len, BASE + root as u64);
        // Everything needed is in the bounds: nothing is read on demand beyond the pages.
        mem.assert_within(2048, 2 << 20, "scrambled model");
    });
}
