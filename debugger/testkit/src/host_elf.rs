//! ELFs built for the host with `cc` (which the Rust toolchain needs anyway), for what a 32-bit
//! firmware cannot express: a 64-bit image whose heap globals sit near the top of a 64-bit
//! address space.

use std::path::{Path, PathBuf};
use std::process::Command;

/// heap_4's globals, as a 64-bit image declares them (DWARF included).
const HEAP4_GLOBALS: &str = r#"
#include <stddef.h>
typedef struct A_BLOCK_LINK {
    struct A_BLOCK_LINK *pxNextFreeBlock;
    size_t xBlockSize;
} BlockLink_t;
unsigned char ucHeap[0x2000];
BlockLink_t xStart;
BlockLink_t *pxEnd;
size_t xFreeBytesRemaining;
void _start(void) { for (;;) {} }
"#;

/// `DIR/heap4-high.elf`: a 64-bit ELF with DWARF whose heap_4 globals (`ucHeap`, `xStart`,
/// `pxEnd`, `xFreeBytesRemaining`) all lie within 16 KiB of 2^64, where adding a block size to
/// an address overflows.
pub fn heap4_near_top_of_64_bits(dir: &Path) -> PathBuf {
    let src = dir.join("heap4-high.c");
    let out = dir.join("heap4-high.elf");
    std::fs::write(&src, HEAP4_GLOBALS).unwrap();
    let status = Command::new("cc")
        .args(["-g", "-O0", "-nostdlib", "-static", "-fno-pie", "-no-pie"])
        // .bss (the globals) 16 KiB below 2^64; the linker refuses a section that wraps.
        .arg("-Wl,-Tbss=0xffffffffffffc000")
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .expect("running cc (the host C compiler the Rust toolchain links with)");
    assert!(status.success(), "cc could not build {}", out.display());
    out
}
