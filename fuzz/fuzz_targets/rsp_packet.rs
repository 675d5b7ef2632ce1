//! `cargo fuzz run rsp_packet`: see `harness::rsp_packet`.
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::rsp_packet(data));
