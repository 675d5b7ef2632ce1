//! [`Value`], what a typed read gives: the decoded value of a global as scripts and reports see
//! it, and its JSON form. Apart from `value`'s readers because `decode` builds values and
//! `returned` reads them.

use serde::ser::{SerializeMap, SerializeSeq};

/// A decoded value.
///
/// Serialized (for JSON reports) as the natural JSON value: numbers, booleans, pointers as
/// numbers, structs as objects in declaration order, arrays as arrays. Three cases are objects:
/// an enum is `{"enum": name or null, "value": n}`, a truncated array is
/// `{"elements": [...], "total": n, "truncated": true}`, and an unreadable part is
/// `{"unreadable": reason}`.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A signed integer (also signed `char`).
    Int(i64),
    /// An unsigned integer (also `unsigned char`).
    UInt(u64),
    /// A float or double.
    Float(f64),
    /// A `_Bool`.
    Bool(bool),
    /// A pointer: the address it holds (never followed).
    Pointer(u64),
    /// An enum.
    Enum {
        /// The enumerator whose value this is, if any.
        name: Option<String>,
        /// The value.
        value: i64,
    },
    /// A struct or union: `(field name, value)` in declaration order.
    Struct(Vec<(String, Value)>),
    /// An array (one level per dimension).
    Array {
        /// The elements decoded: all of them, or the first [`MAX_ELEMENTS`](super::MAX_ELEMENTS).
        elements: Vec<Value>,
        /// The declared number of elements (more than `elements.len()` when truncated).
        total: u64,
    },
    /// A part that could not be decoded, and why.
    Unreadable(String),
}

impl Value {
    /// A struct field by name.
    pub fn field(&self, name: &str) -> Option<&Value> {
        match self {
            Value::Struct(fields) => fields.iter().find(|(n, _)| n == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The elements of an array.
    pub fn elements(&self) -> Option<&[Value]> {
        match self {
            Value::Array { elements, .. } => Some(elements),
            _ => None,
        }
    }

    /// Whether this is an array of which only the first elements were decoded.
    pub fn is_truncated(&self) -> bool {
        matches!(self, Value::Array { elements, total } if (elements.len() as u64) < *total)
    }

    /// The value as an unsigned integer: integers that fit, pointers, booleans, enums.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::UInt(v) | Value::Pointer(v) => Some(*v),
            Value::Int(v) | Value::Enum { value: v, .. } => u64::try_from(*v).ok(),
            Value::Bool(b) => Some(u64::from(*b)),
            _ => None,
        }
    }

    /// The value as a signed integer: integers that fit, pointers, booleans, enums.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(v) | Value::Enum { value: v, .. } => Some(*v),
            Value::UInt(v) | Value::Pointer(v) => i64::try_from(*v).ok(),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    /// The value as a float (integers convert).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Float(f) => Some(*f),
            // Precision loss above 2^53 is acceptable for a script's arithmetic.
            Value::Int(v) => Some(*v as f64),
            Value::UInt(v) => Some(*v as f64),
            _ => None,
        }
    }

    /// The value as JSON (see the type's documentation for the form).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Int(v) => s.serialize_i64(*v),
            Value::UInt(v) | Value::Pointer(v) => s.serialize_u64(*v),
            Value::Float(v) => s.serialize_f64(*v),
            Value::Bool(v) => s.serialize_bool(*v),
            Value::Enum { name, value } => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("enum", name)?;
                m.serialize_entry("value", value)?;
                m.end()
            }
            Value::Struct(fields) => {
                let mut m = s.serialize_map(Some(fields.len()))?;
                for (name, value) in fields {
                    m.serialize_entry(name, value)?;
                }
                m.end()
            }
            Value::Array { elements, total } if (elements.len() as u64) < *total => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("elements", elements)?;
                m.serialize_entry("total", total)?;
                m.serialize_entry("truncated", &true)?;
                m.end()
            }
            Value::Array { elements, .. } => {
                let mut seq = s.serialize_seq(Some(elements.len()))?;
                for e in elements {
                    seq.serialize_element(e)?;
                }
                seq.end()
            }
            Value::Unreadable(reason) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("unreadable", reason)?;
                m.end()
            }
        }
    }
}
