//! The ELF side: symbol table, writable sections, and the DWARF sections handed to gimli.

use std::borrow::Cow;
use std::rc::Rc;

use object::{Object, ObjectSection, ObjectSymbol, SectionFlags};

use crate::{Result, SymbolError};

/// The gimli reader used throughout: owned, reference-counted section data.
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

pub(crate) struct ElfImage {
    pub symbols: Vec<ElfSymbol>,
    /// Contents of the executable sections: `(address, bytes)`.
    pub code: Vec<(u64, Vec<u8>)>,
    pub writable_sections: Vec<(String, u64, u64)>,
    pub machine: String,
}

impl ElfImage {
    pub fn parse(data: &[u8], name: &str) -> Result<Self> {
        let file = object::File::parse(data).map_err(|e| not_elf(name, e.to_string()))?;
        if file.format() != object::BinaryFormat::Elf {
            return Err(not_elf(name, format!("{:?} format", file.format())));
        }
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
        let mut writable_sections = Vec::new();
        let mut code = Vec::new();
        for section in file.sections() {
            let SectionFlags::Elf { sh_flags, .. } = section.flags() else {
                continue;
            };
            let bits = sh_flags.0;
            let alloc = bits & object::elf::SHF_ALLOC.0 != 0;
            let write = bits & object::elf::SHF_WRITE.0 != 0;
            let exec = bits & object::elf::SHF_EXECINSTR.0 != 0;
            if alloc && exec {
                if let Ok(data) = section.data() {
                    code.push((section.address(), data.to_vec()));
                }
            }
            if alloc && write && section.size() > 0 {
                writable_sections.push((
                    section.name().unwrap_or("?").to_string(),
                    section.address(),
                    section.size(),
                ));
            }
        }
        Ok(ElfImage {
            symbols,
            code,
            writable_sections,
            machine: format!("{:?}", file.architecture()),
        })
    }
}

fn not_elf(path: &str, reason: String) -> SymbolError {
    SymbolError::NotElf {
        path: path.to_string(),
        reason,
    }
}

/// Loads the DWARF sections; `None` when the image has no `.debug_info`.
pub(crate) fn load_dwarf(data: &[u8], name: &str) -> Result<Option<gimli::Dwarf<Reader>>> {
    let file = object::File::parse(data).map_err(|e| not_elf(name, e.to_string()))?;
    if file.section_by_name(".debug_info").is_none() {
        return Ok(None);
    }
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let load = |id: gimli::SectionId| -> std::result::Result<Reader, gimli::Error> {
        let bytes: Cow<'_, [u8]> = file
            .section_by_name(id.name())
            .and_then(|s| s.uncompressed_data().ok())
            .unwrap_or(Cow::Borrowed(&[]));
        Ok(Reader::new(Rc::from(bytes.as_ref()), endian))
    };
    let dwarf = gimli::Dwarf::load(load).map_err(|e| SymbolError::Dwarf {
        path: name.to_string(),
        reason: e.to_string(),
    })?;
    Ok(Some(dwarf))
}
