//! `cargo fuzz run walkers`: every walker (heap_4, newlib-nano, ESP-IDF TLSF) over arbitrary
//! memory images, with the symbols of the committed fixtures (`debugger/heap/testdata`).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

use memlife_core::Snapshot;
use memlife_heap::HeapWalker;

struct Fixture {
    walker: Box<dyn HeapWalker>,
    template: Snapshot,
}

thread_local! {
    // Loaded once per fuzzing thread (libFuzzer runs one).
    static FIXTURES: Vec<Fixture> = load();
}

fn load() -> Vec<Fixture> {
    {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../debugger/heap/testdata");
        [
            "heap4-fragmentation",
            "nano-fragmentation",
            "tlsf-fragmentation",
        ]
        .iter()
        .filter_map(|name| {
            let symbols = memlife_dwarf::Symbols::load(&dir.join(format!("{name}.elf"))).ok()?;
            let walker = memlife_heap::detect(
                &symbols,
                None,
                &memlife_heap::WalkerOptions::default(),
                None,
            )
            .ok()?;
            let template = Snapshot::load(&dir.join(format!("{name}.mlsnap"))).ok()?;
            Some(Fixture { walker, template })
        })
        .collect()
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    FIXTURES.with(|all| {
        if let Some(f) = all.get(usize::from(pick) % all.len().max(1)) {
            harness::walk(f.walker.as_ref(), &f.template, rest);
        }
    });
});
