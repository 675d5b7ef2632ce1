//! The type table: enough of DWARF's type graph to lay out structs and to read typed values.

use std::collections::HashMap;

/// A type, by its offset in `.debug_info` (unique across compile units).
pub type TypeId = u64;

/// How a base type's bits are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseEncoding {
    /// Two's complement.
    Signed,
    /// Unsigned.
    Unsigned,
    /// Boolean.
    Bool,
    /// IEEE float.
    Float,
    /// Anything else.
    Other,
}

/// A struct or union member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Member name (`None` for anonymous members).
    pub name: Option<String>,
    /// Byte offset from the start of the struct.
    pub offset: u64,
    /// Member type.
    pub type_id: Option<TypeId>,
    /// Width for bit fields.
    pub bit_size: Option<u64>,
    /// Offset in bits from `offset` for bit fields (DWARF 4 `DW_AT_data_bit_offset` semantics).
    pub bit_offset: Option<u64>,
}

/// One DWARF type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Type {
    /// `int`, `unsigned char`, `float`...
    Base {
        /// Name.
        name: String,
        /// Size in bytes.
        size: u64,
        /// Encoding.
        encoding: BaseEncoding,
    },
    /// Pointer (or reference).
    Pointer {
        /// Pointee.
        target: Option<TypeId>,
        /// Pointer size in bytes (4 when DWARF does not say).
        size: u64,
    },
    /// Struct, class or union.
    Struct {
        /// Tag name (`A_BLOCK_LINK`), if any.
        name: Option<String>,
        /// Size in bytes (`None` for a declaration).
        size: Option<u64>,
        /// Members in declaration order.
        members: Vec<Member>,
        /// A union rather than a struct.
        is_union: bool,
    },
    /// Array; `dims` outermost first, `None` for an unknown bound.
    Array {
        /// Element type.
        element: Option<TypeId>,
        /// Element counts per dimension.
        dims: Vec<Option<u64>>,
    },
    /// Enumeration.
    Enum {
        /// Name.
        name: Option<String>,
        /// Size in bytes.
        size: u64,
        /// Enumerators.
        variants: Vec<(String, i64)>,
    },
    /// `typedef`.
    Typedef {
        /// Name.
        name: String,
        /// Aliased type.
        target: Option<TypeId>,
    },
    /// `const`, `volatile`, `restrict`, `_Atomic`.
    Qualified {
        /// Qualified type (`None` = `void`).
        target: Option<TypeId>,
    },
    /// Function type.
    Function,
}

/// A C++ base class of a struct or class (`DW_TAG_inheritance`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Base {
    /// The base class.
    pub type_id: Option<TypeId>,
    /// Byte offset of the base's subobject in the derived object; `None` for a virtual base,
    /// whose place is only known at run time.
    pub offset: Option<u64>,
}

/// All types of an image.
#[derive(Debug, Default)]
pub struct TypeTable {
    types: HashMap<TypeId, Type>,
    /// Full names of the structs declared inside a namespace or Rust module
    /// (`embedded_alloc::llff::Heap`; `Type::Struct::name` is only `Heap`).
    qualified: HashMap<TypeId, String>,
    /// C++ base classes by derived class, in declaration order. Kept beside the types so that
    /// a struct's members stay its own (a C reader never meets a base).
    bases: HashMap<TypeId, Vec<Base>>,
}

/// Typedef chains longer than this are treated as broken (a cycle in damaged DWARF).
const MAX_CHAIN: usize = 64;

impl TypeTable {
    pub(crate) fn insert(&mut self, id: TypeId, ty: Type) {
        self.types.insert(id, ty);
    }

    pub(crate) fn set_scope(&mut self, id: TypeId, qualified: String) {
        self.qualified.insert(id, qualified);
    }

    pub(crate) fn add_base(&mut self, derived: TypeId, base: Base) {
        self.bases.entry(derived).or_default().push(base);
    }

    /// The C++ base classes of the struct `id` (through typedefs), in declaration order; empty
    /// for a C struct.
    pub fn bases(&self, id: TypeId) -> &[Base] {
        self.resolve(id)
            .and_then(|(id, _)| self.bases.get(&id))
            .map_or(&[], Vec::as_slice)
    }

    /// A data member of the class `id` by name, its own or inherited (C++ base classes,
    /// searched depth first in declaration order after the class's own members), with its
    /// offset from the start of `id`. Members behind a virtual base are not found: their place
    /// is only known at run time.
    pub fn find_member(&self, id: TypeId, name: &str) -> Option<(u64, &Member)> {
        self.find_member_depth(id, name, 0)
    }

