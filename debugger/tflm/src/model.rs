//! The few fields of the TFLite model schema (schema version 3) a tensor plan needs, read with
//! [`crate::flatbuffer`]: the first subgraph's tensors (shape, type, buffer, name, variable),
//! its inputs and outputs, its operators in execution order (opcode, inputs, outputs), and the
//! operator codes. Field numbers are the schema's (docs/tflm.md); every count is capped.

use crate::flatbuffer::{Fb, Table};

/// At most this many tensors and operators are read from one model.
pub(crate) const MAX_ENTRIES: u32 = 16_384;
/// At most this many inputs or outputs per operator, and dimensions per tensor.
const MAX_LIST: u32 = 256;
/// Names are cut at this many bytes.
const MAX_NAME: u32 = 128;

/// A tensor as the model declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModelTensor {
    pub name: Option<String>,
    /// `TensorType` as stored.
    pub tensor_type: i64,
    pub shape: Vec<i32>,
    /// Its buffer holds data (weights, constants): the tensor is read-only.
    pub has_data: bool,
    pub is_variable: bool,
}

/// An operator as the model lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModelOperator {
    pub opcode_index: u32,
    pub inputs: Vec<i32>,
    pub outputs: Vec<i32>,
}

/// An operator code: the builtin code (the larger of the deprecated 8-bit field and the 32-bit
/// one, as TFLM reads it) and the custom code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OperatorCode {
    pub builtin: i64,
    pub custom: Option<String>,
}

/// The first subgraph of a model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Model {
    pub tensors: Vec<ModelTensor>,
    pub inputs: Vec<i32>,
    pub outputs: Vec<i32>,
    pub operators: Vec<ModelOperator>,
    pub codes: Vec<OperatorCode>,
    /// Subgraphs in the model (only the first is read).
    pub subgraphs: u32,
}

// Field numbers of the schema's tables.
const MODEL_OPERATOR_CODES: u16 = 1;
const MODEL_SUBGRAPHS: u16 = 2;
const MODEL_BUFFERS: u16 = 4;
const CODE_DEPRECATED_BUILTIN: u16 = 0;
const CODE_CUSTOM: u16 = 1;
const CODE_BUILTIN: u16 = 3;
const SUBGRAPH_TENSORS: u16 = 0;
const SUBGRAPH_INPUTS: u16 = 1;
const SUBGRAPH_OUTPUTS: u16 = 2;
const SUBGRAPH_OPERATORS: u16 = 3;
const TENSOR_SHAPE: u16 = 0;
const TENSOR_TYPE: u16 = 1;
const TENSOR_BUFFER: u16 = 2;
const TENSOR_NAME: u16 = 3;
const TENSOR_IS_VARIABLE: u16 = 5;
const OPERATOR_OPCODE: u16 = 0;
const OPERATOR_INPUTS: u16 = 1;
const OPERATOR_OUTPUTS: u16 = 2;
const BUFFER_DATA: u16 = 0;
const BUFFER_SIZE: u16 = 2;

