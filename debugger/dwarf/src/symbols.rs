//! [`Symbols`], one firmware image as memlife reads it: loaded once, then asked where a static
//! is, what its type is, where a function starts and which function holds a pc.
//! [`FunctionLookup`] is what a function name stands for. The questions with a module of their
//! own are answered there: where to stop (`location`), the call stack (`unwind`), typed values
//! (`value`).

use std::path::Path;

use crate::cfi::{self, Unwinder};
use crate::elf::{self, ElfSymbol, Machine, SymbolKind};
use crate::error::{Result, SymbolError};
use crate::source::{self, SourceLocation};
use crate::types::TypeId;
use crate::types::TypeTable;
use crate::vars::{self, Variable};
use crate::{demangle, task_exit};

/// Everything memlife knows about one firmware image.
pub struct Symbols {
    pub(crate) elf: elf::ElfImage,
    vars: Vec<Variable>,
    types: TypeTable,
    returns: vars::Returns,
    pub(crate) source: Option<source::SourceIndex>,
    has_dwarf: bool,
    unwinder: Option<Unwinder>,
    /// Entry addresses of the RTOS task-exit traps the image has ([`TASK_EXIT_TRAPS`](crate::unwind::TASK_EXIT_TRAPS)).
    task_exits: Vec<u64>,
    /// Demangled names of the C++ function symbols, with their index in the symbol table.
    demangled: Vec<(usize, String)>,
}

impl std::fmt::Debug for Symbols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbols")
            .field("symbols", &self.elf.symbols.len())
            .field("variables", &self.vars.len())
            .field("types", &self.types.len())
            .field("has_dwarf", &self.has_dwarf)
            .finish()
    }
}

/// Where a function's code lies ([`Symbols::function`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FunctionRange {
    /// Entry address, thumb bit cleared: where a breakpoint on the function goes.
    pub entry: u64,
    /// Size of its code in bytes, as the symbol table gives it.
    pub size: u64,
}

/// What a function name stands for ([`Symbols::function_lookup`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FunctionLookup<'a> {
    /// One function.
    Found(&'a ElfSymbol),
    /// Several functions at different addresses (C++ overloads asked for without their
    /// parameters): their demangled names, for the error to list.
    Ambiguous(Vec<String>),
    /// No function by that name.
    Missing,
}

impl FunctionLookup<'_> {
    /// A sentence for an error about `name` that was not found: the candidates when it is
    /// ambiguous, empty otherwise.
    pub fn ambiguity(&self, name: &str) -> String {
        match self {
            FunctionLookup::Ambiguous(names) => format!(
                "; `{name}` names {} functions, give the parameter list to choose one: {}",
                names.len(),
                names.join(", ")
            ),
            _ => String::new(),
        }
    }
}

impl Symbols {
    /// Loads an ELF file. Fails on a missing file or a non-ELF; an ELF without DWARF loads (with
    /// [`Symbols::has_dwarf`] false) so that symbol-table fallbacks still work.
    pub fn load(path: &Path) -> Result<Self> {
        let data = memlife_core::input::read_regular(path, memlife_core::input::MAX_ELF_BYTES)
            .map_err(|source| SymbolError::Io {
                path: path.display().to_string(),
                source,
            })?;
        Self::parse(data, &path.display().to_string())
    }

    /// Parses ELF bytes; `name` is used in error messages. The file is parsed once and its bytes
    /// are held once: symbols, code, DWARF and CFI all read from them.
    pub fn parse(data: Vec<u8>, name: &str) -> Result<Self> {
        let bytes: elf::ElfBytes = data.into();
        let (elf, file) = elf::ElfImage::parse(&bytes, name)?;
        let dwarf = elf::load_dwarf(&file, &bytes, elf.endian, name)?;
        let has_dwarf = dwarf.is_some();
        let unwinder = cfi::Unwinder::from_object(&file, &bytes, elf.endian, elf.address_size);
        let task_exits = task_exit::task_exit_traps(&elf.symbols);
        let (vars, types, returns, source) = match dwarf {
            Some(dwarf) => {
                let (vars, types, returns) = vars::collect(&dwarf, name)?;
                let source = source::SourceIndex::new(dwarf, name)?;
                (vars, types, returns, Some(source))
            }
            None => (Vec::new(), TypeTable::default(), Default::default(), None),
        };
        let demangled = elf
            .symbols
            .iter()
            .enumerate()
            .filter(|(_, s)| s.kind == SymbolKind::Function)
            .filter_map(|(i, s)| Some((i, demangle::demangle(&s.name)?)))
            .collect();
        Ok(Symbols {
            elf,
            vars,
            types,
            returns,
            source,
            has_dwarf,
            unwinder,
            task_exits,
            demangled,
        })
    }

    /// Whether the image carries DWARF debug information.
    pub fn has_dwarf(&self) -> bool {
        self.has_dwarf
    }

