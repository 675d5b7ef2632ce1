//! `cargo fuzz run server_packets`: see `harness::server_packets`. One bridge over a live fake
//! target on the heap_4 fixture serves every input (each a client's session, or several), so
//! the bridge's state carries from one input to the next, as from one gdb client to the next.
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

use std::cell::RefCell;
use std::path::{Path, PathBuf};

thread_local! {
    static BRIDGE: RefCell<harness::LiveBridge> = RefCell::new({
        let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("../debugger/heap/testdata");
        let dir: PathBuf = std::env::temp_dir().join(format!("memlife-fuzz-packets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        harness::live_bridge(
            &testdata.join("heap4-fragmentation.elf"),
            &testdata.join("heap4-fragmentation.mlsnap"),
            &dir,
        )
    });
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| BRIDGE.with(|b| {
    harness::server_packets(&mut b.borrow_mut(), data);
}));
