//! One parse of a real firmware ELF (the committed heap walker fixture): the function index and
//! the code bytes agree with what a plain reading of the file gives.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;

use memlife_dwarf::{Machine, SymbolKind, Symbols};
use object::{Object, ObjectSection};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../heap/testdata/heap4-fragmentation.elf")
}

#[test]
fn function_at_agrees_with_a_scan_of_the_symbol_table() {
    let symbols = Symbols::load(&fixture()).unwrap();
    assert_eq!(symbols.machine(), Machine::Arm);
    let functions: Vec<_> = symbols
        .elf_symbols()
        .iter()
        .filter(|s| s.kind == SymbolKind::Function)
        .collect();
    assert!(functions.len() > 40, "{} functions", functions.len());
    let scan = |pc: u64| {
        functions.iter().find(|s| {
            let start = s.address & !1;
            pc >= start && pc < start + s.size.max(1)
        })
    };
    for f in &functions {
        let start = f.address & !1;
        for pc in [
            start.wrapping_sub(1),
            start,
            start + f.size / 2,
            start + f.size,
        ] {
            assert_eq!(
                symbols.function_at(pc).map(|s| &s.name),
                scan(pc).map(|s| &s.name),
                "pc {pc:#x}"
            );
        }
    }
    assert_eq!(
        symbols
            .function_at(symbols.function("main").unwrap().0)
            .map(|s| s.name.as_str()),
        Some("main")
    );
}

#[test]
fn code_is_the_bytes_of_the_executable_sections() {
    let data = std::fs::read(fixture()).unwrap();
    let symbols = Symbols::parse(data.clone(), "fixture").unwrap();
    let file = object::File::parse(&*data).unwrap();
    let text = file.section_by_name(".text").unwrap();
    let bytes = text.data().unwrap();
    let (main, _) = symbols.function("main").unwrap();
    let off = (main - text.address()) as usize;
    assert_eq!(symbols.code(main, 8), Some(&bytes[off..off + 8]));
    let end = text.address() + text.size();
    assert_eq!(symbols.code(end - 2, 2), Some(&bytes[bytes.len() - 2..]));
    assert_eq!(symbols.code(end - 2, 4), None, "past the section");
    assert_eq!(symbols.code(0x2000_0000, 4), None, "RAM is not code");
    assert!(symbols.unwinder().is_some(), "the CFI sections are found");
}
