//! What a persistent allocation holds and when in the build it was made: the category TFLM's
//! `RecordingMicroAllocator` would file it under, told from the function that asked (the
//! allocator's caller, inlined frames included), and the build's stage.
//!
//! | asked by | category |
//! |---|---|
//! | `AllocateTfLiteTensorArray` (the runtime tensors: `TfLiteTensor`s in 2020), `AllocateTfLiteEvalTensors` (current) | `kTfLiteEvalTensorData` |
//! | `AllocatePersistentTfLiteTensor` (current: the input and output `TfLiteTensor`s) | `kPersistentTfLiteTensorData` |
//! | `InitializeTfLiteTensorFromFlatbuffer` (quantization parameters) | `kPersistentTfLiteTensorQuantizationData` |
//! | `AllocateNodeAndRegistrations` | `kNodeAndRegistrationArray` |
//! | `ParseOpData`, `BuiltinDataAllocator`, `PrepareNodeAndRegistrationDataFromFlatbuffer` (the operators' builtin parameters) | `kOpData` |
//! | `AllocatePersistentBuffer` (kernels' Init and Prepare) | `kPersistentBufferData` |
//! | `AllocateVariables`, or any tail allocation after the plan | `kTfLiteTensorVariableBufferData` |
//! | `RequestScratchBufferInArena` (a request's handle; TFLM records none), `AllocateScratchBufferHandles` (current) | `scratch-buffer-handle` |
//! | the arena allocator object at the top (placed by inlined code) | `arena-allocator` |
//! | a tail move no stop explains | `unattributed` |
//!
//! Current TFLM's kernels reach the tail through a chain of calls the compiler turns into tail
//! calls (the context's C entry point, the context, the `MicroAllocator`): the caller seen is
//! then the kernel or the operator loop. There, an allocation no frame names is a kernel's
//! `kPersistentBufferData` in Init and Prepare, and after the plan the interpreter's own
//! (the input and output tensor arrays, through `MicroAllocator::AllocatePersistentBuffer`).

/// Categories by a name the asking function's frames contain, first match wins.
const BY_CALLER: [(&str, &str); 12] = [
    ("AllocateTfLiteTensorArray", "kTfLiteEvalTensorData"),
    ("AllocateTfLiteEvalTensors", "kTfLiteEvalTensorData"),
    (
        "AllocatePersistentTfLiteTensor",
        "kPersistentTfLiteTensorData",
    ),
    (
        "InitializeTfLiteTensorFromFlatbuffer",
        "kPersistentTfLiteTensorQuantizationData",
    ),
    ("AllocateNodeAndRegistrations", "kNodeAndRegistrationArray"),
    ("ParseOpData", "kOpData"),
    ("BuiltinDataAllocator", "kOpData"),
    ("PrepareNodeAndRegistrationDataFromFlatbuffer", "kOpData"),
    ("AllocatePersistentBuffer", "kPersistentBufferData"),
    ("AllocateVariables", "kTfLiteTensorVariableBufferData"),
    ("RequestScratchBufferInArena", "scratch-buffer-handle"),
    ("AllocateScratchBufferHandles", "scratch-buffer-handle"),
];

/// The arena allocator object, placed by `CreateInPlaceSimpleMemoryAllocator`'s inlined call.
pub const ARENA_ALLOCATOR: &str = "arena-allocator";
/// A tail move between stops that no allocator call explains.
pub const UNATTRIBUTED: &str = "unattributed";
/// What the tail holds after the plan: variable tensors (2020).
const VARIABLES: &str = "kTfLiteTensorVariableBufferData";
/// Kernels' persistent buffers, and current TFLM's own after the plan.
const PERSISTENT_BUFFER: &str = "kPersistentBufferData";
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
/// `frames`, made at `stage`, in current TFLM (`current`) or 2020's.
pub fn of(frames: &[String], stage: Stage, current: bool) -> &'static str {
    let named = BY_CALLER
        .iter()
        .find(|(key, _)| frames.iter().any(|f| f.contains(key)))
        .map(|(_, c)| *c);
    match (named, stage, current) {
        (Some(c), _, _) => c,
        (None, Stage::Init | Stage::Prepare | Stage::Finish, true) => PERSISTENT_BUFFER,
        (None, Stage::Finish, false) => VARIABLES,
        (None, _, _) => OTHER,
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
        assert_eq!(of(&init, Stage::Init, false), "kPersistentBufferData");
        // MicroBuiltinDataAllocator::Allocate tail-calls AllocateFromTail: the caller seen is
        // the parser.
        let parse = frames(&["tflite::ParseOpData(...)"]);
        assert_eq!(of(&parse, Stage::Setup, false), "kOpData");
        // An inlined frame counts as well as the outer one.
        let inlined = frames(&[
            "tflite::(anonymous namespace)::AllocateVariables(...)",
            "tflite::MicroAllocator::FinishTensorAllocation()",
        ]);
        assert_eq!(
            of(&inlined, Stage::Finish, false),
            "kTfLiteTensorVariableBufferData"
        );
        // No frame names a known caller: after the plan it is a variable, before it "other".
        assert_eq!(
            of(
                &frames(&["tflite::MicroAllocator::FinishTensorAllocation()"]),
                Stage::Finish,
                false
            ),
            "kTfLiteTensorVariableBufferData"
        );
        assert_eq!(of(&[], Stage::Prepare, false), "other");
    }

    #[test]
    fn current_tflm_kernels_seen_through_tail_calls_are_persistent_buffers() {
        // The kernel's call reached the allocator by tail calls: the loop is the caller seen.
        let seen = frames(&["tflite::micro::MicroInterpreterGraph::InitSubgraphs()"]);
        assert_eq!(of(&seen, Stage::Init, true), "kPersistentBufferData");
        assert_eq!(of(&seen, Stage::Init, false), "other");
        let after_plan = frames(&["tflite::micro::MicroInterpreter::AllocateTensors()"]);
        assert_eq!(
            of(&after_plan, Stage::Finish, true),
            "kPersistentBufferData"
        );
        let eval = frames(&[
            "tflite::micro::MicroAllocator::AllocateTfLiteEvalTensors(tflite::Model const*, tflite::micro::SubgraphAllocations*)",
        ]);
        assert_eq!(of(&eval, Stage::Setup, true), "kTfLiteEvalTensorData");
        let params = frames(&[
            "tflite::micro::MicroInterpreter::PrepareNodeAndRegistrationDataFromFlatbuffer()",
        ]);
        assert_eq!(of(&params, Stage::Setup, true), "kOpData");
        assert_eq!(of(&[], Stage::Setup, true), "other");
    }
}
