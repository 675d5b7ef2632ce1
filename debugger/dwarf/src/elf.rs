//! The ELF side: one parse of the file gives the symbol table, the function index, the code and
//! writable sections, and the DWARF and CFI sections handed to gimli.
//!
//! The file's bytes are held once, in an `Rc<[u8]>` ([`ElfBytes`]); every section is a range of
//! them (gimli readers over a sub-range, code as a range), so nothing is copied unless the
//! section is compressed (`SHF_COMPRESSED`), which only a decompressed copy can serve.

use std::ops::Range;
use std::rc::Rc;

use object::{Object, ObjectSection, ObjectSymbol, SectionFlags};

use crate::{Result, SymbolError};

/// The gimli reader used throughout: reference-counted section data, shared with the file.
pub type Reader = gimli::EndianRcSlice<gimli::RunTimeEndian>;

/// What an ELF symbol names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SymbolKind {
    /// Code (`STT_FUNC`).
    Function,
    /// Data (`STT_OBJECT`).
    Data,
    /// Anything else with an address (`STT_NOTYPE`, linker symbols such as `_end`).
    Other,
}

/// One symbol-table entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ElfSymbol {
    /// Symbol name.
    pub name: String,
    /// Value (for thumb functions, the thumb bit is still set here).
    pub address: u64,
    /// `st_size`.
    pub size: u64,
    /// Kind.
    pub kind: SymbolKind,
    /// Local (file-static) rather than global.
    pub local: bool,
}

/// The processor an image is built for (`e_machine`), as far as memlife tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Machine {
    /// 32-bit ARM, which includes every Cortex-M (Thumb code).
    Arm,
    /// 64-bit ARM.
    Aarch64,
    /// Xtensa (ESP32, ESP32-S3).
    Xtensa,
    /// 32-bit RISC-V (ESP32-C3, ...).
    Riscv32,
    /// Anything else.
    Other,
}

impl Machine {
    fn from_object(arch: object::Architecture) -> Machine {
        match arch {
            object::Architecture::Arm => Machine::Arm,
            object::Architecture::Aarch64 => Machine::Aarch64,
            object::Architecture::Xtensa => Machine::Xtensa,
            object::Architecture::Riscv32 => Machine::Riscv32,
            _ => Machine::Other,
        }
    }
}

impl std::fmt::Display for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Machine::Arm => "ARM",
            Machine::Aarch64 => "AArch64",
            Machine::Xtensa => "Xtensa",
            Machine::Riscv32 => "RISC-V (32-bit)",
            Machine::Other => "other",
        })
    }
}

/// The bytes of the ELF file, shared by every section reader.
pub(crate) type ElfBytes = Rc<[u8]>;

/// The parsed parts of one image.
pub(crate) struct ElfImage {
    /// The whole file.
    bytes: ElfBytes,
    pub symbols: Vec<ElfSymbol>,
    pub functions: FunctionIndex,
    /// The executable sections: `(address, bytes)`.
    code: Vec<(u64, Section)>,
    /// The read-only data sections (`.rodata`...): `(address, bytes)`.
    rodata: Vec<(u64, Section)>,
    pub writable_sections: Vec<(String, u64, u64)>,
    pub machine: Machine,
    pub endian: gimli::RunTimeEndian,
    pub address_size: u8,
}

/// A section's contents: a range of the file, or a decompressed copy.
#[derive(Clone)]
enum Section {
    InFile(Range<usize>),
    Decompressed(Rc<[u8]>),
}

/// A section found by name, with what gimli needs besides its bytes.
pub(crate) struct NamedSection {
    pub address: u64,
    pub reader: Reader,
}

