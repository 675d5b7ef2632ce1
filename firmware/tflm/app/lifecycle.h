// lifecycle.h - one cycle of the application, as plain functions a debugger can break on:
// LoadModel (the model file read into a heap block), BuildInterpreter (op resolver, arena
// and MicroInterpreter on the heap, AllocateTensors), RunInference (one Invoke per sample),
// ReleaseModel (everything freed). A failed build goes through HandleBuildFailure.
#ifndef TFLM_APP_LIFECYCLE_H
#define TFLM_APP_LIFECYCLE_H

#include <cstddef>
#include <cstdint>

#include "models.h"
#include "tensorflow/lite/micro/micro_error_reporter.h"
#include "tensorflow/lite/micro/micro_interpreter.h"

namespace app {

// Everything one model's cycle allocates; the Session itself is a heap block too.
struct Session {
    const ModelSpec* spec = nullptr;
    uint8_t* model_file = nullptr;  // the .tflite read into RAM
    size_t model_file_bytes = 0;
    OpResolver* resolver = nullptr;
    uint8_t* arena = nullptr;  // handed to the interpreter as it is
    size_t arena_bytes = 0;
    tflite::MicroInterpreter* interpreter = nullptr;
};

// The session of the running cycle (nullptr between cycles), for a debugger.
extern Session* g_session;
extern tflite::MicroErrorReporter g_error_reporter;

// The arena this build gives `spec` (the scenario's sizes applied).
size_t ArenaBytesFor(const ModelSpec& spec);

// Reads the model file into RAM; nullptr if it is not a TFLite model of schema 3.
Session* LoadModel(const ModelSpec& spec);
// False if AllocateTensors (or the resolver) failed; the session then holds whatever had
// been allocated, for HandleBuildFailure.
bool BuildInterpreter(Session& session);
// Invokes once per sample; returns the samples whose output was right, -1 if Invoke failed.
int RunInference(Session& session);
// Deletes the interpreter, the arena, the resolver, the model file and the session.
void ReleaseModel(Session* session);
// The error path of a failed build: counts it, then releases the session.
void HandleBuildFailure(Session* session);

// Failed builds so far, for a debugger and the ITERATIONS checks.
extern uint32_t g_build_failures;

}  // namespace app

#endif
