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

/// Where the address space of every supported allocator ends: they all run on 32-bit cores.
pub(crate) const ADDRESS_SPACE_END: u64 = 1 << 32;

/// Refuses `len` bytes at `addr` unless they end by 4 GiB. The walkers add target words to
/// the addresses the ELF gives with plain `+` (see the module doc): that holds only while those
/// addresses are 32-bit, which a 64-bit or damaged ELF does not promise.
pub(crate) fn check_in_32_bits(
    allocator: &'static str,
    what: &str,
    addr: u64,
    len: u64,
) -> Result<(), HeapError> {
    match addr.checked_add(len) {
        Some(end) if end <= ADDRESS_SPACE_END => Ok(()),
        _ => Err(HeapError::Config(format!(
            "{allocator}: {what} at {addr:#x} ({len} bytes) ends above 4 GiB; memlife walks \
             the heaps of 32-bit targets only (a 64-bit or damaged ELF?)"
        ))),
    }
}

/// Address and size of a static, refused (see [`check_in_32_bits`]) when it ends above 4 GiB.
fn static_in_32_bits(
    symbols: &Symbols,
    allocator: &'static str,
    name: &str,
    prefer_cu: &[&str],
) -> Result<Option<(u64, Option<u64>)>, HeapError> {
    let Some((addr, size)) = symbols.static_location(name, prefer_cu) else {
        return Ok(None);
    };
    // A static without a size still has its first word read.
    check_in_32_bits(allocator, &format!("`{name}`"), addr, size.unwrap_or(4))?;
    Ok(Some((addr, size)))
}

/// Address of a required static, or a `MissingSymbol` error naming it (a `Config` error when it
/// lies above 4 GiB).
pub(crate) fn require_static(
    symbols: &Symbols,
    allocator: &'static str,
    name: &str,
    prefer_cu: &[&str],
) -> Result<(u64, Option<u64>), HeapError> {
    static_in_32_bits(symbols, allocator, name, prefer_cu)?.ok_or_else(|| {
        HeapError::MissingSymbol {
            allocator,
            symbol: name.to_string(),
            hint: if symbols.has_dwarf() {
                String::new()
            } else {
                " (the ELF has no DWARF and no such symbol-table entry: build with -g)".to_string()
            },
        }
    })
}

/// Address of an optional static (a `Config` error when it lies above 4 GiB).
pub(crate) fn optional_static(
    symbols: &Symbols,
    allocator: &'static str,
    name: &str,
    prefer_cu: &[&str],
) -> Result<Option<u64>, HeapError> {
    Ok(static_in_32_bits(symbols, allocator, name, prefer_cu)?.map(|(a, _)| a))
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
