//! Collects variables and types from every compile unit in one depth-first pass per unit.

use std::collections::HashMap;

use gimli::{AttributeValue, Reader as _};

use crate::elf::Reader;
use crate::types::{Base, BaseEncoding, Member, Type, TypeId, TypeTable};
use crate::{Result, SymbolError};

/// A variable with static storage (a global, a file static or a function static), or a constant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    /// Name as written in the source.
    pub name: String,
    /// Name of the compile unit that defines it (`../src/heap4.c`).
    pub cu: String,
    /// The enclosing function for function statics (`heap_end` in `_sbrk`).
    pub function: Option<String>,
    /// Static address, when it has one.
    pub address: Option<u64>,
    /// Constant value for variables the compiler folded (`DW_AT_const_value`).
    pub const_value: Option<i64>,
    /// Type.
    pub type_id: Option<TypeId>,
    /// Global (external linkage) rather than file static.
    pub external: bool,
}

/// What an open DIE on the depth-first stack is building.
enum Open {
    Struct {
        id: TypeId,
        ty: Type,
    },
    Array {
        id: TypeId,
        element: Option<TypeId>,
        dims: Vec<Option<u64>>,
    },
    Enum {
        id: TypeId,
        ty: Type,
    },
    Function(Option<String>),
    /// A C++ namespace or a Rust module: the scope of the types declared inside.
    Namespace(String),
    Other,
}

struct Declaration {
    name: Option<String>,
    type_id: Option<TypeId>,
    external: bool,
}

/// Functions by name and their return type (`None` = `void`): what a call left in r0 (and r1)
/// means.
pub(crate) type Returns = HashMap<String, Option<TypeId>>;

