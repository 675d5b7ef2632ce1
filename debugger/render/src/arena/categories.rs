//! A tail category's palette kind and colour: the table in the arena module's docs.

use crate::palette::{Kind, kind_colour};

/// The palette kind a tail category is drawn in (the module's table).
pub fn category_kind(category: &str) -> Kind {
    match category {
        "kOpData" | "kNodeAndRegistrationArray" | "kPersistentBufferData" => Kind::Context,
        "kPersistentTfLiteTensorQuantizationData" => Kind::Relayout,
        "kTfLiteEvalTensorData" | "kTfLiteTensorVariableBufferData" | "arena-allocator" => {
            Kind::Pool
        }
        _ => Kind::Transient,
    }
}

/// The colour of a tail category.
pub fn category_colour(category: &str) -> &'static str {
    kind_colour(category_kind(category))
}
