//! Typed reads of globals: target bytes decoded on the host through the DWARF type table.
//!
//! [`read_variable`] makes ONE bulk read of a variable's whole size (at most [`MAX_READ`]
//! bytes) and decodes it with [`decode`]; pointers are never chased, so the cost on a real probe
//! is one round trip per variable whatever its shape. Decoding is pure and bounded: arrays give
//! at most [`MAX_ELEMENTS`] elements per dimension, a whole value at most [`MAX_VALUES`] nodes,
//! and any part that cannot be decoded (an unknown type, bytes beyond the read) becomes
//! [`Value::Unreadable`] with the reason, rather than failing the whole read.
//!
//! Target data is taken as little-endian (every Cortex-M memlife supports is).
//!
//! Reading (one bulk read, errors naming what was asked) is here; decoding the bytes by type
//! is in `decode`.
//!
//! Decoding rules:
//! - base types by encoding and size: signed → [`Value::Int`], unsigned and `char`s of unsigned
//!   encoding → [`Value::UInt`], `_Bool` → [`Value::Bool`], 4- and 8-byte floats →
//!   [`Value::Float`];
//! - pointers → [`Value::Pointer`], the address as an integer;
//! - structs → [`Value::Struct`], fields in declaration order; members of anonymous struct or
//!   union members are lifted into the parent, as C lets you name them; bit fields are extracted
//!   from `DW_AT_data_bit_offset` and sign-extended when signed;
//! - unions → [`Value::Struct`] with every member decoded over the same bytes;
//! - arrays → [`Value::Array`], nested per dimension;
//! - enums → [`Value::Enum`], with the enumerator's name when the value matches one;
//! - typedefs and `const`/`volatile` qualifiers are looked through.

use memlife_core::{Memory, TargetError};

mod decode;
mod model;
mod returned;

use crate::Symbols;
use crate::types::{TypeId, TypeTable};

pub use decode::{MAX_ELEMENTS, MAX_VALUES, decode};
pub use model::Value;
pub use returned::{Returned, returned};

/// Bytes read per variable at most (1 MiB; far more than a microcontroller's RAM).
pub const MAX_READ: u64 = 1 << 20;

/// Why a typed read failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// No variable of this name.
    #[error("no variable named `{name}`{}", similar_hint(.similar))]
    NotFound {
        /// The name asked for.
        name: String,
        /// Names of variables that look alike (at most a few).
        similar: Vec<String>,
    },
    /// Several compile units define a file static of this name, and none was preferred.
    #[error("`{name}` is ambiguous: a file static of that name is defined in {}", .cus.join(", "))]
    Ambiguous {
        /// The name asked for.
        name: String,
        /// The compile units that define it.
        cus: Vec<String>,
    },
    /// The variable has no static address (optimised out, or kept in a register).
    #[error("`{name}` has no address in memory (optimised out or kept in a register)")]
    NoAddress {
        /// The name asked for.
        name: String,
    },
    /// DWARF does not describe the type.
    #[error("the type of {what} is unknown")]
    UnknownType {
        /// The variable or type.
        what: String,
    },
    /// The type has no size (an incomplete struct, an array of unknown length, `void`).
    #[error("type `{type_name}` has no known size")]
    Unsized {
        /// The type's name.
        type_name: String,
    },
    /// Reading target memory failed.
    #[error("cannot read {len} bytes at {addr:#010x} for {what}")]
    Read {
        /// What was being read.
        what: String,
        /// Address.
        addr: u64,
        /// Length.
        len: u64,
        /// What the target said.
        #[source]
        source: TargetError,
    },
}

fn similar_hint(similar: &[String]) -> String {
    if similar.is_empty() {
        String::new()
    } else {
        format!(" (similar: {})", similar.join(", "))
    }
}

/// Reads the global or static `name` and decodes it. When several compile units define a file
/// static of that name, use [`read_variable_in`]. A constant the compiler folded
/// (`DW_AT_const_value`) is decoded from its value, without reading memory.
pub fn read_variable(
    symbols: &Symbols,
    mem: &mut dyn Memory,
    name: &str,
) -> Result<Value, ValueError> {
    read_variable_in(symbols, mem, name, &[])
}