pub(crate) fn collect(
    dwarf: &gimli::Dwarf<Reader>,
    path: &str,
) -> Result<(Vec<Variable>, TypeTable, Returns)> {
    let err = |source: gimli::Error| SymbolError::Dwarf {
        path: path.to_string(),
        source,
    };
    let mut vars = Vec::new();
    let mut types = TypeTable::default();
    let mut decls: HashMap<u64, Declaration> = HashMap::new();
    let mut pending_specs: Vec<(Variable, u64)> = Vec::new();
    let mut returns = Returns::new();
    // Subprogram DIEs by offset, for definitions that name themselves through a declaration.
    let mut fn_decls: HashMap<u64, (Option<String>, Option<TypeId>)> = HashMap::new();

    let mut headers = dwarf.units();
    while let Some(header) = headers.next().map_err(err)? {
        let unit = dwarf.unit(header).map_err(err)?;
        let cu_name = unit
            .name
            .as_ref()
            .and_then(|n| n.to_string_lossy().ok().map(|s| s.into_owned()))
            .unwrap_or_default();
        let mut stack: Vec<(isize, Open)> = Vec::new();
        let mut entries = unit.entries();
        while let Some(entry) = entries.next_dfs().map_err(err)? {
            let depth = entry.depth();
            while stack.last().is_some_and(|(d, _)| *d >= depth) {
                if let Some((_, open)) = stack.pop() {
                    close(open, &mut types);
                }
            }
            let id = global_offset(&unit, entry.offset());
            let name = attr_name(dwarf, &unit, entry);
            let type_id = entry
                .attr_value(gimli::DW_AT_type)
                .and_then(|v| type_ref(&unit, v));
            let byte_size = entry
                .attr_value(gimli::DW_AT_byte_size)
                .and_then(|v| v.udata_value());
            let tag = entry.tag();
            let open = match tag {
                gimli::DW_TAG_base_type => {
                    let encoding = match entry.attr_value(gimli::DW_AT_encoding) {
                        Some(AttributeValue::Encoding(e)) => match e {
                            gimli::DW_ATE_signed | gimli::DW_ATE_signed_char => {
                                BaseEncoding::Signed
                            }
                            gimli::DW_ATE_unsigned | gimli::DW_ATE_unsigned_char => {
                                BaseEncoding::Unsigned
                            }
                            gimli::DW_ATE_boolean => BaseEncoding::Bool,
                            gimli::DW_ATE_float => BaseEncoding::Float,
                            _ => BaseEncoding::Other,
                        },
                        _ => BaseEncoding::Other,
                    };
                    types.insert(
                        id,
                        Type::Base {
                            name: name.clone().unwrap_or_default(),
                            size: byte_size.unwrap_or(0),
                            encoding,
                        },
                    );
                    Open::Other
                }
                gimli::DW_TAG_pointer_type
                | gimli::DW_TAG_reference_type
                | gimli::DW_TAG_rvalue_reference_type => {
                    let size = byte_size.unwrap_or(u64::from(unit.header.address_size()));
                    types.insert(
                        id,
                        Type::Pointer {
                            target: type_id,
                            size,
                        },
                    );
                    Open::Other
                }
                gimli::DW_TAG_typedef => {
                    types.insert(
                        id,
                        Type::Typedef {
                            name: name.clone().unwrap_or_default(),
                            target: type_id,
                        },
                    );
                    Open::Other
                }
                gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_restrict_type
                | gimli::DW_TAG_atomic_type => {
                    types.insert(id, Type::Qualified { target: type_id });
                    Open::Other
                }
                gimli::DW_TAG_subroutine_type => {
                    types.insert(id, Type::Function);
                    Open::Other
                }
                gimli::DW_TAG_structure_type
                | gimli::DW_TAG_union_type
                | gimli::DW_TAG_class_type => {
                    // Rust and C++ name a type by its scope too (`embedded_alloc::llff::Heap`).
                    let scope: Vec<&str> = stack
                        .iter()
                        .filter_map(|(_, o)| match o {
                            Open::Namespace(n) => Some(n.as_str()),
                            _ => None,
                        })
                        .collect();
                    if let (false, Some(n)) = (scope.is_empty(), &name) {
                        types.set_scope(id, format!("{}::{n}", scope.join("::")));
                    }
                    Open::Struct {
                        id,
                        ty: Type::Struct {
                            name: name.clone(),
                            size: byte_size,
                            members: Vec::new(),
                            is_union: tag == gimli::DW_TAG_union_type,
                        },
                    }
                }
                gimli::DW_TAG_namespace => Open::Namespace(name.clone().unwrap_or_default()),
                gimli::DW_TAG_array_type => Open::Array {
                    id,
                    element: type_id,
                    dims: Vec::new(),
                },
                gimli::DW_TAG_enumeration_type => Open::Enum {
                    id,
                    ty: Type::Enum {
                        name: name.clone(),
                        size: byte_size.unwrap_or(4),
                        variants: Vec::new(),
                    },
                },
                gimli::DW_TAG_inheritance => {
                    if let Some((_, Open::Struct { id: derived, .. })) = stack.last() {
                        // A virtual base's location is an expression evaluated at run time.
                        let virtual_base =
                            entry.attr_value(gimli::DW_AT_virtuality).is_some_and(|v| {
                                !matches!(v, AttributeValue::Virtuality(gimli::DW_VIRTUALITY_none))
                            });
                        let offset = entry
                            .attr_value(gimli::DW_AT_data_member_location)
                            .and_then(|v| member_offset(&unit, v))
                            .filter(|_| !virtual_base);
                        types.add_base(*derived, Base { type_id, offset });
                    }
                    Open::Other
                }
                // A static data member (DWARF 4 gives it as a member declaration; DWARF 5 as a
                // variable) has no place in the object: it is not a member at offset 0.
                gimli::DW_TAG_member if is_declaration(entry) => Open::Other,
                gimli::DW_TAG_member => {
                    if let Some((
                        _,
                        Open::Struct {
                            ty: Type::Struct { members, .. },
                            ..
                        },
                    )) = stack.last_mut()
                    {
                        members.push(Member {
                            name: name.clone(),
                            offset: entry
                                .attr_value(gimli::DW_AT_data_member_location)
                                .and_then(|v| member_offset(&unit, v))
                                .unwrap_or(0),
                            type_id,
                            bit_size: entry
                                .attr_value(gimli::DW_AT_bit_size)
                                .and_then(|v| v.udata_value()),
                            bit_offset: entry
                                .attr_value(gimli::DW_AT_data_bit_offset)
                                .and_then(|v| v.udata_value()),
                        });
                    }
                    Open::Other
                }
                gimli::DW_TAG_subrange_type => {
                    if let Some((_, Open::Array { dims, .. })) = stack.last_mut() {
                        let count = entry
                            .attr_value(gimli::DW_AT_count)
                            .and_then(|v| v.udata_value())
                            .or_else(|| {
                                entry
                                    .attr_value(gimli::DW_AT_upper_bound)
                                    .and_then(|v| v.udata_value())
                                    .map(|u| u.wrapping_add(1))
                            });
                        dims.push(count);
                    }
                    Open::Other
                }
                gimli::DW_TAG_enumerator => {
                    if let Some((
                        _,
                        Open::Enum {
                            ty: Type::Enum { variants, .. },
                            ..
                        },
                    )) = stack.last_mut()
                    {
                        let value = entry
                            .attr_value(gimli::DW_AT_const_value)
                            .and_then(|v| v.sdata_value().or(v.udata_value().map(|u| u as i64)))
                            .unwrap_or(0);
                        variants.push((name.clone().unwrap_or_default(), value));
                    }
                    Open::Other
                }
                gimli::DW_TAG_subprogram => {
                    // Out-of-line definitions name themselves (and give their return type)
                    // through DW_AT_specification or DW_AT_abstract_origin.
                    let origin = entry
                        .attr_value(gimli::DW_AT_specification)
                        .or_else(|| entry.attr_value(gimli::DW_AT_abstract_origin))
                        .and_then(|v| type_ref(&unit, v));
                    let from_origin = origin.and_then(|o| fn_decls.get(&o).cloned());
                    let fn_name = name.clone().or_else(|| {
                        from_origin
                            .as_ref()
                            .and_then(|(n, _)| n.clone())
                            .or_else(|| {
                                origin
                                    .and_then(|spec| decls.get(&spec).and_then(|d| d.name.clone()))
                            })
                    });
                    let ret = type_id.or(from_origin.and_then(|(_, t)| t));
                    fn_decls.insert(id, (fn_name.clone(), ret));
                    // By its name, and by its linkage (mangled) name: a C++ method's name alone
                    // (`Invoke`) is shared by every class, its symbol is not.
                    let linkage = attr_string(dwarf, &unit, entry, gimli::DW_AT_linkage_name)
                        .or_else(|| {
                            attr_string(dwarf, &unit, entry, gimli::DW_AT_MIPS_linkage_name)
                        });
                    for n in fn_name.iter().chain(&linkage) {
                        // The first typed sighting wins (a declaration and its definition agree).
                        let slot = returns.entry(n.clone()).or_insert(ret);
                        if slot.is_none() {
                            *slot = ret;
                        }
                    }
                    Open::Function(fn_name)
                }
                gimli::DW_TAG_variable => {
                    let external = matches!(
                        entry.attr_value(gimli::DW_AT_external),
                        Some(AttributeValue::Flag(true))
                    );
                    if is_declaration(entry) {
                        decls.insert(
                            id,
                            Declaration {
                                name: name.clone(),
                                type_id,
                                external,
                            },
                        );
                    } else {
                        let address = entry
                            .attr_value(gimli::DW_AT_location)
                            .and_then(|v| static_address(&unit, v));
                        let const_value = entry
                            .attr_value(gimli::DW_AT_const_value)
                            .and_then(|v| const_value(&unit, v));
                        let function = stack.iter().rev().find_map(|(_, o)| match o {
                            Open::Function(f) => Some(f.clone()),
                            _ => None,
                        });
                        if address.is_some() || const_value.is_some() {
                            let var = Variable {
                                name: name.clone().unwrap_or_default(),
                                cu: cu_name.clone(),
                                function: function.flatten(),
                                address,
                                const_value,
                                type_id,
                                external,
                            };
                            match entry
                                .attr_value(gimli::DW_AT_specification)
                                .and_then(|v| type_ref(&unit, v))
                            {
                                Some(spec) => pending_specs.push((var, spec)),
                                None => vars.push(var),
                            }
                        }
                    }
                    Open::Other
                }
                _ => Open::Other,
            };
            stack.push((depth, open));
        }
        while let Some((_, open)) = stack.pop() {
            close(open, &mut types);
        }
    }
    // A definition that refers to a declaration takes its name, type and linkage from there.
    for (mut var, spec) in pending_specs {
        if let Some(decl) = decls.get(&spec) {
            if var.name.is_empty() {
                var.name = decl.name.clone().unwrap_or_default();
            }
            var.type_id = var.type_id.or(decl.type_id);
            var.external |= decl.external;
        }
        vars.push(var);
    }
    vars.retain(|v| !v.name.is_empty());
    Ok((vars, types, returns))
}