impl ElfImage {
    /// Parses the file once; `name` is used in error messages.
    pub fn parse<'a>(bytes: &'a ElfBytes, name: &str) -> Result<(ElfImage, object::File<'a>)> {
        let file = object::File::parse(&bytes[..]).map_err(|source| SymbolError::NotElf {
            path: name.to_string(),
            source,
        })?;
        if file.format() != object::BinaryFormat::Elf {
            return Err(SymbolError::OtherFormat {
                path: name.to_string(),
                format: format!("{:?}", file.format()),
            });
        }
        let symbols = symbols(&file);
        let functions = FunctionIndex::new(&symbols);
        let mut writable_sections = Vec::new();
        let mut code = Vec::new();
        let mut rodata = Vec::new();
        for section in file.sections() {
            let SectionFlags::Elf { sh_flags, .. } = section.flags() else {
                continue;
            };
            let bits = sh_flags.0;
            let alloc = bits & object::elf::SHF_ALLOC.0 != 0;
            let write = bits & object::elf::SHF_WRITE.0 != 0;
            let exec = bits & object::elf::SHF_EXECINSTR.0 != 0;
            if alloc
                && exec
                && let Some(data) = contents(&section)
            {
                code.push((section.address(), data));
            }
            if alloc
                && !exec
                && !write
                && let Some(data) = contents(&section)
            {
                rodata.push((section.address(), data));
            }
            if alloc && write && section.size() > 0 {
                writable_sections.push((
                    section.name().unwrap_or("?").to_string(),
                    section.address(),
                    section.size(),
                ));
            }
        }
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let image = ElfImage {
            bytes: Rc::clone(bytes),
            symbols,
            functions,
            code,
            rodata,
            writable_sections,
            machine: Machine::from_object(file.architecture()),
            endian,
            address_size: if file.is_64() { 8 } else { 4 },
        };
        Ok((image, file))
    }

    /// The DWARF sections again, parsed from the bytes held (for the rare lookups that need
    /// a DIE walk after loading: see `location`).
    pub fn dwarf(&self) -> Result<Option<gimli::Dwarf<Reader>>> {
        let file = object::File::parse(&self.bytes[..]).map_err(|source| SymbolError::NotElf {
            path: String::new(),
            source,
        })?;
        load_dwarf(&file, &self.bytes, self.endian, "")
    }

    /// `len` bytes of code at `addr`, from the executable sections.
    pub fn code(&self, addr: u64, len: usize) -> Option<&[u8]> {
        self.bytes_in(&self.code, addr, len)
    }

    /// `len` bytes of constant data at `addr`, from the read-only data sections.
    pub fn rodata(&self, addr: u64, len: usize) -> Option<&[u8]> {
        self.bytes_in(&self.rodata, addr, len)
    }

    /// The read-only data section holding `addr`: its start address and bytes.
    pub fn rodata_section(&self, addr: u64) -> Option<(u64, &[u8])> {
        self.rodata.iter().find_map(|(start, section)| {
            let data: &[u8] = match section {
                Section::InFile(range) => self.bytes.get(range.clone())?,
                Section::Decompressed(data) => data,
            };
            let end = start.checked_add(data.len() as u64)?;
            (addr >= *start && addr < end).then_some((*start, data))
        })
    }

    fn bytes_in<'s>(
        &'s self,
        sections: &'s [(u64, Section)],
        addr: u64,
        len: usize,
    ) -> Option<&'s [u8]> {
        sections.iter().find_map(|(start, section)| {
            let data: &[u8] = match section {
                Section::InFile(range) => self.bytes.get(range.clone())?,
                Section::Decompressed(data) => data,
            };
            let off = usize::try_from(addr.checked_sub(*start)?).ok()?;
            data.get(off..off.checked_add(len)?)
        })
    }
}

/// A reader over the named section, sharing `bytes`; `None` when the section is absent, empty,
/// or cannot be read.
pub(crate) fn section_reader(
    file: &object::File<'_>,
    bytes: &ElfBytes,
    name: &str,
    endian: gimli::RunTimeEndian,
) -> Option<NamedSection> {
    let section = file.section_by_name(name)?;
    let reader = match contents(&section)? {
        Section::InFile(range) if range.is_empty() => return None,
        // A section header may point past the end of a damaged file (found by fuzzing).
        Section::InFile(range) if range.end > bytes.len() => return None,
        Section::InFile(range) => Reader::new(Rc::clone(bytes), endian).range(range),
        Section::Decompressed(data) if data.is_empty() => return None,
        Section::Decompressed(data) => Reader::new(data, endian),
    };
    Some(NamedSection {
        address: section.address(),
        reader,
    })
}

