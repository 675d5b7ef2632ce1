//! Where to stop, as a user writes it: a function (`model_release`,
//! `tinyml::Interpreter::~Interpreter`), a source line (`heap_4.c:295`) or an address
//! (`*0x08006460`), as gdb's `break` takes them.
//!
//! - A function is its entry ([`crate::Symbols::function_lookup`]: aliases collapsed,
//!   overloads listed). A function the compiler inlined everywhere has no entry: the error names
//!   every place it was inlined into, with the line and the address to use instead.
//! - A line is every place code for it begins: for each function whose line table has rows
//!   for that file and line, the lowest such address (a line inlined into several functions, or
//!   a template, has several places). A file matches by its whole path or by its last
//!   components (`heap_4.c`, `portable/MemMang/heap_4.c`). A line without code is an error
//!   naming the nearest lines that have some.
//! - An address is taken as it is, the Thumb bit cleared.
//!
//! The DWARF walk for inlined instances runs only on that error path.

use gimli::Reader as _;

use crate::elf::Reader;
use crate::{FunctionLookup, SymbolKind, Symbols};

/// A location as the user wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocationSpec {
    /// A function's entry.
    Function(String),
    /// The code of a source line.
    Line {
        /// The file as written (a base name or a path suffix).
        file: String,
        /// The line.
        line: u32,
    },
    /// An address (`*ADDR`).
    Address(u64),
}

impl LocationSpec {
    /// Reads `*ADDR` (hex with `0x`, or decimal), `FILE:LINE` (the text after the last `:` is
    /// a number and the text before it is not a C++ scope), or else a function name.
    pub fn parse(text: &str) -> Result<LocationSpec, LocationError> {
        let text = text.trim();
        if let Some(addr) = text.strip_prefix('*') {
            let addr = addr.trim();
            let parsed = match addr.strip_prefix("0x").or_else(|| addr.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => addr.parse(),
            };
            return parsed
                .map(|a| LocationSpec::Address(a & !1))
                .map_err(|_| LocationError::BadAddress(addr.to_string()));
        }
        if let Some((file, line)) = text.rsplit_once(':')
            && !file.is_empty()
            && !file.ends_with(':')
            && !line.is_empty()
            && line.bytes().all(|b| b.is_ascii_digit())
        {
            let line = line
                .parse()
                .map_err(|_| LocationError::BadLine(text.to_string()))?;
            return Ok(LocationSpec::Line {
                file: file.to_string(),
                line,
            });
        }
        Ok(LocationSpec::Function(text.to_string()))
    }
}

impl std::fmt::Display for LocationSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LocationSpec::Function(name) => write!(f, "{name}"),
            LocationSpec::Line { file, line } => write!(f, "{file}:{line}"),
            LocationSpec::Address(a) => write!(f, "*{a:#010x}"),
        }
    }
}

/// One place code for a location begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeLocation {
    /// Where to break.
    pub address: u64,
    /// The function that holds it (the outer one for inlined code), when known.
    pub function: Option<String>,
}

/// A function's code inlined into another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlinedInstance {
    /// The function it was inlined into.
    pub into: Option<String>,
    /// Where the call was written (`file:line`).
    pub call_site: Option<String>,
    /// The first address of the inlined code.
    pub address: Option<u64>,
}

impl std::fmt::Display for InlinedInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.into.as_deref().unwrap_or("??"))?;
        if let Some(site) = &self.call_site {
            write!(f, " ({site})")?;
        }
        if let Some(a) = self.address {
            write!(f, " at *{a:#010x}")?;
        }
        Ok(())
    }
}

/// Why a location has no code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LocationError {
    /// No function by that name.
    #[error("function `{name}` is not in the ELF's symbol table{hint}")]
    NoFunction {
        /// The name.
        name: String,
        /// What may help: the candidates of an ambiguous name.
        hint: String,
    },
    /// The function exists only inlined into others.
    #[error(
        "function `{name}` has no code of its own: the compiler inlined it into {}; \
         stop there with --at FILE:LINE or --at *ADDR",
        list(.instances)
    )]
    Inlined {
        /// The name.
        name: String,
        /// Where it was inlined.
        instances: Vec<InlinedInstance>,
    },
    /// No line table row for that file and line.
    #[error("no code for {file}:{line}{hint}")]
    NoCode {
        /// The file as written.
        file: String,
        /// The line.
        line: u32,
        /// The nearest lines with code, or that no file matched.
        hint: String,
    },
    /// `*ADDR` that is not a number.
    #[error("`*{0}` is not an address (hex with 0x, or decimal)")]
    BadAddress(String),
    /// `FILE:LINE` whose line does not fit.
    #[error("`{0}`: the line number is too large")]
    BadLine(String),
    /// The ELF has no DWARF line tables.
    #[error("{0} needs DWARF line tables, and the ELF has none")]
    NoDwarf(String),
}

/// Instances as a sentence's list, at most eight.
fn list(instances: &[InlinedInstance]) -> String {
    let mut parts: Vec<String> = instances.iter().take(8).map(ToString::to_string).collect();
    if instances.len() > 8 {
        parts.push(format!("and {} more places", instances.len() - 8));
    }
    parts.join(", ")
}

