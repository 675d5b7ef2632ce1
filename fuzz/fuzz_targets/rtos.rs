//! `cargo fuzz run rtos`: see `harness::rtos`. The fixtures (the RTOS firmware on both ports,
//! each with a snapshot at its first `model_release`, `debugger/rtos/testdata`) are loaded once.
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

thread_local! {
    static FIXTURES: Vec<harness::RtosFixture> = harness::rtos_fixtures(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../debugger/rtos/testdata"),
    );
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| FIXTURES.with(|all| {
    harness::rtos(all, data);
}));
