//! Seeds for the `tflm` and `rtos` targets from real snapshots (`memlife snapshot` at stops on
//! QEMU): each snapshot becomes the input that replays it over the target's fixture, written to
//! DIR under the snapshot's file name. See README.md, "Seeding the corpora".
//!
//! ```text
//! cargo run --example seed -- tflm DIR SNAPSHOT...
//! cargo run --example seed -- rtos-netduinoplus2 DIR SNAPSHOT...
//! cargo run --example seed -- rtos-mps2-an385 DIR SNAPSHOT...
//! ```

#[path = "../harness/mod.rs"]
#[allow(dead_code)]
mod harness;

use std::path::{Path, PathBuf};

use memlife_core::Snapshot;

fn testdata(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../debugger")
        .join(krate)
        .join("testdata")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [target, dir, snapshots @ ..] = args.as_slice() else {
        eprintln!("usage: seed tflm|rtos-netduinoplus2|rtos-mps2-an385 DIR SNAPSHOT...");
        std::process::exit(2);
    };
    let seed: Box<dyn Fn(&Snapshot) -> Vec<u8>> = match target.as_str() {
        "tflm" => {
            let f = harness::tflm_fixture(
                &memlife_testkit::firmware::elf("tflm", "healthy"),
                &testdata("tflm").join("tflm-healthy.mlsnap"),
            );
            Box::new(move |snap| harness::image::image_of(&f.template, snap))
        }
        rtos if rtos.starts_with("rtos-")
            && let Some(index) = harness::RTOS_BOARDS.iter().position(|b| rtos[5..] == **b) =>
        {
            let f = harness::rtos_fixtures(&testdata("rtos")).swap_remove(index);
            Box::new(move |snap| harness::rtos_seed(index as u8, &f, snap))
        }
        other => {
            eprintln!("seed: no target {other}");
            std::process::exit(2);
        }
    };
    std::fs::create_dir_all(dir).expect("the corpus directory");
    for path in snapshots {
        let path = Path::new(path);
        let snap = Snapshot::load(path).unwrap_or_else(|e| {
            eprintln!("seed: {}: {e}", path.display());
            std::process::exit(2);
        });
        let out = Path::new(dir).join(path.file_name().expect("a snapshot file name"));
        std::fs::write(&out, seed(&snap)).expect("the seed written");
        println!("{}", out.display());
    }
}
