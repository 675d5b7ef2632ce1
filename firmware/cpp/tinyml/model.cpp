// model.cpp - Model::Open: the image into a Model (inflated first when it is
// compressed), then the blob's tables into descriptors. Every offset read
// from the blob is checked against its size before it is followed.
#include "tinyml/model.h"

#include <cstring>

#include "tinyml/zrle.h"

namespace tinyml {
namespace {

constexpr uint32_t kMagic = 0x314c4d54u;  // "TML1"
constexpr uint32_t kVersion = 1u;
constexpr size_t kHeaderSize = 40;
constexpr size_t kTensorRecord = 28;
constexpr size_t kOperatorRecord = 16;
constexpr size_t kBufferRecord = 8;
constexpr uint16_t kNone = 0xffffu;
// The window the zrle decoder works in while a compressed image is opened.
constexpr size_t kInflateWindow = 2048;

uint16_t U16(const uint8_t* p)
{
    return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

uint32_t U32(const uint8_t* p)
{
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
           (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

float F32(const uint8_t* p)
{
    uint32_t bits = U32(p);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

bool InRange(size_t offset, size_t length, size_t size)
{
    return offset <= size && length <= size - offset;
}

}  // namespace

__attribute__((noinline)) Model* Model::Open(const ModelImage& image)
{
    Model* model = new Model();
    model->name_ = image.name;
    const uint8_t* blob = image.data;
    size_t size = image.size;
    uint8_t* file = nullptr;
    uint8_t* window = nullptr;
    if (image.compressed) {
        // As a model read from a file system would be: the whole file in
        // RAM, inflated through a window into the blob the model keeps.
        file = new uint8_t[image.size];
        std::memcpy(file, image.data, image.size);
        size = zrle::InflatedSize(file, image.size);
        if (size == 0) {
            delete[] file;
            delete model;
            return nullptr;
        }
        window = new uint8_t[kInflateWindow];
        model->inflated_ = new uint8_t[size];
        if (!zrle::Inflate(file, image.size, window, kInflateWindow, model->inflated_, size)) {
            delete[] window;
            delete[] file;
            delete model;
            return nullptr;
        }
        blob = model->inflated_;
    }
    const bool ok = model->Parse(blob, size);
    delete[] window;
    delete[] file;
    if (!ok) {
        delete model;
        return nullptr;
    }
    return model;
}

Model::~Model()
{
    delete[] operators_;
    delete[] tensors_;
    delete[] inflated_;
}

bool Model::Parse(const uint8_t* blob, size_t size)
{
    if (size < kHeaderSize || U32(blob) != kMagic || U32(blob + 4) != kVersion ||
        U32(blob + 8) != size) {
        return false;
    }
    blob_ = blob;
    blob_size_ = size;
    tensor_count_ = U16(blob + 12);
    operator_count_ = U16(blob + 14);
    buffer_count_ = U16(blob + 16);
    input_ = U16(blob + 18);
    output_ = U16(blob + 20);
    buffers_offset_ = U32(blob + 32);
    strings_offset_ = U32(blob + 36);
    if (tensor_count_ == 0 || operator_count_ == 0 || input_ >= tensor_count_ ||
        output_ >= tensor_count_ || strings_offset_ >= size ||
        !InRange(buffers_offset_, kBufferRecord * static_cast<size_t>(buffer_count_), size)) {
        return false;
    }
    return ParseTensors(U32(blob + 24)) && ParseOperators(U32(blob + 28));
}

bool Model::ParseTensors(uint32_t offset)
{
    if (!InRange(offset, kTensorRecord * static_cast<size_t>(tensor_count_), blob_size_)) {
        return false;
    }
    tensors_ = new TensorDesc[tensor_count_];
    for (int i = 0; i < tensor_count_; ++i) {
        const uint8_t* r = blob_ + offset + kTensorRecord * static_cast<size_t>(i);
        TensorDesc& t = tensors_[i];
        const uint32_t name = U32(r + 24);
        if (r[0] > 1 || r[1] > kMaxRank || strings_offset_ + name >= blob_size_) return false;
        t.name = reinterpret_cast<const char*>(blob_ + strings_offset_ + name);
        t.type = static_cast<TensorType>(r[0]);
        t.rank = r[1];
        const uint16_t buffer = U16(r + 2);
        t.buffer = buffer == kNone ? -1 : buffer;
        for (int d = 0; d < kMaxRank; ++d) t.dims[d] = U16(r + 4 + 2 * d);
        t.scale = F32(r + 12);
        t.zero_point = static_cast<int32_t>(U32(r + 16));
        const uint16_t scales = U16(r + 20);
        t.channel_scales = scales == kNone ? -1 : scales;
        if (t.buffer >= buffer_count_ || t.channel_scales >= buffer_count_) return false;
    }
    return true;
}

bool Model::ParseOperators(uint32_t offset)
{
    if (!InRange(offset, kOperatorRecord * static_cast<size_t>(operator_count_), blob_size_)) {
        return false;
    }
    operators_ = new OperatorDesc[operator_count_];
    for (int i = 0; i < operator_count_; ++i) {
        const uint8_t* r = blob_ + offset + kOperatorRecord * static_cast<size_t>(i);
        OperatorDesc& op = operators_[i];
        const uint32_t name = U32(r + 12);
        if (r[0] > static_cast<uint8_t>(BuiltinOp::kSoftmax) || r[2] == 0 ||
            strings_offset_ + name >= blob_size_) {
            return false;
        }
        op.name = reinterpret_cast<const char*>(blob_ + strings_offset_ + name);
        op.opcode = static_cast<BuiltinOp>(r[0]);
        op.relu = r[1] != 0;
        op.stride = r[2];
        op.input_count = 0;
        for (int k = 0; k < kMaxOpInputs; ++k) {
            const uint16_t t = U16(r + 4 + 2 * k);
            op.inputs[k] = t == kNone ? -1 : t;
            if (t != kNone) {
                if (t >= tensor_count_) return false;
                op.input_count = k + 1;
            }
        }
        op.output = U16(r + 10);
        if (op.output >= tensor_count_ || op.input_count == 0) return false;
    }
    return true;
}

const void* Model::buffer(int index, size_t* size) const
{
    if (index < 0 || index >= buffer_count_) return nullptr;
    const uint8_t* r = blob_ + buffers_offset_ + kBufferRecord * static_cast<size_t>(index);
    const uint32_t offset = U32(r);
    const uint32_t length = U32(r + 4);
    if (!InRange(offset, length, blob_size_)) return nullptr;
    *size = length;
    return blob_ + offset;
}

}  // namespace tinyml
