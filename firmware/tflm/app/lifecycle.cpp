// lifecycle.cpp - lifecycle.h.
#include "lifecycle.h"

#include <cstring>
#include <new>

#include "firmware_view.h"
#include "scenario.h"
#include "tensorflow/lite/schema/schema_generated.h"
#include "tensorflow/lite/version.h"

namespace app {

Session* g_session;
tflite::MicroErrorReporter g_error_reporter;
uint32_t g_build_failures;

namespace {

// micro_speech's arena in the arena-tight build: below what AllocateTensors needs.
constexpr size_t kTightMicroSpeechArena = 6144;
// micro_speech's arena in the scratch build: room for the 7840-byte scratch buffer next to
// the activations live at node 0.
constexpr size_t kScratchMicroSpeechArena = 16384;

// shared-tensor: hello_world's middle dense layer (node 2: dense_3, after QUANTIZE and
// dense_2) is made to write its output over its input, to "save" one activation buffer.
// Both are live at node 2: the output overwrites the input while the layer still reads it.
constexpr int kInPlaceNode = 2;

__attribute__((noinline)) void ShareActivationBuffer(tflite::MicroInterpreter& interpreter)
{
    const TfLiteNode node = interpreter.node_and_registration(kInPlaceNode).node;
    TfLiteTensor* input = interpreter.tensor(node.inputs->data[0]);
    TfLiteTensor* output = interpreter.tensor(node.outputs->data[0]);
    if (input == nullptr || output == nullptr || output->bytes > input->bytes) return;
    output->data.raw = input->data.raw;
}

}  // namespace

size_t ArenaBytesFor(const ModelSpec& spec)
{
    if (scenario::kArenaFromCommandLine) return scenario::kArenaBytes;
    if (scenario::kArenaRoomy) return spec.arena_bytes * scenario::kRoomyFactor;
    if (&spec == &kModels[kMicroSpeech]) {
        if (scenario::kArenaTight) return kTightMicroSpeechArena;
        if (scenario::kScratch) return kScratchMicroSpeechArena;
    }
    return spec.arena_bytes;
}

__attribute__((noinline)) Session* LoadModel(const ModelSpec& spec)
{
    Session* session = new Session();
    session->spec = &spec;
    // As if read from a file: the flatbuffer is used where it lands in RAM.
    session->model_file_bytes = static_cast<size_t>(spec.file_end - spec.file);
    session->model_file = new uint8_t[session->model_file_bytes];
    std::memcpy(session->model_file, spec.file, session->model_file_bytes);
    if (tflite::GetModel(session->model_file)->version() != TFLITE_SCHEMA_VERSION) {
        ReleaseModel(session);
        return nullptr;
    }
    return session;
}

__attribute__((noinline)) bool BuildInterpreter(Session& session)
{
    // ::new and ::delete: MicroMutableOpResolver's own operator delete (private, from
    // TF_LITE_REMOVE_VIRTUAL_DELETE) frees nothing.
    session.resolver = ::new OpResolver(&g_error_reporter);
    if (session.spec->add_ops(*session.resolver) != kTfLiteOk) return false;
    session.arena_bytes = ArenaBytesFor(*session.spec);
    session.arena = new uint8_t[session.arena_bytes];
    session.interpreter =
        new tflite::MicroInterpreter(tflite::GetModel(session.model_file), *session.resolver,
                                     session.arena, session.arena_bytes, &g_error_reporter);
    if (session.interpreter->AllocateTensors() != kTfLiteOk) return false;
    if (scenario::kSharedTensor && session.spec == &kModels[kHelloWorld]) {
        ShareActivationBuffer(*session.interpreter);
    }
    if (scenario::kFirmwareView) CaptureFirmwareView(session);
    return true;
}

__attribute__((noinline)) int RunInference(Session& session)
{
    const ModelSpec& spec = *session.spec;
    tflite::MicroInterpreter& interpreter = *session.interpreter;
    int correct = 0;
    for (int i = 0; i < spec.sample_count; ++i) {
        if (!spec.set_input(interpreter, i)) return -1;
        if (interpreter.Invoke() != kTfLiteOk) return -1;
        if (spec.output_ok(interpreter, i)) ++correct;
    }
    return correct;
}

__attribute__((noinline)) void ReleaseModel(Session* session)
{
    if (session == nullptr) return;
    delete session->interpreter;  // runs the kernels' free callbacks
    delete[] session->arena;
    ::delete session->resolver;
    delete[] session->model_file;
    delete session;
}

__attribute__((noinline)) void HandleBuildFailure(Session* session)
{
    ++g_build_failures;
    ReleaseModel(session);
}

}  // namespace app