/// [`read_variable`], preferring the definition whose compile unit file name ends with one of
/// `prefer_cu` (`&["heap4.c"]`), as [`Symbols::variable`] does.
pub fn read_variable_in(
    symbols: &Symbols,
    mem: &mut dyn Memory,
    name: &str,
    prefer_cu: &[&str],
) -> Result<Value, ValueError> {
    let Some(var) = symbols.variable(name, prefer_cu) else {
        return Err(not_found(symbols, name));
    };
    let type_id = var.type_id.ok_or_else(|| ValueError::UnknownType {
        what: format!("`{name}`"),
    })?;
    if symbols.types().get(type_id).is_none() {
        return Err(ValueError::UnknownType {
            what: format!("`{name}`"),
        });
    }
    match (var.address, var.const_value) {
        (Some(addr), _) => read_at(symbols.types(), mem, addr, type_id, &format!("`{name}`")),
        (None, Some(c)) => {
            let size = symbols.types().size_of(type_id).unwrap_or(8).min(8);
            // size <= 8, so the slice is in range.
            let bytes = &c.to_le_bytes()[..size as usize];
            Ok(decode(symbols.types(), bytes, type_id))
        }
        (None, None) => Err(ValueError::NoAddress {
            name: name.to_string(),
        }),
    }
}

fn not_found(symbols: &Symbols, name: &str) -> ValueError {
    let defined: Vec<&crate::Variable> = symbols.variables_named(name).collect();
    if defined.iter().any(|v| v.address.is_some()) {
        let mut cus: Vec<String> = defined.iter().map(|v| v.cu.clone()).collect();
        cus.sort();
        cus.dedup();
        return ValueError::Ambiguous {
            name: name.to_string(),
            cus,
        };
    }
    if !defined.is_empty() {
        return ValueError::NoAddress {
            name: name.to_string(),
        };
    }
    if symbols.elf_symbol(name).is_some() {
        return ValueError::UnknownType {
            what: format!("`{name}` (it is in the ELF symbol table only, without DWARF)"),
        };
    }
    let lower = name.to_ascii_lowercase();
    let mut similar: Vec<String> = symbols
        .variables()
        .iter()
        .map(|v| v.name.as_str())
        .filter(|n| is_similar(n, &lower))
        .map(str::to_string)
        .collect();
    similar.sort();
    similar.dedup();
    similar.truncate(5);
    ValueError::NotFound {
        name: name.to_string(),
        similar,
    }
}

/// Whether `candidate` could be what the user meant by `wanted` (already lowercase): one
/// contains the other, or they are at most two edits apart. Long names are not compared by edit
/// distance: they are not typos of each other, and the distance costs their product.
fn is_similar(candidate: &str, wanted: &str) -> bool {
    let l = candidate.to_ascii_lowercase();
    let contains = wanted.len() >= 3 && (l.contains(wanted) || wanted.contains(&l) && l.len() >= 3);
    contains || (l.len() <= 64 && wanted.len() <= 64 && strsim::levenshtein(&l, wanted) <= 2)
}

/// Reads a value of type `type_id` at `addr` (one bulk read) and decodes it.
pub fn read_typed(
    symbols: &Symbols,
    mem: &mut dyn Memory,
    addr: u64,
    type_id: TypeId,
) -> Result<Value, ValueError> {
    read_at(
        symbols.types(),
        mem,
        addr,
        type_id,
        &format!("{addr:#010x}"),
    )
}

fn read_at(
    types: &TypeTable,
    mem: &mut dyn Memory,
    addr: u64,
    type_id: TypeId,
    what: &str,
) -> Result<Value, ValueError> {
    if types.get(type_id).is_none() {
        return Err(ValueError::UnknownType {
            what: what.to_string(),
        });
    }
    let size = types.size_of(type_id).ok_or_else(|| ValueError::Unsized {
        type_name: types.name_of(type_id),
    })?;
    let len = size.min(MAX_READ);
    // len <= 1 MiB, so it fits in usize.
    let bytes = mem
        .read_vec(addr, len as usize)
        .map_err(|source| ValueError::Read {
            what: what.to_string(),
            addr,
            len,
            source,
        })?;
    Ok(decode(types, &bytes, type_id))
}