fn is_declaration(entry: &gimli::DebuggingInformationEntry<Reader>) -> bool {
    matches!(
        entry.attr_value(gimli::DW_AT_declaration),
        Some(AttributeValue::Flag(true))
    )
}

fn close(open: Open, types: &mut TypeTable) {
    match open {
        Open::Struct { id, ty } | Open::Enum { id, ty } => types.insert(id, ty),
        Open::Array { id, element, dims } => types.insert(id, Type::Array { element, dims }),
        Open::Function(_) | Open::Namespace(_) | Open::Other => {}
    }
}

fn global_offset(unit: &gimli::Unit<Reader>, off: gimli::UnitOffset<usize>) -> u64 {
    off.to_debug_info_offset(&unit.header)
        .map(|o| o.0 as u64)
        .unwrap_or(u64::MAX - off.0 as u64)
}

fn type_ref(unit: &gimli::Unit<Reader>, v: AttributeValue<Reader>) -> Option<TypeId> {
    match v {
        AttributeValue::UnitRef(off) => Some(global_offset(unit, off)),
        AttributeValue::DebugInfoRef(off) => Some(off.0 as u64),
        _ => None,
    }
}

fn attr_name(
    dwarf: &gimli::Dwarf<Reader>,
    unit: &gimli::Unit<Reader>,
    entry: &gimli::DebuggingInformationEntry<Reader>,
) -> Option<String> {
    attr_string(dwarf, unit, entry, gimli::DW_AT_name)
}

