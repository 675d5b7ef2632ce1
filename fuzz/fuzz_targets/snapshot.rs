//! `cargo fuzz run snapshot`: see `harness::snapshot`.
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::snapshot(data));