/// Reads a NUL-terminated string of at most `max` bytes (without the NUL) at `addr`, in chunks.
/// `None` for a null pointer or unreadable memory; the first `max` bytes when no NUL comes
/// before. Bytes that are not UTF-8 are replaced.
pub fn read_c_string(mem: &mut dyn Memory, addr: u64, max: usize) -> Option<String> {
    const CHUNK: usize = 64;
    if addr == 0 {
        return None;
    }
    let mut out: Vec<u8> = Vec::new();
    while out.len() < max {
        let at = addr.checked_add(out.len() as u64)?;
        let n = CHUNK.min(max - out.len());
        let chunk = match mem.read_vec(at, n) {
            Ok(c) => c,
            // The chunk may run past the end of memory while the string does not: byte by byte.
            Err(_) => {
                let mut c = Vec::new();
                for i in 0..n as u64 {
                    let mut b = [0u8];
                    mem.read(at.checked_add(i)?, &mut b).ok()?;
                    c.push(b[0]);
                    if b[0] == 0 {
                        break;
                    }
                }
                c
            }
        };
        if let Some(nul) = chunk.iter().position(|&b| b == 0) {
            out.extend_from_slice(&chunk[..nul]);
            return Some(String::from_utf8_lossy(&out).into_owned());
        }
        if chunk.is_empty() {
            break;
        }
        out.extend_from_slice(&chunk);
    }
    out.truncate(max);
    Some(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::types::{BaseEncoding, Member, Type};

    fn base_ty(name: &str, size: u64, encoding: BaseEncoding) -> Type {
        Type::Base {
            name: name.into(),
            size,
            encoding,
        }
    }

    fn member(name: &str, offset: u64, ty: TypeId) -> Member {
        Member {
            name: Some(name.into()),
            offset,
            type_id: Some(ty),
            bit_size: None,
            bit_offset: None,
        }
    }

    /// int(1), unsigned(2), uint8(3), _Bool(4), float(5), double(6), enum(7), pointer(8),
    /// typedef of int(9), const unsigned(10), short(11).
    fn table() -> TypeTable {
        let mut t = TypeTable::default();
        t.insert(1, base_ty("int", 4, BaseEncoding::Signed));
        t.insert(2, base_ty("unsigned int", 4, BaseEncoding::Unsigned));
        t.insert(3, base_ty("unsigned char", 1, BaseEncoding::Unsigned));
        t.insert(4, base_ty("_Bool", 1, BaseEncoding::Bool));
        t.insert(5, base_ty("float", 4, BaseEncoding::Float));
        t.insert(6, base_ty("double", 8, BaseEncoding::Float));
        t.insert(
            7,
            Type::Enum {
                name: Some("phase".into()),
                size: 4,
                variants: vec![("IDLE".into(), 0), ("LOAD".into(), 1), ("NEG".into(), -2)],
            },
        );
        t.insert(
            8,
            Type::Pointer {
                target: Some(1),
                size: 4,
            },
        );
        t.insert(
            9,
            Type::Typedef {
                name: "int32_t".into(),
                target: Some(1),
            },
        );
        t.insert(10, Type::Qualified { target: Some(2) });
        t.insert(11, base_ty("short", 2, BaseEncoding::Signed));
        t
    }

    #[test]
    fn base_types_by_encoding_and_size() {
        let t = table();
        assert_eq!(decode(&t, &(-5i32).to_le_bytes(), 9), Value::Int(-5));
        assert_eq!(
            decode(&t, &0xFFFF_FFFEu32.to_le_bytes(), 10),
            Value::UInt(0xFFFF_FFFE)
        );
        assert_eq!(decode(&t, &[200], 3), Value::UInt(200));
        assert_eq!(decode(&t, &[2], 4), Value::Bool(true));
        assert_eq!(decode(&t, &1.5f32.to_le_bytes(), 5), Value::Float(1.5));
        assert_eq!(
            decode(&t, &(-0.25f64).to_le_bytes(), 6),
            Value::Float(-0.25)
        );
        assert_eq!(
            decode(&t, &0x2000_0010u32.to_le_bytes(), 8),
            Value::Pointer(0x2000_0010)
        );
        assert_eq!(decode(&t, &(-3i16).to_le_bytes(), 11), Value::Int(-3));
    }

    #[test]
    fn enums_name_the_enumerator() {
        let t = table();
        assert_eq!(
            decode(&t, &1u32.to_le_bytes(), 7),
            Value::Enum {
                name: Some("LOAD".into()),
                value: 1
            }
        );
        assert_eq!(
            decode(&t, &(-2i32).to_le_bytes(), 7),
            Value::Enum {
                name: Some("NEG".into()),
                value: -2
            }
        );
        assert_eq!(
            decode(&t, &9u32.to_le_bytes(), 7),
            Value::Enum {
                name: None,
                value: 9
            }
        );
    }

    #[test]
    fn structs_in_declaration_order_with_bit_fields_and_anonymous_unions() {
        let mut t = table();
        // struct { unsigned char tag; int x; unsigned a:3; int b:5 (signed); _Bool c:1;
        //          union { short s; unsigned char u; }; }
        t.insert(
            20,
            Type::Struct {
                name: Some("inner".into()),
                size: Some(2),
                members: vec![member("s", 0, 11), member("u", 0, 3)],
                is_union: true,
            },
        );
        let bit = |name: &str, ty: TypeId, bits: u64, bit_offset: u64| Member {
            name: Some(name.into()),
            offset: 0,
            type_id: Some(ty),
            bit_size: Some(bits),
            bit_offset: Some(bit_offset),
        };
        t.insert(
            21,
            Type::Struct {
                name: Some("s".into()),
                size: Some(16),
                members: vec![
                    member("tag", 0, 3),
                    member("x", 4, 1),
                    bit("a", 2, 3, 64),
                    bit("b", 1, 5, 67),
                    bit("c", 4, 1, 72),
                    Member {
                        name: None,
                        offset: 12,
                        type_id: Some(20),
                        bit_size: None,
                        bit_offset: None,
                    },
                ],
                is_union: false,
            },
        );
        let mut bytes = [0u8; 16];
        bytes[0] = 7;
        bytes[4..8].copy_from_slice(&(-100i32).to_le_bytes());
        // a = 5 (bits 64..67), b = -3 (bits 67..72: 0b11101), c = 1 (bit 72).
        let word: u16 = 5 | (0b11101 << 3) | (1 << 8);
        bytes[8..10].copy_from_slice(&word.to_le_bytes());
        bytes[12..14].copy_from_slice(&(-2i16).to_le_bytes());
        let v = decode(&t, &bytes, 21);
        let names: Vec<&str> = match &v {
            Value::Struct(f) => f.iter().map(|(n, _)| n.as_str()).collect(),
            other => panic!("{other:?}"),
        };
        assert_eq!(names, ["tag", "x", "a", "b", "c", "s", "u"]);
        assert_eq!(v.field("tag"), Some(&Value::UInt(7)));
        assert_eq!(v.field("x"), Some(&Value::Int(-100)));
        assert_eq!(v.field("a"), Some(&Value::UInt(5)));
        assert_eq!(v.field("b"), Some(&Value::Int(-3)));
        assert_eq!(v.field("c"), Some(&Value::Bool(true)));
        assert_eq!(v.field("s"), Some(&Value::Int(-2)));
        assert_eq!(v.field("u"), Some(&Value::UInt(0xFE)));
    }

    #[test]
    fn arrays_nest_per_dimension_and_truncate() {
        let mut t = table();
        t.insert(
            30,
            Type::Array {
                element: Some(11),
                dims: vec![Some(2), Some(3)],
            },
        );
        let bytes: Vec<u8> = (0i16..6).flat_map(|i| i.to_le_bytes()).collect();
        let v = decode(&t, &bytes, 30);
        let rows = v.elements().unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].elements().unwrap()[2], Value::Int(5));
        assert_eq!(
            v.to_json(),
            serde_json::json!([[0, 1, 2], [3, 4, 5]]),
            "complete arrays are plain JSON arrays"
        );

        t.insert(
            31,
            Type::Array {
                element: Some(3),
                dims: vec![Some(10_000)],
            },
        );
        let v = decode(&t, &[1u8; 10_000], 31);
        assert!(v.is_truncated());
        assert_eq!(v.elements().unwrap().len(), MAX_ELEMENTS as usize);
        let json = v.to_json();
        assert_eq!(json["total"], 10_000);
        assert_eq!(json["truncated"], true);
    }

    #[test]
    fn short_or_damaged_input_is_unreadable_not_a_panic() {
        let mut t = table();
        assert!(matches!(decode(&t, &[1, 2], 1), Value::Unreadable(_)));
        assert!(matches!(decode(&t, &[], 999), Value::Unreadable(_)));
        // A typedef cycle.
        t.insert(
            40,
            Type::Typedef {
                name: "a".into(),
                target: Some(41),
            },
        );
        t.insert(
            41,
            Type::Typedef {
                name: "b".into(),
                target: Some(40),
            },
        );
        assert!(matches!(decode(&t, &[0; 4], 40), Value::Unreadable(_)));
        // A struct containing an array of itself (damaged DWARF).
        t.insert(
            42,
            Type::Struct {
                name: None,
                size: Some(4),
                members: vec![member("me", 0, 43)],
                is_union: false,
            },
        );
        t.insert(
            43,
            Type::Array {
                element: Some(42),
                dims: vec![Some(1)],
            },
        );
        let _ = decode(&t, &[0; 4], 42);
        // A huge 2-D array stays within the value budget.
        t.insert(
            44,
            Type::Array {
                element: Some(3),
                dims: vec![Some(4096), Some(4096)],
            },
        );
        let v = decode(&t, &[0; 64], 44);
        assert!(v.elements().unwrap().len() <= MAX_ELEMENTS as usize);
    }

    #[test]
    fn json_forms() {
        let v = Value::Struct(vec![
            ("p".into(), Value::Pointer(16)),
            (
                "e".into(),
                Value::Enum {
                    name: Some("LOAD".into()),
                    value: 1,
                },
            ),
            ("u".into(), Value::Unreadable("why".into())),
        ]);
        assert_eq!(
            v.to_json(),
            serde_json::json!({"p": 16, "e": {"enum": "LOAD", "value": 1}, "u": {"unreadable": "why"}})
        );
    }

    #[test]
    fn c_strings() {
        let mut m = memlife_testkit::ram::at(0, b"\0conv1\0abcdefgh".to_vec());
        assert_eq!(read_c_string(&mut m, 1, 32).as_deref(), Some("conv1"));
        // Runs to the end of memory without a NUL: the bytes up to the failure are not a string.
        assert_eq!(read_c_string(&mut m, 7, 32), None);
        assert_eq!(read_c_string(&mut m, 7, 4).as_deref(), Some("abcd"));
        assert_eq!(read_c_string(&mut m, 0, 4), None);
        assert_eq!(read_c_string(&mut m, 100, 4), None);
    }

    #[test]
    fn similar_names() {
        assert!(is_similar("g_tensors", "g_tensor"), "one edit");
        assert!(is_similar("g_Tensor", "g_tensro"), "two edits, any case");
        assert!(is_similar("g_tensor_arena", "tensor"), "contains");
        assert!(!is_similar("g_engine", "xstart"));
        assert!(
            !is_similar("ab", "abc_def"),
            "too short to count as contained"
        );
        let long = "x".repeat(70);
        assert!(
            !is_similar(&format!("{long}a"), &format!("{long}b")),
            "long names"
        );
    }
}
