// scenario.h - what this build of the TFLM firmware does differently from `healthy`.
//
// The Makefile builds one ELF per scenario (firmware/README.md, "TensorFlow Lite Micro
// firmware") and passes one TFLM_SCENARIO_* switch; `healthy` has none. Each scenario changes
// one thing, written the way it would be in a real application; the switch only chooses it.
#ifndef TFLM_APP_SCENARIO_H
#define TFLM_APP_SCENARIO_H

#include <cstddef>

namespace scenario {

#ifdef TFLM_SCENARIO_OP_LEAK
// micro_speech's FULLY_CONNECTED runs through the application's profiling wrapper, whose
// Init allocates its record with `new` and whose registration has no `free`: one leaked
// block per micro_speech build, none in the other models' cycles.
constexpr bool kOpLeak = true;
#else
constexpr bool kOpLeak = false;
#endif

#ifdef TFLM_SCENARIO_ARENA_ROOMY
// Every arena is kRoomyFactor times the healthy one.
constexpr bool kArenaRoomy = true;
#else
constexpr bool kArenaRoomy = false;
#endif
constexpr size_t kRoomyFactor = 4;

#ifdef TFLM_SCENARIO_ARENA_TIGHT
// micro_speech's arena is too small: AllocateTensors fails, the application's error path
// releases what the build had allocated, and the next cycle goes on.
constexpr bool kArenaTight = true;
#else
constexpr bool kArenaTight = false;
#endif

#ifdef TFLM_SCENARIO_SCRATCH
// micro_speech's DEPTHWISE_CONV_2D runs through the application's staging wrapper, which
// asks for a large scratch buffer in Prepare (the head's peak at that operator).
constexpr bool kScratch = true;
#else
constexpr bool kScratch = false;
#endif

#ifdef TFLM_SCENARIO_SHARED_TENSOR
// After AllocateTensors the application points one of hello_world's activations at
// another's buffer while both are live ("manual sharing" gone wrong).
constexpr bool kSharedTensor = true;
#else
constexpr bool kSharedTensor = false;
#endif

#ifdef TFLM_SCENARIO_TWO_MODELS
// hello_world and micro_speech in every cycle, loaded and built one after the other and
// live together: two interpreters, each with its own arena; magic_wand is not run.
constexpr bool kTwoModels = true;
#else
constexpr bool kTwoModels = false;
#endif

#ifdef TFLM_SCENARIO_VIEW
// Test build: healthy, plus g_tflm_view (firmware_view.h), what the firmware itself computes
// after every AllocateTensors, for host tests to compare with.
constexpr bool kFirmwareView = true;
#else
constexpr bool kFirmwareView = false;
#endif

#ifdef TFLM_ARENA_BYTES
// `make tflm-arena ARENA_BYTES=N MODEL=m`: one model only, its arena N bytes.
constexpr bool kArenaFromCommandLine = true;
constexpr size_t kArenaBytes = TFLM_ARENA_BYTES;
#else
constexpr bool kArenaFromCommandLine = false;
constexpr size_t kArenaBytes = 0;
#endif

}  // namespace scenario

#endif
