//! Damaged RAM never panics a reading and never makes it unbounded: random bytes written over
//! the objects of a live arena (both layouts), and RAM that is garbage throughout.

use memlife_testkit::fuzz::{Xorshift, cases};
use memlife_testkit::ram::Counted;

use super::support::Image;
use crate::layout::Tflm;
use crate::{Container, read_arenas};

fn scramble(img: &mut Image, rng: &mut Xorshift, around: &[u64]) {
    for _ in 0..1 + rng.below(24) {
        let at = around[rng.below(around.len() as u64) as usize];
        let off = rng.below(0x200);
        let addr = at.saturating_sub(0x100) + off;
        if addr >= img.base && addr + 4 <= img.base + img.bytes.len() as u64 {
            let v = match rng.below(3) {
                0 => rng.next_u32() as u64,
                // Pointers into the image are the damage that walks furthest.
                1 => img.base + rng.below(img.bytes.len() as u64),
                _ => img.get_u32(img.base + rng.below(img.bytes.len() as u64 - 4)),
            };
            img.u32(addr, v);
        }
    }
}

fn bounded(symbols: &memlife_dwarf::Symbols, tflm: &Tflm, img: &Image, containers: &[Container]) {
    let mut mem = Counted::new(img.snapshot());
    let arenas = read_arenas(&mut mem, symbols, tflm, containers).unwrap();
    assert!(arenas.len() <= crate::MAX_ARENAS);
    for a in arenas
        .iter()
        .filter(|a| a.anomalies.iter().all(|x| x.kind != "allocator-damaged"))
    {
        assert!(a.start < a.end && a.head <= a.temp && a.temp <= a.tail);
        if let Some(p) = &a.plan {
            assert!(p.overlaps.len() <= 100);
            assert!(p.tensors.len() <= crate::model::MAX_ENTRIES as usize);
        }
    }
    // The containers whole, then at most the page budget on demand.
    mem.assert_within(
        1024 + 16,
        img.bytes.len() as u64 + (1 << 20),
        "damaged arena",
    );
}

#[test]
fn damaged_current_arenas_read_without_panic() {
    let symbols = super::current::symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    let placed = super::current::single_arena(&symbols, &tflm);
    cases(0x51a7, 400, |_, rng| {
        let mut img = placed.image.clone();
        scramble(
            &mut img,
            rng,
            &[
                placed.allocator,
                placed.micro_allocator,
                placed.tail,
                0x2000_4000,
                0x2000_0100,
            ],
        );
        bounded(&symbols, &tflm, &img, &placed.containers);
    });
}

#[test]
fn damaged_2020_arenas_read_without_panic() {
    let symbols = super::tflm2020::symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    let placed = super::tflm2020::allocated(&tflm);
    cases(0x2020, 400, |_, rng| {
        let mut img = placed.image.clone();
        scramble(
            &mut img,
            rng,
            &[
                placed.allocator,
                placed.tail,
                placed.tensors,
                0x2000_4000,
                0x2000_0100,
            ],
        );
        bounded(&symbols, &tflm, &img, &placed.containers);
    });
}

#[test]
fn garbage_ram_reads_without_panic() {
    let symbols = super::tflm2020::symbols();
    let tflm = Tflm::detect(&symbols).unwrap();
    cases(0x9a7b, 40, |_, rng| {
        let mut img = Image::new(0x2000_0000, 0x4000);
        for w in (0..0x4000u64).step_by(4) {
            // Small values and pointers into the image, as RAM mostly holds.
            let v = match rng.below(4) {
                0 => rng.next_u32() as u64,
                1 => rng.below(64),
                _ => 0x2000_0000 + rng.below(0x4000),
            };
            img.u32(0x2000_0000 + w, v);
        }
        let containers = vec![Container {
            start: 0x2000_0000,
            size: 0x4000,
            kind: crate::ContainerKind::HeapBlock,
        }];
        bounded(&symbols, &tflm, &img, &containers);
    });
}
