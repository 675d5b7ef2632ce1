//! `cargo fuzz run elf`: see `harness::elf`.
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::elf(data));
