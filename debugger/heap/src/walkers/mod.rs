//! One module per allocator family.
//!
//! Shared rules: addresses come from the ELF (resolved once in `from_symbols`), every loop is
//! bounded by the arena size divided by the smallest block, and every pointer is checked against
//! the arena before it is followed.
//!
//! Arithmetic: the walkers work in `u64` on values that are 32-bit target words (`u32` reads)
//! or the addresses of a 32-bit ELF, adding a bounded number of them, so a plain `+` cannot
//! overflow; every `-` follows a comparison that orders its operands. Values that can be a full
//! `u64` (DWARF offsets and counts, a span at the top of a memory image) use checked or
//! saturating arithmetic instead.

pub mod dlmalloc;
pub mod embedded_alloc;
pub mod freertos;
pub mod nano;
pub mod tlsf;

use memlife_dwarf::Symbols;

pub(crate) use tlsf::caps::{bit as caps_bit, names as caps_names};

use crate::{HeapError, ResolvedSymbol};

/// Address of a required static, or a `MissingSymbol` error naming it.
pub(crate) fn require_static(
    symbols: &Symbols,
    allocator: &'static str,
    name: &str,
    prefer_cu: &[&str],
) -> Result<(u64, Option<u64>), HeapError> {
    symbols
        .static_location(name, prefer_cu)
        .ok_or_else(|| HeapError::MissingSymbol {
            allocator,
            symbol: name.to_string(),
            hint: if symbols.has_dwarf() {
                String::new()
            } else {
                " (the ELF has no DWARF and no such symbol-table entry: build with -g)".to_string()
            },
        })
}

/// Address of an optional static.
pub(crate) fn optional_static(symbols: &Symbols, name: &str, prefer_cu: &[&str]) -> Option<u64> {
    symbols.static_location(name, prefer_cu).map(|(a, _)| a)
}

/// Rounds up to a power-of-two alignment.
pub(crate) fn align_up(v: u64, align: u64) -> u64 {
    v.checked_add(align - 1).map_or(v, |x| x & !(align - 1))
}

/// Rounds down to a power-of-two alignment.
pub(crate) fn align_down(v: u64, align: u64) -> u64 {
    v & !(align - 1)
}

/// Each of `names` the ELF resolves, for `memlife symbols`.
pub(crate) fn resolved_statics<'a>(
    symbols: &Symbols,
    names: impl IntoIterator<Item = &'a str>,
    prefer_cu: &[&str],
) -> Vec<ResolvedSymbol> {
    names
        .into_iter()
        .filter_map(|sym| {
            let (address, size) = symbols.static_location(sym, prefer_cu)?;
            Some(ResolvedSymbol {
                name: sym.to_string(),
                address,
                size: size.unwrap_or(0),
                type_name: type_name(symbols, sym, prefer_cu),
            })
        })
        .collect()
}

/// Type name of a static for `memlife symbols`.
pub(crate) fn type_name(symbols: &Symbols, name: &str, prefer_cu: &[&str]) -> String {
    symbols
        .variable(name, prefer_cu)
        .and_then(|v| v.type_id)
        .map(|t| symbols.types().name_of(t))
        .unwrap_or_else(|| "?".into())
}
