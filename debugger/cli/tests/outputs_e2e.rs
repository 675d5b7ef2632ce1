//! The files memlife writes: never through a link planted beside them, never out of `--out`.
//! Offline targets (the committed heap fixtures) keep these fast.

#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn fixture(ext: &str) -> PathBuf {
    repo().join(format!("debugger/heap/testdata/heap4-fragmentation.{ext}"))
}

/// Plants links to `victim` at every temporary name an earlier memlife used for `path`.
fn plant_links(path: &Path, victim: &Path) -> Vec<PathBuf> {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let dir = path.parent().unwrap();
    let planted = vec![
        dir.join(format!("{name}.tmp~")),
        path.with_extension("tmp~"),
    ];
    for p in &planted {
        std::os::unix::fs::symlink(victim, p).unwrap();
    }
    planted
}

#[test]
fn snapshot_and_svg_outputs_do_not_write_through_planted_links() {
    let dir = tempdir("outputs-planted");
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let snap = dir.join("out.mlsnap");
    let svg = dir.join("map.svg");
    let mut planted = plant_links(&snap, &victim);
    planted.extend(plant_links(&svg, &victim));
    let elf = fixture("elf");
    let out = run_memlife(&[
        "snapshot",
        "--elf",
        elf.to_str().unwrap(),
        "--snapshot",
        fixture("mlsnap").to_str().unwrap(),
        "-o",
        snap.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run_memlife(&[
        "heap",
        "--elf",
        elf.to_str().unwrap(),
        "--snapshot",
        fixture("mlsnap").to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(std::fs::read(&snap).unwrap().starts_with(b"MLSNAP"));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    for p in &planted {
        assert!(p.is_symlink(), "{} is still the planted link", p.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