/// Whether the path a line table gives is the file the user wrote: equal, or ending with it
/// after a `/`.
fn same_file(path: &str, wanted: &str) -> bool {
    let wanted = wanted.trim_start_matches("./");
    path == wanted
        || path
            .strip_suffix(wanted)
            .is_some_and(|head| head.ends_with('/'))
}

impl Symbols {
    /// Every place a location's code begins (see the module docs).
    pub fn resolve_location(&self, text: &str) -> Result<Vec<CodeLocation>, LocationError> {
        match LocationSpec::parse(text)? {
            LocationSpec::Address(address) => Ok(vec![CodeLocation {
                address,
                function: self.function_at(address).map(|s| s.name.clone()),
            }]),
            LocationSpec::Function(name) => match self.function_lookup(&name) {
                FunctionLookup::Found(sym) => Ok(vec![CodeLocation {
                    address: sym.address & !1,
                    function: Some(sym.name.clone()),
                }]),
                other => {
                    let instances = self.inlined_instances(&name);
                    if instances.is_empty() {
                        Err(LocationError::NoFunction {
                            hint: other.ambiguity(&name),
                            name,
                        })
                    } else {
                        Err(LocationError::Inlined { name, instances })
                    }
                }
            },
            LocationSpec::Line { file, line } => self.line_locations(&file, line),
        }
    }

    /// The places code for `file:line` begins, one per function (see the module docs).
    fn line_locations(&self, file: &str, line: u32) -> Result<Vec<CodeLocation>, LocationError> {
        let Some(source) = &self.source else {
            return Err(LocationError::NoDwarf(format!("{file}:{line}")));
        };
        let mut found: Vec<CodeLocation> = Vec::new();
        let mut lines_in_file: std::collections::BTreeSet<u32> = Default::default();
        let functions = self
            .elf
            .symbols
            .iter()
            .filter(|s| s.kind == SymbolKind::Function && s.size > 0);
        for sym in functions {
            let start = sym.address & !1;
            let mut first: Option<u64> = None;
            for (addr, l, path) in source.rows(start, start.saturating_add(sym.size)) {
                if !same_file(&path, file) {
                    continue;
                }
                lines_in_file.insert(l);
                if l == line {
                    first = Some(first.map_or(addr, |f: u64| f.min(addr)));
                }
            }
            if let Some(address) = first
                && !found.iter().any(|c| c.address == address)
            {
                found.push(CodeLocation {
                    address,
                    function: Some(sym.name.clone()),
                });
            }
        }
        if !found.is_empty() {
            found.sort_by_key(|c| c.address);
            return Ok(found);
        }
        let hint = if lines_in_file.is_empty() {
            format!(": no code of the ELF comes from a file named {file}")
        } else {
            let before = lines_in_file.range(..line).next_back();
            let after = lines_in_file.range(line..).next();
            let near: Vec<String> = before.iter().chain(&after).map(|l| l.to_string()).collect();
            let lines = if near.len() == 1 {
                "line with code is"
            } else {
                "lines with code are"
            };
            format!(
                " (the line has no code of its own); the nearest {lines} {}",
                near.join(" and ")
            )
        };
        Err(LocationError::NoCode {
            file: file.to_string(),
            line,
            hint,
        })
    }

