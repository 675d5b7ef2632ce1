// models.cpp - models.h: hello_world (sine), micro_speech (yes/no keywords) and magic_wand
// (gestures), with the samples the crate ships.
#include "models.h"

#include <cmath>
#include <cstring>

#include "app_ops.h"
#include "scenario.h"
#include "tensorflow/lite/micro/kernels/micro_ops.h"

extern "C" {
// model_data.S
extern const uint8_t g_hello_world_tflite[], g_hello_world_tflite_end[];
extern const uint8_t g_micro_speech_tflite[], g_micro_speech_tflite_end[];
extern const uint8_t g_magic_wand_tflite[], g_magic_wand_tflite_end[];
extern const uint8_t g_yes_features[], g_yes_features_end[];
extern const uint8_t g_no_features[], g_no_features_end[];
extern const uint8_t g_ring_gesture[], g_ring_gesture_end[];
extern const uint8_t g_slope_gesture[], g_slope_gesture_end[];
}

namespace app {
namespace {

namespace micro = tflite::ops::micro;

// The index of the largest of `count` output scores, whatever their type.
int ArgMax(const TfLiteTensor& output, int count)
{
    int best = 0;
    float best_score = 0.0f;
    for (int i = 0; i < count; ++i) {
        float score = 0.0f;
        switch (output.type) {
        case kTfLiteFloat32: score = output.data.f[i]; break;
        case kTfLiteInt8: score = output.data.int8[i]; break;
        case kTfLiteUInt8: score = output.data.uint8[i]; break;
        default: return -1;
        }
        if (i == 0 || score > best_score) {
            best = i;
            best_score = score;
        }
    }
    return best;
}

int ElementCount(const TfLiteTensor& tensor)
{
    int count = 1;
    for (int d = 0; d < tensor.dims->size; ++d) count *= tensor.dims->data[d];
    return count;
}

// --- hello_world: y = sin(x) for x in [0, 2 pi) ---

constexpr float kSineInputs[] = {0.5f, 1.57f, 3.0f, 5.0f};
// The model approximates; the crate's own test accepts about this much.
constexpr float kSineTolerance = 0.2f;

// The int8 model with float input and output: QUANTIZE, three FULLY_CONNECTED (version 4),
// DEQUANTIZE (version 2). Each version registered takes a slot of the resolver.
TfLiteStatus HelloWorldOps(OpResolver& resolver)
{
    TF_LITE_ENSURE_STATUS(
        resolver.AddBuiltin(tflite::BuiltinOperator_QUANTIZE, micro::Register_QUANTIZE(), 1));
    TF_LITE_ENSURE_STATUS(resolver.AddBuiltin(tflite::BuiltinOperator_FULLY_CONNECTED,
                                              micro::Register_FULLY_CONNECTED(), 4));
    return resolver.AddBuiltin(tflite::BuiltinOperator_DEQUANTIZE, micro::Register_DEQUANTIZE(),
                               2);
}

// A float in the tensor's own type (float, or int8 with its scale and zero point).
bool SetScalar(TfLiteTensor& tensor, float value)
{
    if (tensor.type == kTfLiteFloat32) {
        tensor.data.f[0] = value;
        return true;
    }
    if (tensor.type == kTfLiteInt8 && tensor.params.scale != 0.0f) {
        const float q = std::round(value / tensor.params.scale) + tensor.params.zero_point;
        tensor.data.int8[0] = static_cast<int8_t>(q < -128.0f ? -128.0f : (q > 127.0f ? 127.0f : q));
        return true;
    }
    return false;
}

float GetScalar(const TfLiteTensor& tensor)
{
    if (tensor.type == kTfLiteInt8) {
        return (tensor.data.int8[0] - tensor.params.zero_point) * tensor.params.scale;
    }
    return tensor.type == kTfLiteFloat32 ? tensor.data.f[0] : NAN;
}

bool HelloWorldInput(tflite::MicroInterpreter& interpreter, int index)
{
    TfLiteTensor* input = interpreter.input(0);
    return input != nullptr && SetScalar(*input, kSineInputs[index]);
}

bool HelloWorldOutputOk(tflite::MicroInterpreter& interpreter, int index)
{
    const TfLiteTensor* output = interpreter.output(0);
    return output != nullptr &&
           std::fabs(GetScalar(*output) - std::sin(kSineInputs[index])) < kSineTolerance;
}

// --- micro_speech: scores for silence, unknown, "yes", "no" ---

struct SpeechSample {
    const uint8_t* features;
    const uint8_t* features_end;
    int label;
};
const SpeechSample kSpeechSamples[] = {
    {g_yes_features, g_yes_features_end, 2},
    {g_no_features, g_no_features_end, 3},
};

// The uint8 model: DEPTHWISE_CONV_2D, FULLY_CONNECTED, SOFTMAX (all version 1).
TfLiteStatus MicroSpeechOps(OpResolver& resolver)
{
    TfLiteRegistration* depthwise = scenario::kScratch
                                        ? ops::Register_INPUT_STATS_DEPTHWISE_CONV_2D()
                                        : micro::Register_DEPTHWISE_CONV_2D();
    TfLiteRegistration* fully_connected = scenario::kOpLeak
                                              ? ops::Register_PROFILED_FULLY_CONNECTED()
                                              : micro::Register_FULLY_CONNECTED();
    TF_LITE_ENSURE_STATUS(resolver.AddBuiltin(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, depthwise));
    TF_LITE_ENSURE_STATUS(
        resolver.AddBuiltin(tflite::BuiltinOperator_FULLY_CONNECTED, fully_connected));
    return resolver.AddBuiltin(tflite::BuiltinOperator_SOFTMAX, micro::Register_SOFTMAX());
}

bool MicroSpeechInput(tflite::MicroInterpreter& interpreter, int index)
{
    const SpeechSample& sample = kSpeechSamples[index];
    const size_t bytes = static_cast<size_t>(sample.features_end - sample.features);
    TfLiteTensor* input = interpreter.input(0);
    if (input == nullptr || input->bytes != bytes) return false;
    std::memcpy(input->data.raw, sample.features, bytes);
    return true;
}

bool MicroSpeechOutputOk(tflite::MicroInterpreter& interpreter, int index)
{
    const TfLiteTensor* output = interpreter.output(0);
    return output != nullptr && ArgMax(*output, 4) == kSpeechSamples[index].label;
}

// --- magic_wand: scores for wing, ring, slope, negative ---

struct GestureSample {
    const uint8_t* readings;  // big-endian float32
    const uint8_t* readings_end;
    int label;
};
const GestureSample kGestureSamples[] = {
    {g_ring_gesture, g_ring_gesture_end, 1},
    {g_slope_gesture, g_slope_gesture_end, 2},
};

// The float model: DEPTHWISE_CONV_2D, MAX_POOL_2D, CONV_2D, MAX_POOL_2D, two FULLY_CONNECTED,
// SOFTMAX (all version 1).
TfLiteStatus MagicWandOps(OpResolver& resolver)
{
    TF_LITE_ENSURE_STATUS(resolver.AddBuiltin(tflite::BuiltinOperator_DEPTHWISE_CONV_2D,
                                              micro::Register_DEPTHWISE_CONV_2D()));
    TF_LITE_ENSURE_STATUS(
        resolver.AddBuiltin(tflite::BuiltinOperator_MAX_POOL_2D, micro::Register_MAX_POOL_2D()));
    TF_LITE_ENSURE_STATUS(
        resolver.AddBuiltin(tflite::BuiltinOperator_CONV_2D, micro::Register_CONV_2D()));
    TF_LITE_ENSURE_STATUS(resolver.AddBuiltin(tflite::BuiltinOperator_FULLY_CONNECTED,
                                              micro::Register_FULLY_CONNECTED()));
    return resolver.AddBuiltin(tflite::BuiltinOperator_SOFTMAX, micro::Register_SOFTMAX());
}

bool MagicWandInput(tflite::MicroInterpreter& interpreter, int index)
{
    const GestureSample& sample = kGestureSamples[index];
    const size_t bytes = static_cast<size_t>(sample.readings_end - sample.readings);
    TfLiteTensor* input = interpreter.input(0);
    if (input == nullptr || input->type != kTfLiteFloat32 || input->bytes != bytes) return false;
    for (int i = 0; i < ElementCount(*input); ++i) {
        const uint8_t* be = sample.readings + 4 * i;
        const uint32_t bits = (uint32_t{be[0]} << 24) | (uint32_t{be[1]} << 16) |
                              (uint32_t{be[2]} << 8) | uint32_t{be[3]};
        std::memcpy(&input->data.f[i], &bits, sizeof(bits));
    }
    return true;
}

bool MagicWandOutputOk(tflite::MicroInterpreter& interpreter, int index)
{
    const TfLiteTensor* output = interpreter.output(0);
    return output != nullptr && ArgMax(*output, 4) == kGestureSamples[index].label;
}

template <typename T, size_t N>
constexpr int CountOf(const T (&)[N])
{
    return static_cast<int>(N);
}

}  // namespace

const ModelSpec kModels[kModelCount] = {
    {"hello_world", g_hello_world_tflite, g_hello_world_tflite_end, 2048, HelloWorldOps,
     CountOf(kSineInputs), HelloWorldInput, HelloWorldOutputOk},
    {"micro_speech", g_micro_speech_tflite, g_micro_speech_tflite_end, 8192, MicroSpeechOps,
     CountOf(kSpeechSamples), MicroSpeechInput, MicroSpeechOutputOk},
    {"magic_wand", g_magic_wand_tflite, g_magic_wand_tflite_end, 16384, MagicWandOps,
     CountOf(kGestureSamples), MagicWandInput, MagicWandOutputOk},
};

}  // namespace app
