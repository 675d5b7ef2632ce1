//! Detection from DWARF: whether the ELF has TensorFlow Lite Micro, which arena allocator
//! classes it has, and every member offset a reading needs. Members are always found by name
//! (through C++ base classes), never at a fixed offset: offsets differ between TFLM versions
//! and with `TF_LITE_STATIC_MEMORY`. docs/tflm.md lists the names and the versions they hold for.

use memlife_dwarf::{Symbols, Type, TypeId, TypeTable};
use serde::Serialize;

/// Which TFLM this is, as its classes show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Generation {
    /// TFLM of 2020 (tfmicro 0.1.0): `SimpleMemoryAllocator` without `temp_`, the
    /// `MicroAllocator` held by value in the `MicroInterpreter`, `TfLiteTensor`s in the context.
    #[serde(rename = "2020")]
    Tflm2020,
    /// TFLM since 2021: arena allocators with a temp section behind two interfaces, the
    /// `MicroAllocator` in the arena and held by reference, `TfLiteEvalTensor`s per subgraph.
    #[serde(rename = "current")]
    Current,
}

impl Generation {
    /// As the JSON says it.
    pub fn name(self) -> &'static str {
        match self {
            Generation::Tflm2020 => "2020",
            Generation::Current => "current",
        }
    }
}

/// What an arena allocator class manages, by its cursor members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cursors {
    /// One arena, planned activations growing up from `buffer_head_` to `head_`, persistent
    /// data down from `buffer_tail_` to `tail_`, temporaries (current TFLM) from `head_` to
    /// `temp_`: `SimpleMemoryAllocator`, `SingleArenaBufferAllocator`.
    Single {
        head: u64,
        tail: u64,
        temp: Option<u64>,
    },
    /// The persistent arena of the split pair: `tail_temp_` down from `buffer_tail_`.
    Persistent { tail_temp: u64 },
    /// The non-persistent arena of the split pair: the resizable buffer up to `head_temp_`,
    /// temporaries up to `next_temp_`.
    NonPersistent { head_temp: u64, next_temp: u64 },
}

/// A vtable: its symbol's address and size, and where the object's vtable pointers sit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Vtable {
    pub address: u64,
    pub size: u64,
    /// Offsets of the `_vptr` members in the object (its own and its bases'), lowest first.
    pub vptrs: Vec<u64>,
}

/// One arena allocator class as a reading needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArenaClass {
    /// Full name (`tflite::SingleArenaBufferAllocator`).
    pub name: String,
    pub size: u64,
    pub vtable: Option<Vtable>,
    pub buffer_head: u64,
    pub buffer_tail: u64,
    pub cursors: Cursors,
    /// Offsets of the interface subobjects, which the `MicroAllocator` points at.
    pub persistent_iface: u64,
    pub non_persistent_iface: u64,
}

/// `tflite::MicroAllocator`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MicroAllocatorClass {
    pub size: u64,
    pub vtable: Option<Vtable>,
    /// 2020: `model_`, `memory_allocator_`, `context_`, `active_`, the scratch handles.
    pub model: Option<u64>,
    pub memory_allocator: Option<u64>,
    pub context: Option<u64>,
    pub active: Option<u64>,
    pub scratch_handles: Option<u64>,
    pub scratch_count: Option<u64>,
    /// Current: `persistent_buffer_allocator_`, `non_persistent_buffer_allocator_`.
    pub persistent: Option<u64>,
    pub non_persistent: Option<u64>,
}

/// `tflite::MicroInterpreter`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InterpreterClass {
    pub size: u64,
    pub model: u64,
    /// `allocator_`: the `MicroAllocator` itself (2020) or a reference to it.
    pub allocator: u64,
    pub allocator_by_value: bool,
    pub tensors_allocated: Option<u64>,
    /// `context_` (the `TfLiteContext` held by value).
    pub context: Option<u64>,
    /// 2020: `node_and_registrations_` and `context_.tensors`, `context_.tensors_size`.
    pub node_and_registrations: Option<u64>,
    pub context_tensors: Option<u64>,
    pub context_tensors_size: Option<u64>,
    /// Current: `graph_.subgraph_allocations_`, `graph_.allocator_`.
    pub subgraph_allocations: Option<u64>,
    pub graph_allocator: Option<u64>,
    /// Current: `graph_.context_`, which points at the interpreter's own `context_`.
    pub graph_context: Option<u64>,
}

