// models.h - the models this firmware runs, from the files the tfmicro crate ships
// (model_data.S): which operators each needs, its arena, and its sample inputs with the
// output each must give.
#ifndef TFLM_APP_MODELS_H
#define TFLM_APP_MODELS_H

#include <cstddef>
#include <cstdint>

#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"

namespace app {

// Room for the largest model's operators (magic_wand: 5).
using OpResolver = tflite::MicroMutableOpResolver<5>;

struct ModelSpec {
    const char* name;
    const uint8_t* file;  // the .tflite file in flash
    const uint8_t* file_end;
    size_t arena_bytes;  // the healthy build's arena
    // Registers the operators the model uses (the scenario's wrappers included).
    TfLiteStatus (*add_ops)(OpResolver& resolver);
    int sample_count;
    // Writes sample `index` into the input tensor; false if the tensor does not fit it.
    bool (*set_input)(tflite::MicroInterpreter& interpreter, int index);
    // True when the output tensor holds what sample `index` must give.
    bool (*output_ok)(tflite::MicroInterpreter& interpreter, int index);
};

enum ModelIndex : int { kHelloWorld = 0, kMicroSpeech = 1, kMagicWand = 2, kModelCount = 3 };

// Indexed by ModelIndex.
extern const ModelSpec kModels[kModelCount];

}  // namespace app

#endif