fn attr_string(
    dwarf: &gimli::Dwarf<Reader>,
    unit: &gimli::Unit<Reader>,
    entry: &gimli::DebuggingInformationEntry<Reader>,
    attr: gimli::DwAt,
) -> Option<String> {
    let value = entry.attr_value(attr)?;
    let s = dwarf.attr_string(unit, value).ok()?;
    s.to_string_lossy().ok().map(|s| s.into_owned())
}

/// The address of a `DW_OP_addr` location (statics); anything else is not static storage.
fn static_address(unit: &gimli::Unit<Reader>, v: AttributeValue<Reader>) -> Option<u64> {
    let AttributeValue::Exprloc(expr) = v else {
        return None;
    };
    location_address(expr, unit.encoding())
}

/// `DW_OP_addr A` or `DW_OP_addr A; DW_OP_plus_uconst N` as an address; a sum past 2^64 (a
/// damaged ELF) is no address at all.
fn location_address(expr: gimli::Expression<Reader>, encoding: gimli::Encoding) -> Option<u64> {
    let mut ops = expr.operations(encoding);
    match ops.next() {
        Ok(Some(gimli::Operation::Address { address })) => {
            // Only a plain address: `DW_OP_addr; DW_OP_stack_value` etc. is not a location.
            match ops.next() {
                Ok(None) => Some(address),
                Ok(Some(gimli::Operation::PlusConstant { value })) => address.checked_add(value),
                _ => None,
            }
        }
        _ => None,
    }
}

fn const_value(unit: &gimli::Unit<Reader>, v: AttributeValue<Reader>) -> Option<i64> {
    match v {
        AttributeValue::Sdata(s) => Some(s),
        AttributeValue::Udata(u) => i64::try_from(u).ok(),
        AttributeValue::Data1(b) => Some(i64::from(b)),
        AttributeValue::Data2(b) => Some(i64::from(b)),
        AttributeValue::Data4(b) => Some(i64::from(b)),
        AttributeValue::Data8(b) => Some(b as i64),
        AttributeValue::Block(mut r) if r.len() <= 8 => {
            let mut bytes = [0u8; 8];
            let n = r.len();
            for b in bytes.iter_mut().take(n) {
                *b = r.read_u8().ok()?;
            }
            let _ = unit;
            Some(i64::from_le_bytes(bytes))
        }
        _ => None,
    }
}

fn member_offset(unit: &gimli::Unit<Reader>, v: AttributeValue<Reader>) -> Option<u64> {
    match v {
        AttributeValue::Exprloc(expr) => {
            let mut ops = expr.operations(unit.encoding());
            match ops.next() {
                Ok(Some(gimli::Operation::PlusConstant { value })) => Some(value),
                _ => None,
            }
        }
        other => other.udata_value(),
    }
}

#[cfg(test)]
mod address_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn expr(bytes: &[u8]) -> gimli::Expression<Reader> {
        gimli::Expression(Reader::new(
            std::rc::Rc::from(bytes),
            gimli::RunTimeEndian::Little,
        ))
    }

    const ENCODING: gimli::Encoding = gimli::Encoding {
        address_size: 4,
        format: gimli::Format::Dwarf32,
        version: 4,
    };

    #[test]
    fn an_address_plus_a_constant_past_2_pow_64_is_no_address() {
        // DW_OP_addr 0x20000000; DW_OP_plus_uconst 0x10
        let sound = [0x03, 0, 0, 0, 0x20, 0x23, 0x10];
        assert_eq!(location_address(expr(&sound), ENCODING), Some(0x2000_0010));
        // DW_OP_addr 0xffffffff; DW_OP_plus_uconst u64::MAX (ULEB128, ten bytes)
        let mut damaged = vec![0x03, 0xff, 0xff, 0xff, 0xff, 0x23];
        damaged.extend([0xff; 9]);
        damaged.push(0x01);
        assert_eq!(location_address(expr(&damaged), ENCODING), None);
    }
}
