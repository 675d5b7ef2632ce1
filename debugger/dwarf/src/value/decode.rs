//! Decoding a value's bytes by its DWARF type, on the host: pure and bounded (see the parent
//! module for the rules).

use super::model::Value;
use crate::types::{BaseEncoding, Member, Type, TypeId, TypeTable};

/// Elements decoded per array dimension at most; longer arrays are truncated, and say so.
pub const MAX_ELEMENTS: u64 = 4096;
/// Values (nodes) decoded per read at most.
pub const MAX_VALUES: usize = 65_536;
/// Nesting depth decoded at most (damaged DWARF can describe a struct that contains itself).
pub(super) const MAX_DEPTH: usize = 32;

/// Decodes `bytes` (the start of an object of type `type_id`) on the host. Parts beyond
/// `bytes` become [`Value::Unreadable`].
pub fn decode(types: &TypeTable, bytes: &[u8], type_id: TypeId) -> Value {
    let mut d = Decoder {
        types,
        bytes,
        budget: MAX_VALUES,
    };
    d.value(Some(type_id), 0, 0)
}

struct Decoder<'a> {
    types: &'a TypeTable,
    bytes: &'a [u8],
    budget: usize,
}

impl Decoder<'_> {
    fn slice(&self, offset: u64, len: u64) -> Option<&[u8]> {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        self.bytes.get(start..end)
    }

    fn beyond(&self, offset: u64) -> Value {
        Value::Unreadable(format!(
            "offset {offset} lies beyond the {} bytes read",
            self.bytes.len()
        ))
    }

    fn value(&mut self, type_id: Option<TypeId>, offset: u64, depth: usize) -> Value {
        if self.budget == 0 {
            return Value::Unreadable(format!("value too large (more than {MAX_VALUES} parts)"));
        }
        self.budget -= 1;
        if depth > MAX_DEPTH {
            return Value::Unreadable("nested too deeply".into());
        }
        let Some(type_id) = type_id else {
            return Value::Unreadable("void".into());
        };
        let Some((id, ty)) = self.types.resolve(type_id) else {
            return Value::Unreadable(format!("unknown type <{type_id:#x}>"));
        };
        match ty {
            Type::Base { size, encoding, .. } => match self.slice(offset, *size) {
                Some(b) => base(b, *encoding),
                None => self.beyond(offset),
            },
            Type::Pointer { size, .. } => match self.slice(offset, *size) {
                Some(b) if b.len() <= 8 => Value::Pointer(le(b)),
                Some(_) => Value::Unreadable(format!("{size}-byte pointer")),
                None => self.beyond(offset),
            },
            Type::Enum { size, variants, .. } => match self.slice(offset, *size) {
                Some(b) if b.len() <= 8 => enumerator(le(b), b.len() as u32 * 8, variants),
                Some(_) => Value::Unreadable(format!("{size}-byte enum")),
                None => self.beyond(offset),
            },
            Type::Struct {
                size: None, name, ..
            } => Value::Unreadable(format!(
                "incomplete type struct {}",
                name.as_deref().unwrap_or("<anonymous>")
            )),
            Type::Struct { members, .. } => {
                let mut fields = Vec::with_capacity(members.len());
                self.members(members, offset, depth, &mut fields);
                Value::Struct(fields)
            }
            Type::Array { element, dims } => self.array(*element, dims, offset, depth),
            Type::Function => Value::Unreadable("a function".into()),
            Type::Typedef { .. } | Type::Qualified { .. } => {
                Value::Unreadable(format!("unresolved type <{id:#x}>"))
            }
        }
    }

    fn members(
        &mut self,
        members: &[Member],
        offset: u64,
        depth: usize,
        fields: &mut Vec<(String, Value)>,
    ) {
        for (i, m) in members.iter().enumerate() {
            let at = offset.saturating_add(m.offset);
            let value = if let Some(bits) = m.bit_size {
                self.bit_field(m, offset, bits)
            } else if m.name.is_none() {
                // An anonymous struct or union: its members belong to the parent.
                if let Some((_, Type::Struct { members: inner, .. })) =
                    m.type_id.and_then(|t| self.types.resolve(t))
                    && depth < MAX_DEPTH
                {
                    self.members(inner, at, depth + 1, fields);
                    continue;
                }
                self.value(m.type_id, at, depth + 1)
            } else {
                self.value(m.type_id, at, depth + 1)
            };
            let name = m.name.clone().unwrap_or_else(|| format!("_{i}"));
            fields.push((name, value));
        }
    }

    /// A bit field: `bits` wide, starting `m.offset * 8 + m.bit_offset` bits into the struct.
    fn bit_field(&mut self, m: &Member, struct_offset: u64, bits: u64) -> Value {
        self.budget = self.budget.saturating_sub(1);
        if bits == 0 || bits > 64 {
            return Value::Unreadable(format!("{bits}-bit field"));
        }
        let Some(start) = struct_offset
            .checked_add(m.offset)
            .and_then(|o| o.checked_mul(8))
            .and_then(|o| o.checked_add(m.bit_offset.unwrap_or(0)))
        else {
            return Value::Unreadable("bit field offset overflows".into());
        };
        let first = start / 8;
        let shift = start % 8;
        let len = (shift + bits).div_ceil(8);
        let Some(b) = self.slice(first, len) else {
            return self.beyond(first);
        };
        let mut raw: u128 = 0;
        for (i, byte) in b.iter().enumerate() {
            raw |= u128::from(*byte) << (8 * i);
        }
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        // Truncation to u64 keeps exactly the field's bits (masked).
        let raw = ((raw >> shift) as u64) & mask;
        // bits is in 1..=64 here.
        let bits = bits as u32;
        match m
            .type_id
            .and_then(|t| self.types.resolve(t))
            .map(|(_, t)| t)
        {
            Some(Type::Base { encoding, .. }) => match encoding {
                BaseEncoding::Signed => Value::Int(sign_extend(raw, bits)),
                BaseEncoding::Bool => Value::Bool(raw != 0),
                _ => Value::UInt(raw),
            },
            Some(Type::Enum { variants, .. }) => enumerator(raw, bits, variants),
            _ => Value::UInt(raw),
        }
    }

    fn array(
        &mut self,
        element: Option<TypeId>,
        dims: &[Option<u64>],
        offset: u64,
        depth: usize,
    ) -> Value {
        let Some((first, rest)) = dims.split_first() else {
            // `T x[]` with no subrange at all.
            return Value::Unreadable("array of unknown length".into());
        };
        let Some(total) = *first else {
            return Value::Unreadable("array of unknown length".into());
        };
        let elem_size = element.and_then(|e| self.types.size_of(e));
        let stride = elem_size.and_then(|s| {
            rest.iter()
                .try_fold(s, |acc, d| d.and_then(|d| acc.checked_mul(d)))
        });
        let Some(stride) = stride else {
            return Value::Unreadable("array of elements of unknown size".into());
        };
        let mut elements = Vec::new();
        for i in 0..total.min(MAX_ELEMENTS) {
            if self.budget == 0 {
                elements.push(Value::Unreadable(format!(
                    "value too large (more than {MAX_VALUES} parts)"
                )));
                break;
            }
            let Some(at) = i.checked_mul(stride).and_then(|o| o.checked_add(offset)) else {
                break;
            };
            let v = if rest.is_empty() {
                self.value(element, at, depth + 1)
            } else {
                self.budget = self.budget.saturating_sub(1);
                self.array(element, rest, at, depth + 1)
            };
            elements.push(v);
        }
        Value::Array { elements, total }
    }
}