    fn find_member_depth(&self, id: TypeId, name: &str, depth: usize) -> Option<(u64, &Member)> {
        if depth > MAX_CHAIN {
            return None;
        }
        if let Some(m) = self.member(id, name) {
            return Some((m.offset, m));
        }
        self.bases(id).iter().find_map(|b| {
            let (off, m) = self.find_member_depth(b.type_id?, name, depth + 1)?;
            Some((b.offset?.checked_add(off)?, m))
        })
    }

    /// The offset of the base class subobject named `base` (tag name, or full name with its
    /// namespaces) inside the class `id`, searched through every level of inheritance; `Some(0)`
    /// when `id` is that class itself.
    pub fn base_offset(&self, id: TypeId, base: &str) -> Option<u64> {
        self.base_offset_depth(id, base, 0)
    }

    fn base_offset_depth(&self, id: TypeId, base: &str, depth: usize) -> Option<u64> {
        if depth > MAX_CHAIN {
            return None;
        }
        let (rid, _) = self.resolve(id)?;
        if self.is_named(rid, base) || self.qualified.get(&rid).is_some_and(|q| q == base) {
            return Some(0);
        }
        self.bases(rid).iter().find_map(|b| {
            let inner = self.base_offset_depth(b.type_id?, base, depth + 1)?;
            b.offset?.checked_add(inner)
        })
    }

    /// The full name of a struct declared in a namespace or module (`embedded_alloc::llff::Heap`),
    /// through typedefs and qualifiers; its plain tag name when it has no scope.
    pub fn qualified_name(&self, id: TypeId) -> Option<String> {
        let (id, ty) = self.resolve(id)?;
        if let Some(q) = self.qualified.get(&id) {
            return Some(q.clone());
        }
        match ty {
            Type::Struct { name, .. } => name.clone(),
            _ => None,
        }
    }

    /// A complete struct by its full name (`core::alloc::layout::Layout`); the lowest offset
    /// when several compile units define it.
    pub fn find_qualified(&self, name: &str) -> Option<TypeId> {
        self.qualified
            .iter()
            .filter(|(id, q)| {
                *q == name && matches!(self.types.get(id), Some(Type::Struct { size: Some(_), .. }))
            })
            .map(|(id, _)| *id)
            .min()
    }

