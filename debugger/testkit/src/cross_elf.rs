//! Small Cortex-M ELFs compiled from a test's own C++ with `arm-none-eabi-g++` (the firmware's
//! compiler, so a test without it fails saying so, never skips): layouts as the firmware's
//! compiler lays them out, with DWARF, for readers that must follow classes the firmware does
//! not have.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles `source` (C++17, `-g -O0`, no standard library) into `DIR/NAME.elf` for a
/// Cortex-M4, with `extra` flags (`-gdwarf-4`...). The source must define every function it
/// declares; its globals are kept (`-Wl,--no-gc-sections`), placed by the linker's defaults.
pub fn cxx_elf(dir: &Path, name: &str, source: &str, extra: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.cpp"));
    let elf = dir.join(format!("{name}.elf"));
    std::fs::write(&src, source).unwrap();
    let out = Command::new("arm-none-eabi-g++")
        .args([
            "-mcpu=cortex-m4",
            "-mthumb",
            "-mfloat-abi=soft",
            "-std=c++17",
            "-g",
            "-O0",
            "-fno-rtti",
            "-fno-exceptions",
            "-fno-use-cxa-atexit",
            "-fno-threadsafe-statics",
            "-nostdlib",
            "-Wl,--entry=0",
            "-Wl,--no-warn-rwx-segments",
            "-Wl,--no-gc-sections",
        ])
        .args(extra)
        .arg(&src)
        .arg("-o")
        .arg(&elf)
        .output()
        .expect("running arm-none-eabi-g++ (the firmware's toolchain, see firmware/README.md)");
    assert!(
        out.status.success(),
        "arm-none-eabi-g++ could not build {}:\n{}",
        elf.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    elf
}