/// Reads the model whose root table is at `model` (what `tflite::GetModel` returns, the
/// `model_` of an interpreter). `None` when its subgraph or lists cannot be read.
pub(crate) fn read(fb: &mut Fb<'_, '_>, model: u64) -> Option<Model> {
    let root = fb.table(model)?;
    let subgraphs = fb.vector(root, MODEL_SUBGRAPHS, 4)?;
    let sg = fb.table_at(subgraphs, 0)?;
    let buffers = fb.vector(root, MODEL_BUFFERS, 4);
    let tensors_v = fb.vector(sg, SUBGRAPH_TENSORS, 4)?;
    let mut tensors = Vec::new();
    for i in 0..tensors_v.len.min(MAX_ENTRIES) {
        let t = fb.table_at(tensors_v, i)?;
        tensors.push(tensor(fb, t, buffers)?);
    }
    let list = |fb: &mut Fb<'_, '_>, t: Table, f: u16| -> Option<Vec<i32>> {
        match fb.vector(t, f, 4) {
            Some(v) => fb.i32s(v, MAX_LIST),
            None => Some(Vec::new()),
        }
    };
    let inputs = list(fb, sg, SUBGRAPH_INPUTS)?;
    let outputs = list(fb, sg, SUBGRAPH_OUTPUTS)?;
    let ops_v = fb.vector(sg, SUBGRAPH_OPERATORS, 4)?;
    let mut operators = Vec::new();
    for i in 0..ops_v.len.min(MAX_ENTRIES) {
        let op = fb.table_at(ops_v, i)?;
        operators.push(ModelOperator {
            opcode_index: u32::try_from(fb.uint(op, OPERATOR_OPCODE, 4, 0)?).ok()?,
            inputs: list(fb, op, OPERATOR_INPUTS)?,
            outputs: list(fb, op, OPERATOR_OUTPUTS)?,
        });
    }
    let mut codes = Vec::new();
    if let Some(v) = fb.vector(root, MODEL_OPERATOR_CODES, 4) {
        for i in 0..v.len.min(MAX_ENTRIES) {
            let Some(c) = fb.table_at(v, i) else { break };
            let deprecated = fb.int(c, CODE_DEPRECATED_BUILTIN, 1, 0).unwrap_or(0);
            let builtin = fb.int(c, CODE_BUILTIN, 4, 0).unwrap_or(0);
            codes.push(OperatorCode {
                builtin: deprecated.max(builtin),
                custom: fb.string(c, CODE_CUSTOM, MAX_NAME),
            });
        }
    }
    Some(Model {
        tensors,
        inputs,
        outputs,
        operators,
        codes,
        subgraphs: subgraphs.len,
    })
}

fn tensor(
    fb: &mut Fb<'_, '_>,
    t: Table,
    buffers: Option<crate::flatbuffer::Vector>,
) -> Option<ModelTensor> {
    let shape = match fb.vector(t, TENSOR_SHAPE, 4) {
        Some(v) => fb.i32s(v, MAX_LIST)?,
        None => Vec::new(),
    };
    let buffer = u32::try_from(fb.uint(t, TENSOR_BUFFER, 4, 0)?).ok()?;
    // Buffer 0 is the schema's empty sentinel; a buffer with data (or, in large models, an
    // offset and size outside the flatbuffer) holds constants.
    let has_data = buffer != 0
        && buffers
            .and_then(|v| fb.table_at(v, buffer))
            .is_some_and(|b| {
                fb.vector(b, BUFFER_DATA, 1).is_some_and(|d| d.len > 0)
                    || fb.uint(b, BUFFER_SIZE, 8, 0).is_some_and(|s| s > 0)
            });
    Some(ModelTensor {
        name: fb.string(t, TENSOR_NAME, MAX_NAME),
        tensor_type: fb.int(t, TENSOR_TYPE, 1, 0)?,
        shape,
        has_data,
        is_variable: fb.uint(t, TENSOR_IS_VARIABLE, 1, 0)? != 0,
    })
}

/// The schema's name of a `TensorType` and its element size in bytes (`None` where the element
/// has no fixed size: strings, resources, variants, packed 4-bit).
pub(crate) fn tensor_type(t: i64) -> (&'static str, Option<u64>) {
    match t {
        0 => ("float32", Some(4)),
        1 => ("float16", Some(2)),
        2 => ("int32", Some(4)),
        3 => ("uint8", Some(1)),
        4 => ("int64", Some(8)),
        5 => ("string", None),
        6 => ("bool", Some(1)),
        7 => ("int16", Some(2)),
        8 => ("complex64", Some(8)),
        9 => ("int8", Some(1)),
        10 => ("float64", Some(8)),
        11 => ("complex128", Some(16)),
        12 => ("uint64", Some(8)),
        13 => ("resource", None),
        14 => ("variant", None),
        15 => ("uint32", Some(4)),
        16 => ("uint16", Some(2)),
        17 => ("int4", None),
        18 => ("bfloat16", Some(2)),
        _ => ("unknown", None),
    }
}

impl ModelTensor {
    /// Bytes of the tensor's data: elements times element size; `None` for a negative
    /// (dynamic) dimension, a type without a fixed size, or an overflow.
    pub(crate) fn bytes(&self) -> Option<u64> {
        let elem = tensor_type(self.tensor_type).1?;
        self.shape
            .iter()
            .try_fold(elem, |acc, &d| acc.checked_mul(u64::try_from(d).ok()?))
    }
}
