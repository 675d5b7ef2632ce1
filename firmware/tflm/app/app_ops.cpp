// app_ops.cpp - app_ops.h. Both wrappers keep the wrapped kernel's own data in their
// record and hand it back to the kernel (node->user_data) for the length of each call.
#include "app_ops.h"

#include <new>

#include "tensorflow/lite/micro/kernels/micro_ops.h"

namespace app {
namespace ops {
namespace {

// Calls a wrapped kernel's prepare or invoke with its own data in node->user_data.
TfLiteStatus CallKernel(TfLiteStatus (*fn)(TfLiteContext*, TfLiteNode*), TfLiteContext* context,
                        TfLiteNode* node, void* kernel_data)
{
    if (fn == nullptr) return kTfLiteOk;
    void* const own = node->user_data;
    node->user_data = kernel_data;
    const TfLiteStatus status = fn(context, node);
    node->user_data = own;
    return status;
}

void* InitKernel(const TfLiteRegistration& kernel, TfLiteContext* context, const char* buffer,
                 size_t length)
{
    return kernel.init != nullptr ? kernel.init(context, buffer, length) : nullptr;
}

// --- PROFILED_FULLY_CONNECTED ---

const TfLiteRegistration& FullyConnected()
{
    return *tflite::ops::micro::Register_FULLY_CONNECTED();
}

__attribute__((noinline)) void* ProfiledInit(TfLiteContext* context, const char* buffer,
                                             size_t length)
{
    NodeProfile* profile = new NodeProfile();
    profile->kernel_data = InitKernel(FullyConnected(), context, buffer, length);
    return profile;
}

TfLiteStatus ProfiledPrepare(TfLiteContext* context, TfLiteNode* node)
{
    const NodeProfile* profile = static_cast<const NodeProfile*>(node->user_data);
    return CallKernel(FullyConnected().prepare, context, node, profile->kernel_data);
}

TfLiteStatus ProfiledInvoke(TfLiteContext* context, TfLiteNode* node)
{
    NodeProfile* profile = static_cast<NodeProfile*>(node->user_data);
    const TfLiteStatus status =
        CallKernel(FullyConnected().invoke, context, node, profile->kernel_data);
    ++profile->invocations;
    profile->last_status = status;
    return status;
}

// --- INPUT_STATS_DEPTHWISE_CONV_2D ---

const TfLiteRegistration& DepthwiseConv()
{
    return *tflite::ops::micro::Register_DEPTHWISE_CONV_2D();
}

void* InputStatsInit(TfLiteContext* context, const char* buffer, size_t length)
{
    void* record = nullptr;
    if (context->AllocatePersistentBuffer(context, sizeof(InputStats), &record) != kTfLiteOk) {
        return nullptr;
    }
    InputStats* stats = new (record) InputStats();
    stats->kernel_data = InitKernel(DepthwiseConv(), context, buffer, length);
    return stats;
}

__attribute__((noinline)) TfLiteStatus InputStatsPrepare(TfLiteContext* context,
                                                         TfLiteNode* node)
{
    InputStats* stats = static_cast<InputStats*>(node->user_data);
    if (stats == nullptr) return kTfLiteError;
    const TfLiteStatus status = CallKernel(DepthwiseConv().prepare, context, node,
                                           stats->kernel_data);
    if (status != kTfLiteOk) return status;
    const TfLiteTensor& input = context->tensors[node->inputs->data[0]];
    if (input.type != kTfLiteInt8 && input.type != kTfLiteUInt8) return kTfLiteError;
    return context->RequestScratchBufferInArena(context, input.bytes * sizeof(int32_t),
                                                &stats->scratch_index);
}

TfLiteStatus InputStatsInvoke(TfLiteContext* context, TfLiteNode* node)
{
    InputStats* stats = static_cast<InputStats*>(node->user_data);
    int32_t* wide = static_cast<int32_t*>(context->GetScratchBuffer(context, stats->scratch_index));
    if (wide == nullptr) return kTfLiteError;
    const TfLiteTensor& input = context->tensors[node->inputs->data[0]];
    int32_t sum = 0;
    for (size_t i = 0; i < input.bytes; ++i) {
        wide[i] = input.type == kTfLiteInt8 ? input.data.int8[i] : input.data.uint8[i];
        sum += wide[i];
    }
    stats->input_sum = sum;
    return CallKernel(DepthwiseConv().invoke, context, node, stats->kernel_data);
}

}  // namespace

TfLiteRegistration* Register_PROFILED_FULLY_CONNECTED()
{
    // No `free`: nothing deletes the NodeProfile (the op-leak scenario's defect).
    static TfLiteRegistration registration = {ProfiledInit, nullptr, ProfiledPrepare,
                                              ProfiledInvoke, nullptr, 0, nullptr, 0};
    return &registration;
}

TfLiteRegistration* Register_INPUT_STATS_DEPTHWISE_CONV_2D()
{
    // The record lives in the arena: nothing to free.
    static TfLiteRegistration registration = {InputStatsInit, nullptr, InputStatsPrepare,
                                              InputStatsInvoke, nullptr, 0, nullptr, 0};
    return &registration;
}

}  // namespace ops
}  // namespace app
