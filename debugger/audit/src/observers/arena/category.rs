//! What a persistent allocation holds and when in the build it was made: the category TFLM's
//! `RecordingMicroAllocator` would file it under, told from the function that asked (the
//! allocator's caller, inlined frames included), and the build's stage.
//!
//! | asked by | category |
//! |---|---|
//! | `AllocateTfLiteTensorArray` (the runtime tensors: `TfLiteTensor`s in 2020) | `kTfLiteEvalTensorData` |
//! | `InitializeTfLiteTensorFromFlatbuffer` (quantization parameters) | `kPersistentTfLiteTensorQuantizationData` |
//! | `AllocateNodeAndRegistrations` | `kNodeAndRegistrationArray` |
//! | `ParseOpData`, `BuiltinDataAllocator` (the operators' builtin parameters) | `kOpData` |
//! | `AllocatePersistentBuffer` (kernels' Init and Prepare) | `kPersistentBufferData` |
//! | `AllocateVariables`, or any tail allocation after the plan | `kTfLiteTensorVariableBufferData` |
//! | `RequestScratchBufferInArena` (a request's handle; TFLM records none) | `scratch-buffer-handle` |
//! | the arena allocator object at the top (placed by inlined code) | `arena-allocator` |
//! | a tail move no stop explains | `unattributed` |

/// Categories by a name the asking function's frames contain, first match wins.
const BY_CALLER: [(&str, &str); 8] = [
    ("AllocateTfLiteTensorArray", "kTfLiteEvalTensorData"),
    (
        "InitializeTfLiteTensorFromFlatbuffer",
        "kPersistentTfLiteTensorQuantizationData",
    ),
    ("AllocateNodeAndRegistrations", "kNodeAndRegistrationArray"),
    ("ParseOpData", "kOpData"),
    ("BuiltinDataAllocator", "kOpData"),
    ("AllocatePersistentBuffer", "kPersistentBufferData"),
    ("AllocateVariables", "kTfLiteTensorVariableBufferData"),
    ("RequestScratchBufferInArena", "scratch-buffer-handle"),
];

/// The arena allocator object, placed by `CreateInPlaceSimpleMemoryAllocator`'s inlined call.
pub const ARENA_ALLOCATOR: &str = "arena-allocator";
/// A tail move between stops that no allocator call explains.
pub const UNATTRIBUTED: &str = "unattributed";
/// What the tail holds after the plan: variable tensors.
const VARIABLES: &str = "kTfLiteTensorVariableBufferData";
/// An allocation whose caller is none of the known ones.
const OTHER: &str = "other";

/// When in the build an allocation was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The interpreter's constructor.
    Construct,
    /// `AllocateTensors` before the operators' Init.
    Setup,
    /// An operator's Init.
    Init,
    /// An operator's Prepare.
    Prepare,
    /// After the plan (variables).
    Finish,
}

impl Stage {
    /// As the report names it.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Construct => "construct",
            Stage::Setup => "setup",
            Stage::Init => "init",
            Stage::Prepare => "prepare",
            Stage::Finish => "finish",
        }
    }
}

/// The category of an allocation asked by a function whose frames (innermost first) are
/// `frames`, made at `stage`.
pub fn of(frames: &[String], stage: Stage) -> &'static str {
    let named = BY_CALLER
        .iter()
        .find(|(key, _)| frames.iter().any(|f| f.contains(key)))
        .map(|(_, c)| *c);
    match (named, stage) {
        (Some(c), _) => c,
        (None, Stage::Finish) => VARIABLES,
        (None, _) => OTHER,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_asking_function_names_the_category() {
        let init =
            frames(&["tflite::MicroAllocator::AllocatePersistentBuffer(unsigned int, void**)"]);
        assert_eq!(of(&init, Stage::Init), "kPersistentBufferData");
        // MicroBuiltinDataAllocator::Allocate tail-calls AllocateFromTail: the caller seen is
        // the parser.
        let parse = frames(&["tflite::ParseOpData(...)"]);
        assert_eq!(of(&parse, Stage::Setup), "kOpData");
        // An inlined frame counts as well as the outer one.
        let inlined = frames(&[
            "tflite::(anonymous namespace)::AllocateVariables(...)",
            "tflite::MicroAllocator::FinishTensorAllocation()",
        ]);
        assert_eq!(
            of(&inlined, Stage::Finish),
            "kTfLiteTensorVariableBufferData"
        );
        // No frame names a known caller: after the plan it is a variable, before it "other".
        assert_eq!(
            of(
                &frames(&["tflite::MicroAllocator::FinishTensorAllocation()"]),
                Stage::Finish
            ),
            "kTfLiteTensorVariableBufferData"
        );
        assert_eq!(of(&[], Stage::Prepare), "other");
    }
}
