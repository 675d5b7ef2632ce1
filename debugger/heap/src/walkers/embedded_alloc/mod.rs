//! Rust's `embedded-alloc` (docs/allocators/embedded-alloc.md): `LlffHeap` over
//! linked_list_allocator ([`llff`]) and `TlsfHeap` over rlsf ([`tlsf`]).
//!
//! The heap is the user's `#[global_allocator] static`, whatever its name: it is found by its
//! DWARF type (`embedded_alloc::llff::Heap`, `embedded_alloc::tlsf::Heap`), since its symbol is
//! mangled with a hash. Rust may reorder the fields of every struct involved (only rlsf's block
//! headers are `repr(C)`), so each offset comes from DWARF ([`layout`]).

pub mod layout;
pub mod llff;
#[cfg(test)]
mod tests;
pub mod tlsf;

use memlife_dwarf::Symbols;

use crate::HeapError;

/// The two heap types, by their DWARF names.
pub const LLFF_TYPE: &str = "embedded_alloc::llff::Heap";
/// See [`LLFF_TYPE`].
pub const TLSF_TYPE: &str = "embedded_alloc::tlsf::Heap";

/// The static whose type is `type_name`: its name (as DWARF gives it), address and type. Two
/// statics of the type (two heaps) are walked as neither: the user would not know which one a
/// report shows.
pub(crate) fn heap_static(
    symbols: &Symbols,
    allocator: &'static str,
    type_name: &str,
) -> Result<(String, u64, memlife_dwarf::TypeId), HeapError> {
    let types = symbols.types();
    let mut found = symbols.variables().iter().filter_map(|v| {
        let t = v.type_id?;
        let a = v.address?;
        (types.qualified_name(t).as_deref() == Some(type_name)).then(|| (v.name.clone(), a, t))
    });
    let missing = |hint: &str| HeapError::MissingSymbol {
        allocator,
        symbol: format!("a static of type {type_name}"),
        hint: hint.to_string(),
    };
    let first = found.next().ok_or_else(|| {
        missing(if symbols.has_dwarf() {
            ""
        } else {
            " (the ELF has no DWARF: build with debug = true in the cargo profile)"
        })
    })?;
    if let Some(second) = found.find(|s| s.1 != first.1) {
        return Err(missing(&format!(
            " (two: {} at {:#010x} and {} at {:#010x}; memlife walks one global allocator)",
            first.0, first.1, second.0, second.1
        )));
    }
    Ok(first)
}

/// Whether the ELF has a static of one of the two heap types (detection).
pub(crate) fn has_heap_static(symbols: &Symbols, type_name: &str) -> bool {
    let types = symbols.types();
    symbols.variables().iter().any(|v| {
        v.address.is_some()
            && v.type_id
                .and_then(|t| types.qualified_name(t))
                .is_some_and(|n| n == type_name)
    })
}
