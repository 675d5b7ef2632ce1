// firmware_view.cpp - firmware_view.h.
#include "firmware_view.h"

#include "heap.h"
#include "lifecycle.h"

namespace app {

TflmFirmwareView g_tflm_view = {0, -1, {}};

__attribute__((noinline)) void CaptureFirmwareView(const Session& session)
{
    const int index = static_cast<int>(session.spec - kModels);
    if (index < 0 || index >= kModelCount) return;
    TflmModelView& view = g_tflm_view.models[index];
    const tflite::MicroInterpreter& interpreter = *session.interpreter;
    view.name = session.spec->name;
    ++view.captures;
    view.arena = session.arena;
    view.arena_bytes = static_cast<uint32_t>(session.arena_bytes);
    view.arena_used_bytes = static_cast<uint32_t>(interpreter.arena_used_bytes());
    view.free_heap_bytes = HeapFreeBytes();
    view.tensors = static_cast<uint32_t>(interpreter.tensors_size());
    view.operators = static_cast<uint32_t>(interpreter.operators_size());
    g_tflm_view.last_model = index;
    ++g_tflm_view.captures;
}

}  // namespace app
