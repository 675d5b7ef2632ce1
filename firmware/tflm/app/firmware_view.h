// firmware_view.h - the TFLM test build's g_tflm_view (tflm-view.elf; scenario.h
// kFirmwareView): what the firmware itself computes after every successful AllocateTensors,
// for host tests to compare with what they read.
//
// Contract: BuildInterpreter calls CaptureFirmwareView right after AllocateTensors returned
// kTfLiteOk, with no allocation or free in between and none until RunInference is entered.
// So at the Nth stop at app::RunInference's entry, g_tflm_view.captures == N,
// g_tflm_view.last_model is the running model's index (models.h) and
// g_tflm_view.models[last_model] holds exactly what the firmware computed for it.
#ifndef TFLM_APP_FIRMWARE_VIEW_H
#define TFLM_APP_FIRMWARE_VIEW_H

#include <cstdint>

#include "models.h"

namespace app {

struct Session;

struct TflmModelView {
    const char* name;              // the model's name (models.h)
    uint32_t captures;             // successful AllocateTensors of this model so far
    const uint8_t* arena;          // the arena as handed to the interpreter (a heap block)
    uint32_t arena_bytes;          // its size as handed over
    uint32_t arena_used_bytes;     // interpreter->arena_used_bytes()
    uint32_t free_heap_bytes;      // xPortGetFreeHeapSize() at the same moment
    uint32_t tensors;              // interpreter->tensors_size()
    uint32_t operators;            // interpreter->operators_size()
};

struct TflmFirmwareView {
    uint32_t captures;  // every model's, in all
    int32_t last_model;  // index of the last capture's model, -1 before the first
    TflmModelView models[kModelCount];
};

extern TflmFirmwareView g_tflm_view;

// Fills g_tflm_view for the session's model and counts the capture.
void CaptureFirmwareView(const Session& session);

}  // namespace app

#endif
