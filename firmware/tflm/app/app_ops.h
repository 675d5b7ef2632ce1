// app_ops.h - the application's own operators: TFLM kernels wrapped with something the
// application wanted around them, registered in the resolver in place of the builtin.
#ifndef TFLM_APP_APP_OPS_H
#define TFLM_APP_APP_OPS_H

#include <cstdint>

#include "tensorflow/lite/c/common.h"

namespace app {
namespace ops {

// FULLY_CONNECTED with a per-node profile (invocations, last status). Init allocates the
// profile from the heap with `new`; the registration has no `free` (op-leak's defect), so
// every build that uses it leaks one NodeProfile per node.
struct NodeProfile {
    void* kernel_data;  // what the wrapped kernel's Init returned
    uint32_t invocations;
    int32_t last_status;
};
TfLiteRegistration* Register_PROFILED_FULLY_CONNECTED();

// DEPTHWISE_CONV_2D that first widens its int8 input into an int32 scratch buffer (4 bytes
// per input element, asked for in Prepare with RequestScratchBufferInArena) and keeps the
// input's sum there: a large temporary that only lives while this operator runs.
struct InputStats {
    void* kernel_data;  // what the wrapped kernel's Init returned
    int scratch_index;  // RequestScratchBufferInArena's handle
    int32_t input_sum;  // of the last invocation
};
TfLiteRegistration* Register_INPUT_STATS_DEPTHWISE_CONV_2D();

}  // namespace ops
}  // namespace app

#endif
