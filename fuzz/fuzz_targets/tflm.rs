//! `cargo fuzz run tflm`: see `harness::tflm`. The fixture (the TFLM firmware's ELF from
//! `firmware/build`, built first when missing, and a snapshot at its third `app::RunInference`,
//! `debugger/tflm/testdata`) is loaded once.
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

thread_local! {
    static FIXTURE: harness::TflmFixture = harness::tflm_fixture(
        &memlife_testkit::firmware::elf("tflm", "healthy"),
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../debugger/tflm/testdata/tflm-healthy.mlsnap"),
    );
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| FIXTURE.with(|f| {
    harness::tflm(f, data);
}));