    /// The places a function was inlined into, from the DWARF's inlined-subroutine entries
    /// (read again from the file: only error paths ask).
    pub fn inlined_instances(&self, name: &str) -> Vec<InlinedInstance> {
        // C++ inlined functions carry their plain name (`Invoke`); the user may qualify it.
        let plain = crate::demangle::without_params(name);
        let plain = plain.rsplit("::").next().unwrap_or(plain);
        match self.elf.dwarf() {
            Ok(Some(dwarf)) => inlined_of(&dwarf, plain).unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

/// Most instances listed: the error shows eight, the rest are counted.
const MAX_INSTANCES: usize = 256;

/// Every `DW_TAG_inlined_subroutine` whose origin is named `name`.
fn inlined_of(
    dwarf: &gimli::Dwarf<Reader>,
    name: &str,
) -> Result<Vec<InlinedInstance>, gimli::Error> {
    let mut out = Vec::new();
    let mut headers = dwarf.units();
    while let Some(header) = headers.next()? {
        let unit = dwarf.unit(header)?;
        let mut functions: Vec<(isize, Option<String>)> = Vec::new();
        let mut entries = unit.entries();
        while let Some(entry) = entries.next_dfs()? {
            let depth = entry.depth();
            while functions.last().is_some_and(|(d, _)| *d >= depth) {
                functions.pop();
            }
            match entry.tag() {
                gimli::DW_TAG_subprogram => {
                    functions.push((depth, origin_name(dwarf, &unit, entry)));
                }
                gimli::DW_TAG_inlined_subroutine
                    if origin_name(dwarf, &unit, entry).as_deref() == Some(name) =>
                {
                    out.push(InlinedInstance {
                        into: functions.iter().rev().find_map(|(_, n)| n.clone()),
                        call_site: call_site(dwarf, &unit, entry),
                        address: first_address(dwarf, &unit, entry),
                    });
                    if out.len() >= MAX_INSTANCES {
                        return Ok(out);
                    }
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

/// A DIE's name, through `DW_AT_abstract_origin` and `DW_AT_specification` (within the unit,
/// a few hops at most).
fn origin_name(
    dwarf: &gimli::Dwarf<Reader>,
    unit: &gimli::Unit<Reader>,
    entry: &gimli::DebuggingInformationEntry<Reader>,
) -> Option<String> {
    let mut current = entry.clone();
    for _ in 0..4 {
        if let Some(v) = current.attr_value(gimli::DW_AT_name) {
            let s = dwarf.attr_string(unit, v).ok()?;
            return s.to_string_lossy().ok().map(|s| s.into_owned());
        }
        let next = current
            .attr_value(gimli::DW_AT_abstract_origin)
            .or_else(|| current.attr_value(gimli::DW_AT_specification))?;
        let gimli::AttributeValue::UnitRef(offset) = next else {
            return None;
        };
        current = unit.entry(offset).ok()?;
    }
    None
}

/// `file:line` of an inlined call (`DW_AT_call_file`, `DW_AT_call_line`).
fn call_site(
    dwarf: &gimli::Dwarf<Reader>,
    unit: &gimli::Unit<Reader>,
    entry: &gimli::DebuggingInformationEntry<Reader>,
) -> Option<String> {
    let line = entry.attr_value(gimli::DW_AT_call_line)?.udata_value()?;
    let file = entry
        .attr_value(gimli::DW_AT_call_file)
        .and_then(|v| match v {
            gimli::AttributeValue::FileIndex(i) => Some(i),
            other => other.udata_value(),
        })
        .and_then(|index| {
            let program = unit.line_program.as_ref()?;
            let header = program.header();
            let file = header.file(index)?;
            let name = dwarf.attr_string(unit, file.path_name()).ok()?;
            let name = name.to_string_lossy().ok()?.into_owned();
            Some(name.rsplit('/').next().unwrap_or(&name).to_string())
        });
    Some(match file {
        Some(f) => format!("{f}:{line}"),
        None => format!("line {line}"),
    })
}

/// The first address of an inlined instance: `DW_AT_low_pc`, or the lowest of its ranges.
fn first_address(
    dwarf: &gimli::Dwarf<Reader>,
    unit: &gimli::Unit<Reader>,
    entry: &gimli::DebuggingInformationEntry<Reader>,
) -> Option<u64> {
    let mut ranges = dwarf.die_ranges(unit, entry).ok()?;
    let mut lowest: Option<u64> = None;
    while let Ok(Some(r)) = ranges.next() {
        if r.end > r.begin {
            lowest = Some(lowest.map_or(r.begin, |l| l.min(r.begin)));
        }
    }
    lowest
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn specs_are_read_as_gdb_reads_them() {
        assert_eq!(
            LocationSpec::parse("*0x08006461").unwrap(),
            LocationSpec::Address(0x0800_6460)
        );
        assert_eq!(
            LocationSpec::parse("*25696").unwrap(),
            LocationSpec::Address(25696)
        );
        assert_eq!(
            LocationSpec::parse("heap_4.c:295").unwrap(),
            LocationSpec::Line {
                file: "heap_4.c".into(),
                line: 295
            }
        );
        assert_eq!(
            LocationSpec::parse("portable/MemMang/heap_4.c:12").unwrap(),
            LocationSpec::Line {
                file: "portable/MemMang/heap_4.c".into(),
                line: 12
            }
        );
        for f in [
            "model_release",
            "tinyml::Interpreter::~Interpreter()",
            "a::b",
            "x:",
        ] {
            assert_eq!(
                LocationSpec::parse(f).unwrap(),
                LocationSpec::Function(f.into()),
                "{f}"
            );
        }
        assert_eq!(
            LocationSpec::parse("*0xzz"),
            Err(LocationError::BadAddress("0xzz".into()))
        );
        assert!(matches!(
            LocationSpec::parse("a.c:99999999999"),
            Err(LocationError::BadLine(_))
        ));
    }

    #[test]
    fn files_match_by_path_or_its_last_components() {
        assert!(same_file(
            "/src/FreeRTOS/portable/MemMang/heap_4.c",
            "heap_4.c"
        ));
        assert!(same_file(
            "/src/FreeRTOS/portable/MemMang/heap_4.c",
            "MemMang/heap_4.c"
        ));
        assert!(same_file("src/heap4.c", "./src/heap4.c"));
        assert!(!same_file("/src/my_heap_4.c", "heap_4.c"));
    }

    #[test]
    fn inlined_lists_are_cut_at_eight() {
        let i = InlinedInstance {
            into: Some("f".into()),
            call_site: Some("a.c:3".into()),
            address: Some(0x100),
        };
        assert_eq!(i.to_string(), "f (a.c:3) at *0x00000100");
        let text = list(&vec![i; 10]);
        assert!(text.ends_with("and 2 more places"), "{text}");
    }
}