/// A tensor record: `TfLiteTensor` (2020) or `TfLiteEvalTensor` (current).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TensorClass {
    pub name: &'static str,
    pub size: u64,
    pub data: u64,
    /// `bytes` (`TfLiteTensor` only).
    pub bytes: Option<u64>,
}

/// `NodeAndRegistration` and the registration it points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeClass {
    pub size: u64,
    pub registration: u64,
    pub builtin_code: u64,
    pub builtin_code_size: u64,
    pub custom_name: u64,
}

/// `internal::ScratchBufferHandle` of 2020 (current TFLM keeps only the data pointer there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScratchClass {
    pub size: u64,
    pub data: u64,
    pub bytes: u64,
    pub node_idx: u64,
}

/// `SubgraphAllocations` (current).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SubgraphClass {
    pub node_and_registrations: u64,
    pub tensors: u64,
}

/// TensorFlow Lite Micro as this ELF's DWARF describes it.
#[derive(Debug, Clone)]
pub struct Tflm {
    pub(crate) generation: Generation,
    pub(crate) ptr_size: u64,
    pub(crate) arenas: Vec<ArenaClass>,
    pub(crate) micro_allocator: Option<MicroAllocatorClass>,
    pub(crate) interpreter: Option<InterpreterClass>,
    pub(crate) tensor: Option<TensorClass>,
    pub(crate) node: Option<NodeClass>,
    pub(crate) subgraph: Option<SubgraphClass>,
    pub(crate) scratch: Option<ScratchClass>,
    /// `BuiltinOperator` enumerators by value, as the firmware's schema names them.
    pub(crate) builtin_names: Vec<(i64, String)>,
}

/// Arena allocator classes under every name TFLM gave them, with the recording variants
/// (derived classes whose arena members are inherited).
const SINGLE_CLASSES: &[&str] = &[
    "SimpleMemoryAllocator",
    "SingleArenaBufferAllocator",
    "RecordingSimpleMemoryAllocator",
    "RecordingSingleArenaBufferAllocator",
];

impl Tflm {
    /// TFLM's layout from the ELF's DWARF; `None` when the ELF has no TFLM arena allocator
    /// class.
    pub fn detect(symbols: &Symbols) -> Option<Tflm> {
        let types = symbols.types();
        let mut arenas: Vec<ArenaClass> = SINGLE_CLASSES
            .iter()
            .filter_map(|c| single_class(symbols, c))
            .collect();
        arenas.extend(split_class(symbols, "PersistentArenaBufferAllocator", true));
        arenas.extend(split_class(
            symbols,
            "NonPersistentArenaBufferAllocator",
            false,
        ));
        if arenas.is_empty() {
            return None;
        }
        let ptr_size = tflite_class(types, "SimpleMemoryAllocator")
            .or_else(|| tflite_class(types, "SingleArenaBufferAllocator"))
            .or_else(|| tflite_class(types, "PersistentArenaBufferAllocator"))
            .and_then(|id| types.find_member(id, "buffer_head_"))
            .and_then(|(_, m)| types.size_of(m.type_id?))
            .filter(|s| matches!(s, 4 | 8))
            .unwrap_or(4);
        let interpreter = interpreter_class(types);
        let generation = match &interpreter {
            Some(i) if i.allocator_by_value => Generation::Tflm2020,
            Some(_) => Generation::Current,
            // Without an interpreter class, the allocator tells: no temp section in 2020.
            None if arenas
                .iter()
                .any(|a| matches!(a.cursors, Cursors::Single { temp: None, .. })) =>
            {
                Generation::Tflm2020
            }
            None => Generation::Current,
        };
        Some(Tflm {
            generation,
            ptr_size,
            arenas,
            micro_allocator: micro_allocator_class(symbols),
            interpreter,
            tensor: tensor_class(types, generation),
            node: node_class(types),
            subgraph: subgraph_class(types),
            scratch: scratch_class(types),
            builtin_names: builtin_names(types),
        })
    }

