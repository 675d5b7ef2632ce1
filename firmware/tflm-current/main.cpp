// main.cpp - the application of the current-TFLM model firmware (micro_model.h: OUR MODEL of
// current TensorFlow Lite Micro's shape, not TFLM). Each cycle builds one interpreter over a
// heap arena (BuildInterpreter: constructor and AllocateTensors), runs it (RunInference:
// Invoke twice) and releases it (ReleaseModel). Four made-up operators with known persistent
// sizes (in their Init and Prepare), temporaries in Prepare and a scratch request; the model
// has five tensors in a chain.
//
// Without ITERATIONS it loops forever (a debugger observes it). With ITERATIONS=N it runs N
// cycles and exits through semihosting: 0 when every build and inference succeeded, 5 when
// AllocateTensors failed (the minimum-arena test's "too small").
#include <cstring>

#include "board/board.h"
#include "heap.h"
#include "micro_model.h"

#ifndef ARENA_BYTES
#define ARENA_BYTES 4096u
#endif

#ifdef TFLM_NAMESPACE_TFLITE
using namespace tflite;
#else
using namespace tflite::micro;
#endif

namespace app {
namespace {

MicroInterpreterContext* Ctx(TfLiteContext* context)
{
    return static_cast<MicroInterpreterContext*>(context->impl_);
}

// The operators' persistent sizes: what their Init and Prepare ask (before alignment).
constexpr size_t kDenseInit = 40, kDensePrepare = 64, kDenseTemp = 96, kDenseScratch = 128;
constexpr size_t kConvInit = 24, kConvPrepare = 200, kConvTemp = 300;
constexpr size_t kMyOpInit = 100;
constexpr size_t kSoftmaxPrepare = 16;

void* DenseInit(TfLiteContext* c, const char*, size_t)
{
    return c->AllocatePersistentBuffer(c, kDenseInit);
}

TfLiteStatus DensePrepare(TfLiteContext* c, TfLiteNode*)
{
    if (c->AllocatePersistentBuffer(c, kDensePrepare) == nullptr) return kTfLiteError;
    uint8_t* temp = Ctx(c)->AllocateTempBuffer(kDenseTemp, 16);
    if (temp == nullptr) return kTfLiteError;
    Ctx(c)->DeallocateTempBuffer(temp);
    int index = 0;
    return c->RequestScratchBufferInArena(c, kDenseScratch, &index);
}

void* ConvInit(TfLiteContext* c, const char*, size_t)
{
    return c->AllocatePersistentBuffer(c, kConvInit);
}

TfLiteStatus ConvPrepare(TfLiteContext* c, TfLiteNode*)
{
    if (c->AllocatePersistentBuffer(c, kConvPrepare) == nullptr) return kTfLiteError;
    uint8_t* temp = Ctx(c)->AllocateTempBuffer(kConvTemp, 16);
    if (temp == nullptr) return kTfLiteError;
    Ctx(c)->DeallocateTempBuffer(temp);
    return kTfLiteOk;
}

void* MyOpInit(TfLiteContext* c, const char*, size_t)
{
    return c->AllocatePersistentBuffer(c, kMyOpInit);
}

TfLiteStatus SoftmaxPrepare(TfLiteContext* c, TfLiteNode*)
{
    return c->AllocatePersistentBuffer(c, kSoftmaxPrepare) == nullptr ? kTfLiteError : kTfLiteOk;
}

// Every operator's inference: a counter, so that Invoke does something observable.
uint32_t g_evaluations;
TfLiteStatus Eval(TfLiteContext*, TfLiteNode*)
{
    ++g_evaluations;
    return kTfLiteOk;
}

const TFLMRegistration kRegistrations[] = {
    {DenseInit, nullptr, DensePrepare, Eval, nullptr, tflite::BuiltinOperator_FULLY_CONNECTED,
     nullptr},
    {ConvInit, nullptr, ConvPrepare, Eval, nullptr, tflite::BuiltinOperator_CONV_2D, nullptr},
    {MyOpInit, nullptr, nullptr, Eval, nullptr, tflite::BuiltinOperator_CUSTOM, "MyOp"},
    {nullptr, nullptr, SoftmaxPrepare, Eval, nullptr, tflite::BuiltinOperator_SOFTMAX, nullptr},
};

class Resolver : public MicroOpResolver {
 public:
    const TFLMRegistration* FindOp(int index) const override
    {
        return index >= 0 && index < 4 ? &kRegistrations[index] : nullptr;
    }
};

// Input t0 -> FULLY_CONNECTED -> t1 -> CONV_2D -> t2 -> MyOp -> t3 -> SOFTMAX -> t4 output.
const int32_t kTensorBytes[] = {64, 48, 128, 32, 16};
const int32_t kOpInputs[] = {0, 1, 2, 3};
const int32_t kOpOutputs[] = {1, 2, 3, 4};
const int32_t kOpIndices[] = {0, 1, 2, 3};

}  // namespace

const tflite::Model g_model = {4, 5, kTensorBytes, kOpInputs, kOpOutputs, kOpIndices};
const Resolver g_resolver;

// The running build, for a debugger.
struct Session {
    uint8_t* arena;
    size_t arena_bytes;
    MicroInterpreter* interpreter;
};
Session g_session;
// What the firmware computes itself after AllocateTensors (arena_used_bytes()), 0 before.
uint32_t g_arena_used_bytes;
uint32_t g_cycle;

__attribute__((noinline)) bool BuildInterpreter(Session& s)
{
    s.arena_bytes = ARENA_BYTES;
    s.arena = new uint8_t[s.arena_bytes];
    s.interpreter = new MicroInterpreter(&g_model, g_resolver, s.arena, s.arena_bytes);
    if (s.interpreter->AllocateTensors() != kTfLiteOk) return false;
    g_arena_used_bytes = static_cast<uint32_t>(s.interpreter->arena_used_bytes());
    return true;
}

__attribute__((noinline)) bool RunInference(Session& s)
{
    for (int i = 0; i < 2; ++i) {
        if (s.interpreter->Invoke() != kTfLiteOk) return false;
    }
    return true;
}

__attribute__((noinline)) void ReleaseModel(Session& s)
{
    delete s.interpreter;
    delete[] s.arena;
    s = {};
}

}  // namespace app

int main()
{
    app::StartHeap();
    for (app::g_cycle = 0;; ++app::g_cycle) {
#ifdef ITERATIONS
        if (app::g_cycle == ITERATIONS) board::ExitOk();
#endif
        const bool built = app::BuildInterpreter(app::g_session);
        const bool ran = built && app::RunInference(app::g_session);
        app::ReleaseModel(app::g_session);
#ifdef ITERATIONS
        if (!built) board::Fail("AllocateTensors failed", board::kExitEngine);
        if (!ran) board::Fail("Invoke failed", board::kExitOutput);
#else
        (void)ran;
#endif
    }
}
