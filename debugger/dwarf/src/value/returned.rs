//! A function's return value read from the registers at its return, by its DWARF return type.
//!
//! The Arm procedure call standard (AAPCS) returns a value of up to 4 bytes in `r0` (integers,
//! enums, `_Bool`, pointers, small structs) and an 8-byte integer in `r0:r1`, low word first.
//! A larger struct is written through a pointer the caller passed, so no register holds it, and
//! a float is in `s0` under the hard-float ABI: neither is read from `r0`, and the result says
//! why instead of guessing.

use super::decode::decode;
use super::model::Value;
use crate::Symbols;
use crate::types::{BaseEncoding, Type, TypeId, TypeTable};

/// What a call returned.
#[derive(Debug, Clone, PartialEq)]
pub enum Returned {
    /// The function returns `void`.
    Void,
    /// The value, decoded by the return type (`int` → [`Value::Int`], enum → [`Value::Enum`]...).
    Value(Value),
    /// A return type whose value is not in `r0`/`r1` (named, with the reason).
    NotInRegisters(String),
}

impl std::fmt::Display for Returned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Returned::Void => f.write_str("void"),
            Returned::NotInRegisters(why) => write!(f, "? ({why})"),
            Returned::Value(v) => match v {
                Value::Int(i) => write!(f, "{i}"),
                Value::UInt(u) => write!(f, "{u}"),
                Value::Bool(b) => write!(f, "{b}"),
                Value::Pointer(0) => f.write_str("NULL"),
                Value::Pointer(p) => write!(f, "{p:#010x}"),
                Value::Enum {
                    name: Some(n),
                    value,
                } => write!(f, "{n} ({value})"),
                Value::Enum { name: None, value } => write!(f, "{value}"),
                other => write!(f, "{}", other.to_json()),
            },
        }
    }
}

impl Symbols {
    /// What the function `name` returned, from the registers at its return (`r0`, `r1`; see
    /// [`returned`]); `None` when DWARF does not describe that function.
    pub fn returned(&self, name: &str, r0: u64, r1: u64) -> Option<Returned> {
        self.return_type(name)
            .map(|ty| returned(self.types(), ty, r0, r1))
    }
}

/// Decodes the return value of a function whose DWARF return type is `ty` (`None` = `void`)
/// from `r0` and `r1` at its return.
pub fn returned(types: &TypeTable, ty: Option<TypeId>, r0: u64, r1: u64) -> Returned {
    let Some(ty) = ty else {
        return Returned::Void;
    };
    let name = types.name_of(ty);
    let Some((_, resolved)) = types.resolve(ty) else {
        return Returned::NotInRegisters(format!("{name}: type not in DWARF"));
    };
    let size = types.size_of(ty).unwrap_or(0);
    let in_registers = match resolved {
        Type::Base {
            encoding: BaseEncoding::Float,
            ..
        } => return Returned::NotInRegisters(format!("{name}: floats are returned in s0")),
        Type::Base { .. } | Type::Enum { .. } | Type::Pointer { .. } => size <= 8,
        // Composites of up to 4 bytes come back in r0; larger ones through memory.
        Type::Struct { .. } | Type::Array { .. } => size <= 4,
        Type::Typedef { .. } | Type::Qualified { .. } | Type::Function => false,
    };
    if !in_registers || size == 0 {
        return Returned::NotInRegisters(format!("{name} is returned through memory"));
    }
    // r0 low word first, then r1, as the bytes of the value in little-endian memory.
    let mut bytes = [0u8; 8];
    bytes[..4].copy_from_slice(&(r0 as u32).to_le_bytes());
    bytes[4..].copy_from_slice(&(r1 as u32).to_le_bytes());
    let len = usize::try_from(size).unwrap_or(8).min(8);
    Returned::Value(decode(types, &bytes[..len], ty))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> TypeTable {
        let mut t = TypeTable::default();
        let base = |name: &str, size, encoding| Type::Base {
            name: name.into(),
            size,
            encoding,
        };
        t.insert(1, base("int", 4, BaseEncoding::Signed));
        t.insert(2, base("long long unsigned int", 8, BaseEncoding::Unsigned));
        t.insert(3, base("_Bool", 1, BaseEncoding::Bool));
        t.insert(
            4,
            Type::Pointer {
                target: Some(1),
                size: 4,
            },
        );
        t.insert(
            5,
            Type::Enum {
                name: Some("status".into()),
                size: 4,
                variants: vec![("ST_OK".into(), 0), ("ST_NOMEM".into(), -12)],
            },
        );
        t.insert(
            6,
            Type::Struct {
                name: Some("big".into()),
                size: Some(12),
                members: Vec::new(),
                is_union: false,
            },
        );
        t.insert(7, base("float", 4, BaseEncoding::Float));
        t.insert(
            8,
            Type::Typedef {
                name: "rc_t".into(),
                target: Some(1),
            },
        );
        t
    }

    #[test]
    fn scalars_come_from_r0_and_64_bit_values_from_r0_r1() {
        let t = table();
        let s = |ty, r0, r1| returned(&t, ty, r0, r1).to_string();
        assert_eq!(s(Some(1), 0xFFFF_FFF4, 0x55), "-12");
        assert_eq!(s(Some(8), 0xFFFF_FFF4, 0), "-12", "through a typedef");
        assert_eq!(s(Some(2), 0x1, 0x2), "8589934593");
        assert_eq!(s(Some(3), 1, 0), "true");
        assert_eq!(s(Some(4), 0, 0), "NULL");
        assert_eq!(s(Some(4), 0x2000_0100, 0), "0x20000100");
        assert_eq!(s(Some(5), 0xFFFF_FFF4, 0), "ST_NOMEM (-12)");
        assert_eq!(returned(&t, None, 7, 7), Returned::Void);
    }

    #[test]
    fn values_outside_r0_r1_are_not_guessed() {
        let t = table();
        assert!(matches!(
            returned(&t, Some(6), 0, 0),
            Returned::NotInRegisters(_)
        ));
        assert!(matches!(
            returned(&t, Some(7), 0, 0),
            Returned::NotInRegisters(_)
        ));
        assert!(matches!(
            returned(&t, Some(99), 0, 0),
            Returned::NotInRegisters(_)
        ));
    }
}