    /// Which TFLM this is.
    pub fn generation(&self) -> Generation {
        self.generation
    }

    /// The arena allocator classes found (full names).
    pub fn arena_classes(&self) -> Vec<&str> {
        self.arenas.iter().map(|a| a.name.as_str()).collect()
    }

    /// The name of a builtin operator code, as the firmware's schema names it (`FULLY_CONNECTED`);
    /// `BUILTIN_<code>` when DWARF has no `BuiltinOperator` enumeration.
    pub fn builtin_name(&self, code: i64) -> String {
        self.builtin_names
            .iter()
            .find(|(v, _)| *v == code)
            .map_or_else(|| format!("BUILTIN_{code}"), |(_, n)| n.clone())
    }
}

/// A complete class with this tag name declared in TFLM's namespace (`tflite` or below), or an
/// anonymous struct with this typedef name (`NodeAndRegistration` in 2020).
pub(crate) fn tflite_class(types: &TypeTable, tag: &str) -> Option<TypeId> {
    let id = types.find_struct(tag)?;
    match types.qualified_name(id) {
        Some(q) => q.starts_with("tflite::").then_some(id),
        None => Some(id),
    }
}

/// Where a base class declared in TFLM's namespace lies in `class`: `tflite::BASE` (TFLM until
/// 2026-08) or `tflite::micro::BASE` (tflite-micro of 2026-10 declares its classes there).
pub(crate) fn tflite_base_offset(types: &TypeTable, class: TypeId, base: &str) -> Option<u64> {
    TFLITE_NAMESPACES
        .iter()
        .find_map(|ns| types.base_offset(class, &format!("{ns}{base}")))
}

/// The namespaces TFLM's classes are declared in, oldest first.
pub(crate) const TFLITE_NAMESPACES: [&str; 2] = ["tflite::", "tflite::micro::"];

/// The offset of a member found by a dotted path (`context_.tensors`), each step through
/// base classes; the type of the last member comes with it.
///
/// A member whose type is only declared where the class is defined (GCC does so for a class
/// defined in another compile unit: current TFLM's `graph_` and `micro_context_` in an -O2
/// build) is looked for in the complete definition with the same full name.
pub(crate) fn member_path(types: &TypeTable, class: TypeId, path: &str) -> Option<(u64, TypeId)> {
    let mut offset = 0u64;
    let mut ty = class;
    for part in path.split('.') {
        let (off, m) = types
            .find_member(ty, part)
            .or_else(|| types.find_member(definition(types, ty)?, part))?;
        offset = offset.checked_add(off)?;
        ty = m.type_id?;
    }
    Some((offset, ty))
}

/// The complete definition of the declared (sizeless) struct `ty`: the one with its tag and
/// full name.
fn definition(types: &TypeTable, ty: TypeId) -> Option<TypeId> {
    let (
        id,
        Type::Struct {
            name: Some(tag),
            size: None,
            ..
        },
    ) = types.resolve(ty)?
    else {
        return None;
    };
    let full = types.qualified_name(id);
    let complete = types.find_struct(tag)?;
    (types.qualified_name(complete) == full).then_some(complete)
}

fn offset(types: &TypeTable, class: TypeId, path: &str) -> Option<u64> {
    member_path(types, class, path).map(|(o, _)| o)
}

/// The struct a pointer (or reference) type points at, through typedefs and qualifiers.
fn pointee(types: &TypeTable, ty: TypeId) -> Option<TypeId> {
    match types.resolve(ty)?.1 {
        Type::Pointer { target, .. } => types.resolve((*target)?).map(|(id, _)| id),
        _ => None,
    }
}