fn le(b: &[u8]) -> u64 {
    b.iter()
        .take(8)
        .enumerate()
        .fold(0, |acc, (i, byte)| acc | u64::from(*byte) << (8 * i))
}

fn sign_extend(raw: u64, bits: u32) -> i64 {
    if bits == 0 || bits >= 64 {
        return raw as i64;
    }
    let shift = 64 - bits;
    ((raw << shift) as i64) >> shift
}

fn base(b: &[u8], encoding: BaseEncoding) -> Value {
    let size = b.len();
    match encoding {
        BaseEncoding::Float => match size {
            4 => Value::Float(f64::from(f32::from_bits(le(b) as u32))),
            8 => Value::Float(f64::from_bits(le(b))),
            n => Value::Unreadable(format!("{n}-byte float")),
        },
        _ if size == 0 || size > 8 => Value::Unreadable(format!("{size}-byte integer")),
        BaseEncoding::Signed => Value::Int(sign_extend(le(b), size as u32 * 8)),
        BaseEncoding::Bool => Value::Bool(le(b) != 0),
        BaseEncoding::Unsigned | BaseEncoding::Other => Value::UInt(le(b)),
    }
}

/// An enum value of `bits` width: matched against the enumerators both sign-extended and as
/// the raw unsigned bits (enums with an unsigned underlying type and large enumerators).
fn enumerator(raw: u64, bits: u32, variants: &[(String, i64)]) -> Value {
    let signed = sign_extend(raw, bits);
    let mask = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    match variants
        .iter()
        .find(|(_, v)| *v == signed || (*v as u64) & mask == raw)
    {
        Some((name, v)) => Value::Enum {
            name: Some(name.clone()),
            value: *v,
        },
        None => Value::Enum {
            name: None,
            value: signed,
        },
    }
}
