//! Puts memory.x where the linker finds it and turns the build's ITERATIONS into a constant:
//! builds without feature `iterations` loop forever for a debugger; with it they run
//! `FW_ITERATIONS` (environment, set by ../rust.mk) lifecycles and exit through semihosting.
//! Only the `iterations` build reads the variable, so cargo keeps both builds cached side by
//! side in one target directory instead of rebuilding whenever the variable changes.
use std::{env, fs, path::PathBuf};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::copy("memory.x", out.join("memory.x")).expect("copy memory.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
    let iterations = if env::var_os("CARGO_FEATURE_ITERATIONS").is_some() {
        println!("cargo:rerun-if-env-changed=FW_ITERATIONS");
        let n = env::var("FW_ITERATIONS").expect("feature `iterations` needs FW_ITERATIONS=N");
        let n: u32 = n.parse().expect("FW_ITERATIONS is a number");
        format!("Some({n})")
    } else {
        "None".to_string()
    };
    fs::write(
        out.join("iterations.rs"),
        format!("pub const ITERATIONS: Option<u32> = {iterations};\n"),
    )
    .expect("write iterations.rs");
}