/// The vtable pointers of a class (its own and its bases'), by offset.
fn vptr_offsets(types: &TypeTable, class: TypeId, base: u64, depth: usize, out: &mut Vec<u64>) {
    if depth > 16 {
        return;
    }
    if let Some((_, Type::Struct { members, .. })) = types.resolve(class) {
        for m in members {
            if m.name.as_deref().is_some_and(|n| n.starts_with("_vptr")) {
                out.extend(base.checked_add(m.offset));
            }
        }
    }
    for b in types.bases(class) {
        if let (Some(t), Some(o)) = (b.type_id, b.offset.and_then(|o| base.checked_add(o))) {
            vptr_offsets(types, t, o, depth + 1, out);
        }
    }
}

/// `_ZTV` and the Itanium nested name of a namespaced class: the symbol of its vtable.
fn vtable_symbol(qualified: &str) -> String {
    let parts: Vec<&str> = qualified.split("::").collect();
    let mut s = String::from("_ZTV");
    if parts.len() > 1 {
        s.push('N');
    }
    for p in &parts {
        s.push_str(&format!("{}{p}", p.len()));
    }
    if parts.len() > 1 {
        s.push('E');
    }
    s
}

fn vtable(symbols: &Symbols, class: TypeId) -> Option<Vtable> {
    let types = symbols.types();
    let mut vptrs = Vec::new();
    vptr_offsets(types, class, 0, 0, &mut vptrs);
    if vptrs.is_empty() {
        return None;
    }
    vptrs.sort_unstable();
    vptrs.dedup();
    let name = types.qualified_name(class)?;
    let sym = symbols.elf_symbol(&vtable_symbol(&name))?;
    Some(Vtable {
        address: sym.address,
        size: sym.size,
        vptrs,
    })
}

fn class_header(symbols: &Symbols, tag: &str) -> Option<(TypeId, String, u64)> {
    let types = symbols.types();
    let id = tflite_class(types, tag)?;
    let size = types.size_of(id)?;
    Some((id, types.qualified_name(id)?, size))
}

fn single_class(symbols: &Symbols, tag: &str) -> Option<ArenaClass> {
    let types = symbols.types();
    let (id, name, size) = class_header(symbols, tag)?;
    let iface = |n: &str| tflite_base_offset(types, id, n).unwrap_or(0);
    Some(ArenaClass {
        vtable: vtable(symbols, id),
        buffer_head: offset(types, id, "buffer_head_")?,
        buffer_tail: offset(types, id, "buffer_tail_")?,
        cursors: Cursors::Single {
            head: offset(types, id, "head_")?,
            tail: offset(types, id, "tail_")?,
            temp: offset(types, id, "temp_"),
        },
        persistent_iface: iface("IPersistentBufferAllocator"),
        non_persistent_iface: iface("INonPersistentBufferAllocator"),
        name,
        size,
    })
}

fn split_class(symbols: &Symbols, tag: &str, persistent: bool) -> Option<ArenaClass> {
    let types = symbols.types();
    let (id, name, size) = class_header(symbols, tag)?;
    let cursors = if persistent {
        Cursors::Persistent {
            tail_temp: offset(types, id, "tail_temp_")?,
        }
    } else {
        Cursors::NonPersistent {
            head_temp: offset(types, id, "head_temp_")?,
            next_temp: offset(types, id, "next_temp_")?,
        }
    };
    let iface = |n: &str| tflite_base_offset(types, id, n).unwrap_or(0);
    Some(ArenaClass {
        vtable: vtable(symbols, id),
        buffer_head: offset(types, id, "buffer_head_")?,
        buffer_tail: offset(types, id, "buffer_tail_")?,
        cursors,
        persistent_iface: iface("IPersistentBufferAllocator"),
        non_persistent_iface: iface("INonPersistentBufferAllocator"),
        name,
        size,
    })
}

fn micro_allocator_class(symbols: &Symbols) -> Option<MicroAllocatorClass> {
    let types = symbols.types();
    let (id, _, size) = class_header(symbols, "MicroAllocator")?;
    let f = |p: &str| offset(types, id, p);
    Some(MicroAllocatorClass {
        size,
        vtable: vtable(symbols, id),
        model: f("model_"),
        memory_allocator: f("memory_allocator_"),
        context: f("context_"),
        active: f("active_"),
        scratch_handles: f("scratch_buffer_handles_"),
        scratch_count: f("scratch_buffer_count_"),
        persistent: f("persistent_buffer_allocator_"),
        non_persistent: f("non_persistent_buffer_allocator_"),
    })
}

