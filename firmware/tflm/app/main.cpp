// main.cpp - the device loop of the TFLM firmware: one model per cycle, in turn hello_world,
// micro_speech, magic_wand (the model switch), each through LoadModel, BuildInterpreter,
// RunInference and ReleaseModel (lifecycle.h). The two-models build runs hello_world and
// micro_speech together in every cycle (two interpreters, two arenas live at once); the
// arena build (`make tflm-arena`) runs its one model only.
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

// The models of one cycle, live together: one, or two in the two-models build.
constexpr int kMaxModelsPerCycle = 2;
struct CyclePlan {
    const ModelSpec* specs[kMaxModelsPerCycle];
    int count;
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

CyclePlan PlanFor(uint32_t cycle)
{
#ifdef TFLM_ARENA_MODEL
    static const ModelSpec* const only = ArenaModel();
    if (only == nullptr) board::Fail("unknown model " TFLM_ARENA_MODEL, board::kExitEngine);
    (void)cycle;
    return {{only, nullptr}, 1};
#else
    if (scenario::kTwoModels) return {{&kModels[kHelloWorld], &kModels[kMicroSpeech]}, 2};
    return {{&kModels[cycle % kModelCount], nullptr}, 1};
#endif
}

}  // namespace

// The running cycle (0-based), for a debugger.
uint32_t g_cycle;

// Loads and builds every model of the plan (all live at once), runs each, then releases
// them in reverse order. A build that fails goes through HandleBuildFailure at once.
__attribute__((noinline)) void RunCycle(const CyclePlan& plan, CycleOutcome* outcomes)
{
    Session* sessions[kMaxModelsPerCycle] = {};
    for (int i = 0; i < plan.count; ++i) {
        sessions[i] = LoadModel(*plan.specs[i]);
        if (sessions[i] == nullptr) continue;
        outcomes[i].loaded = true;
        g_session = sessions[i];
        outcomes[i].built = BuildInterpreter(*sessions[i]);
        if (!outcomes[i].built) {
            g_session = nullptr;
            HandleBuildFailure(sessions[i]);
            sessions[i] = nullptr;
        }
    }
    for (int i = 0; i < plan.count; ++i) {
        if (sessions[i] == nullptr) continue;
        g_session = sessions[i];
        outcomes[i].correct = RunInference(*sessions[i]);
    }
    g_session = nullptr;
    for (int i = plan.count - 1; i >= 0; --i) {
        if (sessions[i] != nullptr) ReleaseModel(sessions[i]);
    }
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

// Checks one model's outcome; fails the run (exit code != 0) on anything unexpected.
void CheckOutcome(const ModelSpec& spec, const CycleOutcome& outcome)
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
}

// Checks the heap after a cycle: back where it was, less what the scenario leaks.
void CheckHeap(const CyclePlan& plan, uint32_t free_before, uint32_t free_after)
{
    uint32_t leak = 0;
    for (int i = 0; i < plan.count; ++i) leak += ExpectedLeak(*plan.specs[i]);
    if (free_after + leak != free_before) {
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
        const app::CyclePlan plan = app::PlanFor(cycle);
        app::CycleOutcome outcomes[app::kMaxModelsPerCycle] = {};
#ifdef ITERATIONS
        const uint32_t free_before = app::HeapFreeBytes();
        app::RunCycle(plan, outcomes);
        app::CheckHeap(plan, free_before, app::HeapFreeBytes());
        for (int i = 0; i < plan.count; ++i) {
            app::CheckOutcome(*plan.specs[i], outcomes[i]);
            last[plan.specs[i] - app::kModels] = outcomes[i];
            ran[plan.specs[i] - app::kModels] = true;
        }
#else
        app::RunCycle(plan, outcomes);
        for (int i = 0; i < plan.count; ++i) {
            if (!outcomes[i].loaded) board::Fail("LoadModel: not a TFLite model", board::kExitEngine);
        }
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
