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
            .function_at(symbols.function("main").unwrap().entry)
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
    let main = symbols.function("main").unwrap().entry;
    let off = (main - text.address()) as usize;
    assert_eq!(symbols.code(main, 8), Some(&bytes[off..off + 8]));
    let end = text.address() + text.size();
    assert_eq!(symbols.code(end - 2, 2), Some(&bytes[bytes.len() - 2..]));
    assert_eq!(symbols.code(end - 2, 4), None, "past the section");
    assert_eq!(symbols.code(0x2000_0000, 4), None, "RAM is not code");
    assert!(symbols.unwinder().is_some(), "the CFI sections are found");
}

/// Return types come from each function's DWARF: `int` (a phase's status), `void *` (an
/// allocation wrapper), `void`; a name DWARF does not describe has none.
#[test]
fn return_values_are_decoded_by_the_functions_dwarf_return_type() {
    let symbols = Symbols::load(&fixture()).unwrap();
    let shown = |f: &str, r0: u64, r1: u64| symbols.returned(f, r0, r1).map(|r| r.to_string());
    assert_eq!(
        shown("graph_build", 0xFFFF_FFF4, 0x1234).as_deref(),
        Some("-12")
    );
    assert_eq!(shown("mem_alloc", 0, 0).as_deref(), Some("NULL"));
    assert_eq!(
        shown("mem_alloc", 0x2000_0100, 0).as_deref(),
        Some("0x20000100")
    );
    assert_eq!(shown("fw_halted", 7, 7).as_deref(), Some("void"));
    assert_eq!(symbols.return_type("no_such_function"), None);
}

/// C++ functions named as a user names them (qualified, with or without the parameter list)
/// find their return type through their symbol's linkage name: `Status` is an enum, `Setup`
/// returns a pointer, `Teardown` nothing.
#[test]
fn cpp_return_values_are_decoded_by_qualified_name() {
    let symbols = Symbols::load(&memlife_testkit::firmware::elf("cpp", "healthy")).unwrap();
    let shown = |f: &str, r0: u64| symbols.returned(f, r0, 0).map(|r| r.to_string());
    let status = shown("tinyml::Interpreter::AllocateTensors", 0).unwrap();
    let invoke = shown("tinyml::Interpreter::Invoke()", 0).unwrap();
    assert_eq!(status, "kOk (0)");
    assert_eq!(invoke, status, "both return the same Status");
    assert_eq!(shown("app::Setup", 0).as_deref(), Some("NULL"));
    assert_eq!(shown("app::Teardown", 5).as_deref(), Some("void"));
}