/// Where a section's bytes are: a range of the file when stored as is, else a decompressed
/// copy. `None` for sections without file data (`.bss`) or that cannot be read.
fn contents(section: &object::Section<'_, '_>) -> Option<Section> {
    let stored = section.compressed_file_range().ok()?;
    if stored.format == object::CompressionFormat::None {
        let start = usize::try_from(stored.offset).ok()?;
        let end = start.checked_add(usize::try_from(stored.uncompressed_size).ok()?)?;
        return Some(Section::InFile(start..end));
    }
    let data = section.uncompressed_data().ok()?;
    Some(Section::Decompressed(Rc::from(data.as_ref())))
}

fn symbols(file: &object::File<'_>) -> Vec<ElfSymbol> {
    let mut symbols = Vec::new();
    for sym in file.symbols() {
        let Ok(sym_name) = sym.name() else { continue };
        if sym_name.is_empty() || sym.is_undefined() {
            continue;
        }
        // Mapping symbols ($t, $d) are markers, not names.
        if sym_name.starts_with('$') {
            continue;
        }
        let kind = match sym.kind() {
            object::SymbolKind::Text => SymbolKind::Function,
            object::SymbolKind::Data => SymbolKind::Data,
            object::SymbolKind::Section | object::SymbolKind::File => continue,
            _ => SymbolKind::Other,
        };
        symbols.push(ElfSymbol {
            name: sym_name.to_string(),
            address: sym.address(),
            size: sym.size(),
            kind,
            local: sym.is_local(),
        });
    }
    symbols
}

/// The DWARF sections over the shared bytes; `None` when the image has no `.debug_info`.
pub(crate) fn load_dwarf(
    file: &object::File<'_>,
    bytes: &ElfBytes,
    endian: gimli::RunTimeEndian,
    name: &str,
) -> Result<Option<gimli::Dwarf<Reader>>> {
    if file.section_by_name(".debug_info").is_none() {
        return Ok(None);
    }
    let load = |id: gimli::SectionId| -> std::result::Result<Reader, gimli::Error> {
        Ok(section_reader(file, bytes, id.name(), endian)
            .map_or_else(|| Reader::new(Rc::from(&[][..]), endian), |s| s.reader))
    };
    let dwarf = gimli::Dwarf::load(load).map_err(|source| SymbolError::Dwarf {
        path: name.to_string(),
        source,
    })?;
    Ok(Some(dwarf))
}

/// Function symbols by address range, for "which function holds this pc" in `O(log n)` (an
/// unwind asks it for every frame, a traced malloc for every event).
///
/// A function covers `[start, start + max(size, 1))` with the thumb bit cleared. Ranges may
/// overlap (aliases, a symbol inside another); the answer is then the first such symbol in
/// symbol-table order, as a linear scan would give.
pub(crate) struct FunctionIndex {
    /// `(start, end, symbol index)`, sorted by start.
    ranges: Vec<(u64, u64, usize)>,
    /// `max_end[i]`: the largest end among `ranges[..=i]`, so a backward scan knows when no
    /// earlier range can reach the pc.
    max_end: Vec<u64>,
}

impl FunctionIndex {
    fn new(symbols: &[ElfSymbol]) -> Self {
        let mut ranges: Vec<(u64, u64, usize)> = symbols
            .iter()
            .enumerate()
            .filter(|(_, s)| s.kind == SymbolKind::Function)
            .map(|(i, s)| {
                let start = s.address & !1;
                (start, start.saturating_add(s.size.max(1)), i)
            })
            .collect();
        ranges.sort_unstable();
        let mut max_end = Vec::with_capacity(ranges.len());
        let mut reach = 0;
        for &(_, end, _) in &ranges {
            reach = reach.max(end);
            max_end.push(reach);
        }
        FunctionIndex { ranges, max_end }
    }

