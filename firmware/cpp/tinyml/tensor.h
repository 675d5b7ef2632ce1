// tensor.h - a tensor as the kernels see it at run time: shape, quantization
// and where its bytes are (in the model for constants, in the interpreter's
// arena for activations).
#ifndef TINYML_TENSOR_H
#define TINYML_TENSOR_H

#include <cstddef>
#include <cstdint>

namespace tinyml {

enum class TensorType : uint8_t {
    kInt8 = 0,
    kInt32 = 1,
};

constexpr int kMaxRank = 4;

struct Tensor {
    const char* name = nullptr;
    TensorType type = TensorType::kInt8;
    int rank = 0;
    int dims[kMaxRank] = {0, 0, 0, 0};
    size_t bytes = 0;
    float scale = 0.0f;
    int32_t zero_point = 0;
    // Per-output-channel scales of a filter (nullptr: per-tensor `scale`).
    const float* channel_scales = nullptr;
    void* data = nullptr;

    int elements() const
    {
        int n = 1;
        for (int i = 0; i < rank; ++i) n *= dims[i];
        return n;
    }
    int8_t* int8() const { return static_cast<int8_t*>(data); }
    const int32_t* int32() const { return static_cast<const int32_t*>(data); }
};

}  // namespace tinyml

#endif