    /// The type table.
    pub fn types(&self) -> &TypeTable {
        &self.types
    }

    /// The return type of the function `name` from DWARF: `None` when DWARF does not describe
    /// that function, `Some(None)` when it returns `void`.
    pub fn return_type(&self, name: &str) -> Option<Option<TypeId>> {
        // A C++ function named as users write it (`tinyml::Interpreter::Invoke()`): through
        // its symbol, whose mangled name DWARF gives as the linkage name.
        let symbol = || self.function_symbol(name).map(|s| s.name.as_str());
        self.returns
            .get(name)
            .or_else(|| self.returns.get(symbol()?))
            .copied()
    }

    /// Every DWARF variable with a static address or a constant value.
    pub fn variables(&self) -> &[Variable] {
        &self.vars
    }

    /// All DWARF variables of this name (several compile units may define one each).
    pub fn variables_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Variable> + 'a {
        self.vars.iter().filter(move |v| v.name == name)
    }

    /// The static or global called `name`. When several compile units define it, the one whose
    /// compile unit file name ends with one of `prefer_cu` wins; without a preference, an external
    /// (global) definition wins, and a name defined only as several file statics is ambiguous and
    /// gives `None` rather than a guess.
    pub fn variable<'a>(&'a self, name: &'a str, prefer_cu: &[&str]) -> Option<&'a Variable> {
        let found: Vec<&Variable> = self
            .variables_named(name)
            .filter(|v| v.address.is_some() || v.const_value.is_some())
            .collect();
        if found.len() <= 1 {
            return found.into_iter().next();
        }
        for suffix in prefer_cu {
            if let Some(v) = found.iter().find(|v| cu_matches(&v.cu, suffix)) {
                return Some(v);
            }
        }
        let external: Vec<&&Variable> = found.iter().filter(|v| v.external).collect();
        if let [only] = external.as_slice() {
            return Some(only);
        }
        // Identical definitions (the same address) are not ambiguous.
        let first = found.first()?;
        if first.address.is_some() && found.iter().all(|v| v.address == first.address) {
            return Some(first);
        }
        None
    }

    /// Address and size of a static, from DWARF or else from the ELF symbol table.
    pub fn static_location(&self, name: &str, prefer_cu: &[&str]) -> Option<(u64, Option<u64>)> {
        if let Some(v) = self.variable(name, prefer_cu)
            && let Some(addr) = v.address
        {
            let size = v.type_id.and_then(|t| self.types.size_of(t));
            return Some((addr, size));
        }
        self.elf_symbol(name)
            .filter(|s| s.kind == SymbolKind::Data || s.kind == SymbolKind::Other)
            .map(|s| (s.address, (s.size > 0).then_some(s.size)))
    }

    /// A constant folded by the compiler (`DW_AT_const_value`), e.g. `xHeapStructSize`.
    pub fn const_value(&self, name: &str, prefer_cu: &[&str]) -> Option<i64> {
        self.variable(name, prefer_cu).and_then(|v| v.const_value)
    }

    /// The first ELF symbol of this name (functions, objects, locals).
    pub fn elf_symbol(&self, name: &str) -> Option<&ElfSymbol> {
        self.elf.symbols.iter().find(|s| s.name == name)
    }

    /// Whether the ELF symbol table or DWARF knows this name.
    pub fn has_symbol(&self, name: &str) -> bool {
        self.elf_symbol(name).is_some() || self.vars.iter().any(|v| v.name == name)
    }

    /// Every ELF symbol.
    pub fn elf_symbols(&self) -> &[ElfSymbol] {
        &self.elf.symbols
    }

    /// Where the function `name` lies: its entry (thumb bit cleared) and its size.
    pub fn function(&self, name: &str) -> Option<FunctionRange> {
        let sym = self.function_symbol(name)?;
        Some(FunctionRange {
            entry: sym.address & !1,
            size: sym.size,
        })
    }

    /// The ELF symbol of a function, by its symbol name or, for C++, its demangled name.
    fn function_symbol(&self, name: &str) -> Option<&ElfSymbol> {
        match self.function_lookup(name) {
            FunctionLookup::Found(sym) => Some(sym),
            FunctionLookup::Ambiguous(_) | FunctionLookup::Missing => None,
        }
    }

    /// What a function name stands for: one function (by its symbol name, or for C++ its
    /// demangled name, aliases collapsed: see `demangle`), several (overloads, listed for the
    /// error), or none.
    pub fn function_lookup(&self, name: &str) -> FunctionLookup<'_> {
        let exact = self
            .elf
            .symbols
            .iter()
            .find(|s| s.name == name && s.kind == SymbolKind::Function);
        if let Some(sym) = exact {
            return FunctionLookup::Found(sym);
        }
        let candidates = self.demangled.iter().filter_map(|(i, n)| {
            let sym = self.elf.symbols.get(*i)?;
            Some(demangle::Candidate {
                index: *i,
                mangled: &sym.name,
                demangled: n,
                address: sym.address & !1,
            })
        });
        match demangle::find(candidates, name) {
            demangle::Lookup::Found(i) => self
                .elf
                .symbols
                .get(i)
                .map_or(FunctionLookup::Missing, FunctionLookup::Found),
            demangle::Lookup::Ambiguous(names) => FunctionLookup::Ambiguous(names),
            demangle::Lookup::Missing => FunctionLookup::Missing,
        }
    }

    /// The demangled names of the C++ functions (for "did you mean" lists).
    pub fn demangled_functions(&self) -> impl Iterator<Item = &str> + Clone {
        self.demangled.iter().map(|(_, n)| n.as_str())
    }

    /// The function symbol containing `pc` (an indexed lookup, not a scan).
    pub fn function_at(&self, pc: u64) -> Option<&ElfSymbol> {
        self.elf
            .functions
            .find(pc)
            .and_then(|i| self.elf.symbols.get(i))
    }

    /// Source location of `pc`: the innermost function (inlined frames first) and file:line.
    pub fn locate(&self, pc: u64) -> Vec<SourceLocation> {
        let mut frames = self.locate_raw(pc);
        // Sites and call chains read C++ names as written in the source.
        for f in &mut frames {
            if let Some(d) = f.function.as_deref().and_then(demangle::demangle) {
                f.function = Some(d);
            }
        }
        frames
    }

    fn locate_raw(&self, pc: u64) -> Vec<SourceLocation> {
        let mut frames = self
            .source
            .as_ref()
            .map(|s| s.locate(pc))
            .unwrap_or_default();
        if frames.is_empty()
            && let Some(sym) = self.function_at(pc)
        {
            frames.push(SourceLocation {
                function: Some(sym.name.clone()),
                file: None,
                line: None,
            });
        }
        frames
    }

    /// Writable memory the image places in RAM (`.data`, `.bss`, other allocated writable
    /// sections) as `(name, address, size)`.
    pub fn writable_sections(&self) -> &[(String, u64, u64)] {
        &self.elf.writable_sections
    }

    /// The call frame information (`.debug_frame`, `.eh_frame`); `None` when the image has none.
    pub fn unwinder(&self) -> Option<&Unwinder> {
        self.unwinder.as_ref()
    }

    /// Where the RTOS task-exit traps of [`TASK_EXIT_TRAPS`](crate::unwind::TASK_EXIT_TRAPS) start (FreeRTOS's
    /// `prvTaskExitError`, the return address a task's entry function is given), thumb bit
    /// cleared; empty when the image has none.
    pub fn task_exit_traps(&self) -> &[u64] {
        &self.task_exits
    }

    /// Bytes of code at `addr` from the ELF's executable sections (what the target runs, without
    /// reading it over the link), or `None` outside them.
    pub fn code(&self, addr: u64, len: usize) -> Option<&[u8]> {
        self.elf.code(addr, len)
    }

    /// Bytes of constant data at `addr` from the ELF's read-only data sections (a `const`
    /// global's value without reading the target), or `None` outside them.
    pub fn rodata(&self, addr: u64, len: usize) -> Option<&[u8]> {
        self.elf.rodata(addr, len)
    }

    /// The read-only data section (`.rodata`...) holding `addr`, as `(start address, bytes)`:
    /// constant data whose length the reader learns as it goes (a model flatbuffer in flash).
    pub fn rodata_section(&self, addr: u64) -> Option<(u64, &[u8])> {
        self.elf.rodata_section(addr)
    }

    /// The processor the image is built for.
    pub fn machine(&self) -> Machine {
        self.elf.machine
    }
}

fn cu_matches(cu: &str, suffix: &str) -> bool {
    let file = cu.rsplit(['/', '\\']).next().unwrap_or(cu);
    file == suffix || cu.ends_with(suffix)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::error::Error as _;

    use super::*;

    #[test]
    fn causes_are_sources_named_once() {
        let e = Symbols::load(std::path::Path::new("/nonexistent/fw.elf")).unwrap_err();
        assert_eq!(e.to_string(), "cannot read /nonexistent/fw.elf");
        assert!(e.source().unwrap().is::<std::io::Error>());

        let e = Symbols::parse(b"#!/bin/sh\necho not an ELF\n".to_vec(), "x.sh").unwrap_err();
        assert_eq!(e.to_string(), "x.sh is not an ELF file");
        assert!(e.source().unwrap().is::<object::read::Error>(), "{e:?}");

        let e = SymbolError::Dwarf {
            path: "fw.elf".into(),
            source: gimli::Error::UnexpectedEof(gimli::ReaderOffsetId(0)),
        };
        assert_eq!(e.to_string(), "fw.elf: damaged DWARF");
        assert!(e.source().unwrap().is::<gimli::Error>());
    }
}