    /// The index (into the symbol table) of the function holding `pc`.
    pub fn find(&self, pc: u64) -> Option<usize> {
        // Ranges starting at or before pc are `ranges[..upto]`; walk them backwards until no
        // earlier one reaches pc.
        let upto = self.ranges.partition_point(|&(start, _, _)| start <= pc);
        let mut best: Option<usize> = None;
        for i in (0..upto).rev() {
            if self.max_end[i] <= pc {
                break;
            }
            let (_, end, sym) = self.ranges[i];
            if pc < end {
                best = Some(best.map_or(sym, |b| b.min(sym)));
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn func(name: &str, address: u64, size: u64) -> ElfSymbol {
        ElfSymbol {
            name: name.into(),
            address,
            size,
            kind: SymbolKind::Function,
            local: false,
        }
    }

    /// The reference: what `function_at` did before the index, a scan in table order.
    fn linear(symbols: &[ElfSymbol], pc: u64) -> Option<usize> {
        symbols.iter().position(|s| {
            s.kind == SymbolKind::Function && {
                let start = s.address & !1;
                pc >= start && pc < start + s.size.max(1)
            }
        })
    }

    #[test]
    fn finds_the_function_holding_a_pc() {
        let symbols = vec![
            func("main", 0x0800_0101, 0x20),
            ElfSymbol {
                kind: SymbolKind::Data,
                ..func("table", 0x0800_0120, 0x100)
            },
            func("leaf", 0x0800_0141, 0x4),
            func("marker", 0x0800_0200, 0),
        ];
        let index = FunctionIndex::new(&symbols);
        assert_eq!(index.find(0x0800_0100), Some(0), "thumb bit cleared");
        assert_eq!(index.find(0x0800_011f), Some(0));
        assert_eq!(index.find(0x0800_0120), None, "data is not a function");
        assert_eq!(index.find(0x0800_0143), Some(2));
        assert_eq!(index.find(0x0800_0144), None, "one past the end");
        assert_eq!(
            index.find(0x0800_0200),
            Some(3),
            "a size-0 symbol covers its address"
        );
        assert_eq!(index.find(0x0800_0201), None);
        assert_eq!(index.find(0), None);
        assert_eq!(index.find(u64::MAX), None);
    }

    #[test]
    fn overlapping_symbols_answer_as_the_table_order_does() {
        let symbols = vec![
            func("outer", 0x1000, 0x100),
            func("alias_b", 0x1041, 0x10),
            func("alias_a", 0x1041, 0x10),
            func("after", 0x1100, 0x10),
            func("huge", 0x0, u64::MAX),
        ];
        let index = FunctionIndex::new(&symbols);
        for pc in [
            0, 0xfff, 0x1000, 0x1040, 0x1045, 0x1050, 0x10ff, 0x1100, 0x1110, 0x5000,
        ] {
            assert_eq!(index.find(pc), linear(&symbols, pc), "pc {pc:#x}");
        }
        assert_eq!(
            index.find(0x1045),
            Some(0),
            "outer comes first in the table"
        );
    }

    #[test]
    fn agrees_with_a_linear_scan_on_random_tables() {
        memlife_testkit::fuzz::cases(0x5eed, 200, |_, rng| {
            let symbols: Vec<ElfSymbol> = (0..rng.below(12))
                .map(|i| func(&format!("f{i}"), rng.below(0x200), rng.below(0x40)))
                .collect();
            let index = FunctionIndex::new(&symbols);
            for pc in 0..0x260 {
                assert_eq!(
                    index.find(pc),
                    linear(&symbols, pc),
                    "{symbols:?} pc {pc:#x}"
                );
            }
        });
    }
}
