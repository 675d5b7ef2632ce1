// model.h - the model: a flatbuffer-like blob (tools/gen_cpp_model.py has the
// format) parsed into tensor and operator descriptors. The weights stay in the
// blob: in flash when the image is stored plain (zero copy), in RAM when it
// had to be inflated.
#ifndef TINYML_MODEL_H
#define TINYML_MODEL_H

#include <cstddef>
#include <cstdint>

#include "tinyml/tensor.h"

namespace tinyml {

enum class BuiltinOp : uint8_t {
    kConv2D = 0,
    kFullyConnected = 1,
    kAdd = 2,
    kSoftmax = 3,
};

constexpr int kMaxOpInputs = 3;

// A model as it is stored: plain (parsed in place) or zero-run compressed.
struct ModelImage {
    const char* name;
    const uint8_t* data;
    size_t size;
    bool compressed;
};

struct TensorDesc {
    const char* name;
    TensorType type;
    int rank;
    int dims[kMaxRank];
    int buffer;  // -1: an activation (lives in the interpreter's arena)
    float scale;
    int32_t zero_point;
    int channel_scales;  // buffer of per-channel float scales, or -1
};

struct OperatorDesc {
    const char* name;
    BuiltinOp opcode;
    bool relu;
    int stride;
    int inputs[kMaxOpInputs];
    int input_count;
    int output;
};

class Model {
  public:
    // Reads an image into a new Model; nullptr if the image is malformed.
    static Model* Open(const ModelImage& image);
    ~Model();
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;

    const char* name() const { return name_; }
    int tensor_count() const { return tensor_count_; }
    const TensorDesc& tensor(int index) const { return tensors_[index]; }
    int operator_count() const { return operator_count_; }
    const OperatorDesc& op(int index) const { return operators_[index]; }
    int input() const { return input_; }
    int output() const { return output_; }
    // Bytes of buffer `index` inside the blob (nullptr if out of range).
    const void* buffer(int index, size_t* size) const;

  private:
    Model() = default;
    bool Parse(const uint8_t* blob, size_t size);
    bool ParseTensors(uint32_t offset);
    bool ParseOperators(uint32_t offset);

    const char* name_ = nullptr;
    const uint8_t* blob_ = nullptr;
    size_t blob_size_ = 0;
    uint8_t* inflated_ = nullptr;  // the blob when it was inflated into RAM
    uint32_t buffers_offset_ = 0;
    uint32_t strings_offset_ = 0;
    int buffer_count_ = 0;
    TensorDesc* tensors_ = nullptr;
    int tensor_count_ = 0;
    OperatorDesc* operators_ = nullptr;
    int operator_count_ = 0;
    int input_ = -1;
    int output_ = -1;
};

}  // namespace tinyml

#endif