    /// Number of types.
    pub fn len(&self) -> usize {
        self.types.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// The type with this id.
    pub fn get(&self, id: TypeId) -> Option<&Type> {
        self.types.get(&id)
    }

    /// Follows typedefs and qualifiers to the underlying type.
    pub fn resolve(&self, id: TypeId) -> Option<(TypeId, &Type)> {
        let mut id = id;
        for _ in 0..MAX_CHAIN {
            match self.types.get(&id)? {
                Type::Typedef { target, .. } | Type::Qualified { target } => id = (*target)?,
                ty => return Some((id, ty)),
            }
        }
        None
    }

    /// Size in bytes of a type.
    pub fn size_of(&self, id: TypeId) -> Option<u64> {
        self.size_of_depth(id, 0)
    }

    fn size_of_depth(&self, id: TypeId, depth: usize) -> Option<u64> {
        if depth > MAX_CHAIN {
            return None;
        }
        match self.resolve(id)?.1 {
            Type::Base { size, .. } | Type::Pointer { size, .. } | Type::Enum { size, .. } => {
                Some(*size)
            }
            Type::Struct { size, .. } => *size,
            Type::Array { element, dims } => {
                let elem = self.size_of_depth((*element)?, depth + 1)?;
                dims.iter()
                    .try_fold(elem, |acc, d| d.and_then(|d| acc.checked_mul(d)))
            }
            Type::Typedef { .. } | Type::Qualified { .. } | Type::Function => None,
        }
    }

    /// A readable name for a type (`BlockLink_t`, `uint8_t[98304]`, `struct A_BLOCK_LINK *`).
    pub fn name_of(&self, id: TypeId) -> String {
        self.name_depth(Some(id), 0)
    }

    fn name_depth(&self, id: Option<TypeId>, depth: usize) -> String {
        if depth > MAX_CHAIN {
            return "?".into();
        }
        let Some(id) = id else { return "void".into() };
        match self.types.get(&id) {
            None => "?".into(),
            Some(Type::Base { name, .. }) | Some(Type::Typedef { name, .. }) => name.clone(),
            Some(Type::Pointer { target, .. }) => {
                format!("{} *", self.name_depth(*target, depth + 1))
            }
            Some(Type::Struct { name, is_union, .. }) => format!(
                "{} {}",
                if *is_union { "union" } else { "struct" },
                name.as_deref().unwrap_or("<anonymous>")
            ),
            Some(Type::Array { element, dims }) => {
                let mut s = self.name_depth(*element, depth + 1);
                for d in dims {
                    match d {
                        Some(n) => s.push_str(&format!("[{n}]")),
                        None => s.push_str("[]"),
                    }
                }
                s
            }
            Some(Type::Enum { name, .. }) => {
                format!("enum {}", name.as_deref().unwrap_or("<anonymous>"))
            }
            Some(Type::Qualified { target }) => self.name_depth(*target, depth + 1),
            Some(Type::Function) => "function".into(),
        }
    }

    /// A member of the struct `id` (through typedefs), by name.
    pub fn member(&self, id: TypeId, name: &str) -> Option<&Member> {
        match self.resolve(id)?.1 {
            Type::Struct { members, .. } => {
                members.iter().find(|m| m.name.as_deref() == Some(name))
            }
            _ => None,
        }
    }

    /// Whether `id` is the type called `name`: a typedef of that name anywhere along its
    /// typedef/qualifier chain, or a struct, union or enum with that tag at its end. Types are
    /// compared by name because every compile unit has its own copy of a shared type (a
    /// variable of `main.c` has `main.c`'s `HeapRegion_t`, not `heap_5.c`'s).
    pub fn is_named(&self, id: TypeId, name: &str) -> bool {
        let mut id = id;
        for _ in 0..MAX_CHAIN {
            match self.types.get(&id) {
                Some(Type::Typedef { name: n, .. }) if n == name => return true,
                Some(Type::Typedef { target, .. }) | Some(Type::Qualified { target }) => {
                    match target {
                        Some(t) => id = *t,
                        None => return false,
                    }
                }
                Some(Type::Struct { name: Some(n), .. })
                | Some(Type::Enum { name: Some(n), .. }) => {
                    return n == name;
                }
                _ => return false,
            }
        }
        false
    }

    /// An enumeration by tag or typedef name (`BuiltinOperator`), the one with the most
    /// enumerators when several compile units differ (a declaration has none); returns the id of
    /// the enumeration itself.
    pub fn find_enum(&self, name: &str) -> Option<TypeId> {
        self.types
            .iter()
            .filter_map(|(id, ty)| match ty {
                Type::Enum {
                    name: Some(n),
                    variants,
                    ..
                } if n == name => Some((*id, variants.len())),
                Type::Typedef {
                    name: n,
                    target: Some(t),
                } if n == name => match self.resolve(*t) {
                    Some((eid, Type::Enum { variants, .. })) => Some((eid, variants.len())),
                    _ => None,
                },
                _ => None,
            })
            // Deterministic: the most enumerators, then the lowest offset.
            .max_by_key(|(id, n)| (*n, std::cmp::Reverse(*id)))
            .map(|(id, _)| id)
    }

    /// Finds a struct (or a typedef of one) by tag or typedef name, preferring a complete
    /// definition; returns the id of the struct itself.
    pub fn find_struct(&self, name: &str) -> Option<TypeId> {
        let mut best: Option<TypeId> = None;
        for (id, ty) in &self.types {
            let candidate = match ty {
                Type::Struct {
                    name: Some(n),
                    size: Some(_),
                    ..
                } if n == name => Some(*id),
                Type::Typedef {
                    name: n,
                    target: Some(t),
                } if n == name => match self.resolve(*t) {
                    Some((sid, Type::Struct { size: Some(_), .. })) => Some(sid),
                    _ => None,
                },
                _ => None,
            };
            if let Some(c) = candidate {
                // Deterministic choice when several units define it: the lowest offset.
                best = Some(best.map_or(c, |b| b.min(c)));
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two compile units with their own `typedef struct xHEAP_REGION {...} HeapRegion_t`, and an
    /// array of the second unit's copy (the application's `xHeapRegions`).
    fn two_units() -> TypeTable {
        let mut t = TypeTable::default();
        for base in [0x100, 0x900] {
            t.insert(
                base,
                Type::Struct {
                    name: Some("xHEAP_REGION".into()),
                    size: Some(8),
                    members: Vec::new(),
                    is_union: false,
                },
            );
            t.insert(
                base + 1,
                Type::Typedef {
                    name: "HeapRegion_t".into(),
                    target: Some(base),
                },
            );
        }
        t.insert(
            0x902,
            Type::Qualified {
                target: Some(0x901),
            },
        );
        t.insert(
            0x903,
            Type::Array {
                element: Some(0x902),
                dims: vec![Some(4)],
            },
        );
        t
    }

    #[test]
    fn types_of_other_units_match_by_name() {
        let t = two_units();
        let Some(Type::Array {
            element: Some(e), ..
        }) = t.get(0x903)
        else {
            panic!("array expected");
        };
        // The id find_struct picks is the other unit's copy...
        assert_ne!(t.resolve(*e).map(|r| r.0), t.find_struct("HeapRegion_t"));
        // ...but the names agree, through the qualifier and the typedef.
        assert!(t.is_named(*e, "HeapRegion_t"));
        assert!(t.is_named(*e, "xHEAP_REGION"));
        assert!(!t.is_named(*e, "BlockLink_t"));
        assert!(!t.is_named(0x903, "HeapRegion_t"));
    }
}