fn interpreter_class(types: &TypeTable) -> Option<InterpreterClass> {
    let id = tflite_class(types, "MicroInterpreter")?;
    let (allocator, allocator_ty) = member_path(types, id, "allocator_")?;
    let allocator_by_value = matches!(types.resolve(allocator_ty)?.1, Type::Struct { .. });
    let f = |p: &str| offset(types, id, p);
    Some(InterpreterClass {
        size: types.size_of(id)?,
        model: f("model_")?,
        allocator,
        allocator_by_value,
        tensors_allocated: f("tensors_allocated_"),
        context: f("context_"),
        node_and_registrations: f("node_and_registrations_"),
        context_tensors: f("context_.tensors"),
        context_tensors_size: f("context_.tensors_size"),
        subgraph_allocations: f("graph_.subgraph_allocations_"),
        graph_allocator: f("graph_.allocator_"),
        graph_context: f("graph_.context_"),
    })
}

fn tensor_class(types: &TypeTable, generation: Generation) -> Option<TensorClass> {
    let name = match generation {
        Generation::Tflm2020 => "TfLiteTensor",
        Generation::Current => "TfLiteEvalTensor",
    };
    let id = types.find_struct(name)?;
    Some(TensorClass {
        name,
        size: types.size_of(id)?,
        data: offset(types, id, "data")?,
        bytes: offset(types, id, "bytes"),
    })
}

fn node_class(types: &TypeTable) -> Option<NodeClass> {
    let id = tflite_class(types, "NodeAndRegistration")?;
    let (registration, reg_ptr) = member_path(types, id, "registration")?;
    let reg = pointee(types, reg_ptr)?;
    let (builtin_code, code_ty) = member_path(types, reg, "builtin_code")?;
    Some(NodeClass {
        size: types.size_of(id)?,
        registration,
        builtin_code,
        builtin_code_size: types.size_of(code_ty)?,
        custom_name: offset(types, reg, "custom_name")?,
    })
}

fn subgraph_class(types: &TypeTable) -> Option<SubgraphClass> {
    let id = tflite_class(types, "SubgraphAllocations")?;
    Some(SubgraphClass {
        node_and_registrations: offset(types, id, "node_and_registrations")?,
        tensors: offset(types, id, "tensors")?,
    })
}

fn scratch_class(types: &TypeTable) -> Option<ScratchClass> {
    let id = tflite_class(types, "ScratchBufferHandle")?;
    Some(ScratchClass {
        size: types.size_of(id)?,
        data: offset(types, id, "data")?,
        bytes: offset(types, id, "bytes")?,
        node_idx: offset(types, id, "node_idx")?,
    })
}

fn builtin_names(types: &TypeTable) -> Vec<(i64, String)> {
    let Some(Type::Enum { variants, .. }) = types
        .find_enum("BuiltinOperator")
        .and_then(|id| types.get(id))
    else {
        return Vec::new();
    };
    let mut names: Vec<(i64, String)> = Vec::new();
    for (n, v) in variants {
        let short = n.strip_prefix("BuiltinOperator_").unwrap_or(n);
        // MIN and MAX alias the first and last operators.
        if matches!(short, "MIN" | "MAX") || names.iter().any(|(x, _)| x == v) {
            continue;
        }
        names.push((*v, short.to_string()));
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vtable_symbols_are_itanium_names() {
        assert_eq!(
            vtable_symbol("tflite::SingleArenaBufferAllocator"),
            "_ZTVN6tflite26SingleArenaBufferAllocatorE"
        );
        assert_eq!(
            vtable_symbol("tflite::micro::PersistentArenaBufferAllocator"),
            "_ZTVN6tflite5micro30PersistentArenaBufferAllocatorE"
        );
        assert_eq!(vtable_symbol("Plain"), "_ZTV5Plain");
    }
}
