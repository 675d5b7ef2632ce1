//! Offsets inside embedded-alloc's heap statics, from DWARF.
//!
//! The wrappers between the static and the allocator differ between crate versions
//! (`critical_section::Mutex` holds an `UnsafeCell` in 1.2 and a `MaybeUninit` elsewhere,
//! `LlffHeap` keeps a tuple `(Heap, bool)` since 0.7), so a layout is found by what a struct
//! holds, not by the path to it: [`find`] searches the embedded (not pointed-to) members for the
//! first struct with the wanted member names and returns its offset.

use memlife_dwarf::{Type, TypeId, TypeTable};

/// How deep [`find`] looks (the wrappers are four or five levels deep).
const MAX_DEPTH: usize = 10;

/// The first struct inside `id` (or `id` itself) that has every member of `names`, with its
/// offset from the start of `id`.
pub fn find(types: &TypeTable, id: TypeId, names: &[&str]) -> Option<(u64, TypeId)> {
    find_depth(types, id, names, 0)
}

fn find_depth(
    types: &TypeTable,
    id: TypeId,
    names: &[&str],
    depth: usize,
) -> Option<(u64, TypeId)> {
    if depth > MAX_DEPTH {
        return None;
    }
    let (id, ty) = types.resolve(id)?;
    let Type::Struct { members, .. } = ty else {
        return None;
    };
    if names
        .iter()
        .all(|n| members.iter().any(|m| m.name.as_deref() == Some(n)))
    {
        return Some((0, id));
    }
    members.iter().find_map(|m| {
        let (off, found) = find_depth(types, m.type_id?, names, depth + 1)?;
        Some((m.offset.checked_add(off)?, found))
    })
}

/// Offset and type of member `name` of struct `id`.
pub fn member(types: &TypeTable, id: TypeId, name: &str) -> Option<(u64, Option<TypeId>)> {
    types.member(id, name).map(|m| (m.offset, m.type_id))
}

/// The offset of the first base value (integer, bool, pointer) inside `id`: where a
/// `Cell<isize>` or an `Option<NonNull<T>>` keeps its one word.
pub fn scalar(types: &TypeTable, id: TypeId) -> Option<u64> {
    scalar_depth(types, id, 0)
}

fn scalar_depth(types: &TypeTable, id: TypeId, depth: usize) -> Option<u64> {
    if depth > MAX_DEPTH {
        return None;
    }
    match types.resolve(id)?.1 {
        Type::Base { .. } | Type::Pointer { .. } | Type::Enum { .. } => Some(0),
        // An `Option<NonNull<T>>` has no members DWARF lists here (they sit in a variant
        // part): its one word is at its start.
        Type::Struct { members, size, .. } if members.is_empty() => {
            size.is_some_and(|s| s > 0).then_some(0)
        }
        Type::Struct { members, .. } => members.iter().find_map(|m| {
            m.offset
                .checked_add(scalar_depth(types, m.type_id?, depth + 1)?)
        }),
        _ => None,
    }
}

/// The element counts of an array member's type, outermost first.
pub fn dims(types: &TypeTable, id: TypeId) -> Option<Vec<u64>> {
    match types.resolve(id)?.1 {
        Type::Array { dims, element } => {
            let mut out: Vec<u64> = dims.iter().map(|d| d.unwrap_or(0)).collect();
            // Rust nests arrays of arrays (`[[T; SLLEN]; FLLEN]`) instead of listing two dims.
            if let Some(inner) = element.and_then(|e| self::dims(types, e)) {
                out.extend(inner);
            }
            Some(out)
        }
        _ => None,
    }
}
