// main.cpp - the device loop of the TFLM firmware: one model per cycle, in turn hello_world,
// micro_speech, magic_wand (the model switch), each through LoadModel, BuildInterpreter,
// RunInference and ReleaseModel (lifecycle.h). The arena build (`make tflm-arena`) runs its
// one model only.
//
// Without ITERATIONS it loops forever and makes no semihosting call (a debugger observes
// it). With ITERATIONS=N it runs N cycles, checks every build's outcome, every output and
// the heap after every release, prints one line and exits through semihosting.
#include <cstring>

#include "board/board.h"
#include "heap.h"
#include "lifecycle.h"
#include "models.h"
#include "scenario.h"

namespace app {
namespace {

struct CycleOutcome {
    bool loaded = false;
    bool built = false;
    int correct = 0;  // samples whose output was right; -1: Invoke failed
};

#ifdef TFLM_ARENA_MODEL
const ModelSpec* ArenaModel()
{
    for (const ModelSpec& spec : kModels) {
        if (std::strcmp(spec.name, TFLM_ARENA_MODEL) == 0) return &spec;
    }
    return nullptr;
}
#endif

const ModelSpec& ModelForCycle(uint32_t cycle)
{
#ifdef TFLM_ARENA_MODEL
    static const ModelSpec* const only = ArenaModel();
    if (only == nullptr) board::Fail("unknown model " TFLM_ARENA_MODEL, board::kExitEngine);
    (void)cycle;
    return *only;
#else
    return kModels[cycle % kModelCount];
#endif
}

}  // namespace

// The index of the running cycle's model, for a debugger.
uint32_t g_cycle;

__attribute__((noinline)) CycleOutcome RunCycle(const ModelSpec& spec)
{
    CycleOutcome outcome;
    Session* session = LoadModel(spec);
    if (session == nullptr) return outcome;
    outcome.loaded = true;
    g_session = session;
    if (!BuildInterpreter(*session)) {
        g_session = nullptr;
        HandleBuildFailure(session);
        return outcome;
    }
    outcome.built = true;
    outcome.correct = RunInference(*session);
    g_session = nullptr;
    ReleaseModel(session);
    return outcome;
}

#ifdef ITERATIONS
namespace {

// op-leak: one NodeProfile (12 B) per micro_speech build, an 8-byte heap_4 header and
// rounding to 8: 24 bytes.
constexpr uint32_t kLeakPerMicroSpeechBuild = 24;

bool BuildShouldFail(const ModelSpec& spec)
{
    return scenario::kArenaTight && &spec == &kModels[kMicroSpeech];
}

bool OutputsChecked(const ModelSpec& spec)
{
    return !(scenario::kSharedTensor && &spec == &kModels[kHelloWorld]);
}

uint32_t ExpectedLeak(const ModelSpec& spec)
{
    return scenario::kOpLeak && &spec == &kModels[kMicroSpeech] ? kLeakPerMicroSpeechBuild : 0;
}

// " <model> <right>/<samples>", or " <model> build failed".
void PrintModelLine(const ModelSpec& spec, const CycleOutcome& outcome)
{
    board::Print(" ");
    board::Print(spec.name);
    if (!outcome.built) {
        board::Print(" build failed");
        return;
    }
    board::Print(" ");
    board::PrintDec(static_cast<uint32_t>(outcome.correct));
    board::Print("/");
    board::PrintDec(static_cast<uint32_t>(spec.sample_count));
}

// Checks one cycle; fails the run (exit code != 0) on anything unexpected.
void CheckCycle(const ModelSpec& spec, const CycleOutcome& outcome, uint32_t free_before,
                uint32_t free_after)
{
    if (!outcome.loaded) board::Fail("LoadModel: not a TFLite model", board::kExitEngine);
    if (outcome.built != !BuildShouldFail(spec)) {
        board::Fail(outcome.built ? "AllocateTensors succeeded in a too small arena"
                                  : "AllocateTensors failed",
                    board::kExitEngine);
    }
    if (outcome.built && outcome.correct < 0) board::Fail("Invoke failed", board::kExitEngine);
    if (outcome.built && OutputsChecked(spec) && outcome.correct != spec.sample_count) {
        board::Fail("wrong output", board::kExitOutput);
    }
    if (free_after + ExpectedLeak(spec) != free_before) {
        board::Print("free after release: ");
        board::PrintDec(free_after);
        board::Print(", before the cycle: ");
        board::PrintDec(free_before);
        board::Print("\n");
        board::Fail("heap after release", board::kExitHeap);
    }
}

}  // namespace
#endif

}  // namespace app

int main()
{
    app::StartHeap();
#ifdef ITERATIONS
    const uint32_t free_start = app::HeapFreeBytes();
    app::CycleOutcome last[app::kModelCount] = {};
    bool ran[app::kModelCount] = {};
    for (uint32_t cycle = 0; cycle < static_cast<uint32_t>(ITERATIONS); ++cycle) {
#else
    for (uint32_t cycle = 0;; ++cycle) {
#endif
        app::g_cycle = cycle;
        const app::ModelSpec& spec = app::ModelForCycle(cycle);
#ifdef ITERATIONS
        const uint32_t free_before = app::HeapFreeBytes();
        const app::CycleOutcome outcome = app::RunCycle(spec);
        app::CheckCycle(spec, outcome, free_before, app::HeapFreeBytes());
        last[&spec - app::kModels] = outcome;
        ran[&spec - app::kModels] = true;
#else
        const app::CycleOutcome outcome = app::RunCycle(spec);
        if (!outcome.loaded) board::Fail("LoadModel: not a TFLite model", board::kExitEngine);
#endif
    }
#ifdef ITERATIONS
    board::Print(CPP_VARIANT_NAME ": ");
    board::PrintDec(static_cast<uint32_t>(ITERATIONS));
    board::Print(" cycles ok:");
    for (int m = 0; m < app::kModelCount; ++m) {
        if (ran[m]) app::PrintModelLine(app::kModels[m], last[m]);
    }
    board::Print("; free after release ");
    board::PrintDec(app::HeapFreeBytes());
    board::Print(" (start ");
    board::PrintDec(free_start);
    board::Print(")\n");
    board::ExitOk();
#endif
}
