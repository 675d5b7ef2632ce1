// conv.cpp - Conv2D: 3x3 convolution, 'same' padding (one row/column of the
// input's zero point around it), NHWC input, OHWI int8 filter with one scale
// per output channel, int32 bias, optional ReLU.
//
// Eval gathers the 3x3xC patches of one output row at a time (im2col) in a
// buffer it allocates per call. The node that reads the sensor frame also
// rejects clipped frames: that error path is where the leak build forgets
// the buffer (defects.h).
#include "tinyml/kernels/builtin_ops.h"

#include "defects.h"
#include "tinyml/quant.h"

namespace tinyml {
namespace ops {
namespace {

constexpr int kTaps = 3;

// A frame whose samples sit mostly on the int8 rails came from a saturated
// sensor: its classification would be noise.
bool IsClipped(const Tensor& input)
{
    const int8_t* x = input.int8();
    const int n = input.elements();
    int rails = 0;
    for (int i = 0; i < n; ++i) {
        if (x[i] == 127 || x[i] == -128) ++rails;
    }
    return rails > n / 2;
}

}  // namespace

Conv2D::~Conv2D()
{
    delete[] shifts_;
    delete[] multipliers_;
}

Status Conv2D::Prepare(Context& context, Node& node)
{
    const OperatorDesc& op = *node.op;
    if (op.input_count != 3) return Status::kError;
    const Tensor& input = context.tensor(op.inputs[0]);
    const Tensor& filter = context.tensor(op.inputs[1]);
    const Tensor& bias = context.tensor(op.inputs[2]);
    const Tensor& output = context.tensor(op.output);
    const int stride = op.stride;
    if (input.rank != 4 || filter.rank != 4 || output.rank != 4 || bias.rank != 1 ||
        filter.dims[1] != kTaps || filter.dims[2] != kTaps || filter.dims[3] != input.dims[3] ||
        bias.dims[0] != filter.dims[0] || output.dims[3] != filter.dims[0] ||
        output.dims[1] != (input.dims[1] + stride - 1) / stride ||
        output.dims[2] != (input.dims[2] + stride - 1) / stride ||
        filter.channel_scales == nullptr || bias.type != TensorType::kInt32) {
        context.ReportError(node, "Conv2D: shapes do not match");
        return Status::kError;
    }
    channels_ = filter.dims[0];
    multipliers_ = new int32_t[channels_];
    shifts_ = new int[channels_];
    QuantizeMultiplier(input.scale, filter.channel_scales, output.scale, channels_, multipliers_,
                       shifts_);
    check_clipping_ = context.IsGraphInput(op.inputs[0]);
    return Status::kOk;
}

Status Conv2D::Eval(Context& context, Node& node)
{
    const OperatorDesc& op = *node.op;
    const Tensor& input = context.tensor(op.inputs[0]);
    const Tensor& filter = context.tensor(op.inputs[1]);
    const Tensor& bias = context.tensor(op.inputs[2]);
    Tensor& output = context.tensor(op.output);
    const int in_h = input.dims[1], in_w = input.dims[2], in_c = input.dims[3];
    const int out_h = output.dims[1], out_w = output.dims[2];
    const int cols = kTaps * kTaps * in_c;

    int8_t* patches = new int8_t[static_cast<size_t>(out_w) * static_cast<size_t>(cols)];
    if (check_clipping_ && IsClipped(input)) {
        context.ReportError(node, "input frame clipped");
        if (!defects::kLeakOnRejectedFrame) delete[] patches;
        return Status::kError;
    }

    const int8_t* in = input.int8();
    const int8_t* w = filter.int8();
    const int32_t* b = bias.int32();
    int8_t* out = output.int8();
    const int32_t in_zp = input.zero_point, out_zp = output.zero_point;
    const int32_t lo = op.relu ? Clamp(out_zp, -128, 127) : -128;
    for (int oy = 0; oy < out_h; ++oy) {
        for (int ox = 0; ox < out_w; ++ox) {
            int8_t* p = patches + ox * cols;
            for (int ky = 0; ky < kTaps; ++ky) {
                const int iy = oy * op.stride + ky - 1;
                for (int kx = 0; kx < kTaps; ++kx) {
                    const int ix = ox * op.stride + kx - 1;
                    const bool inside = iy >= 0 && iy < in_h && ix >= 0 && ix < in_w;
                    for (int c = 0; c < in_c; ++c) {
                        *p++ = inside ? in[(iy * in_w + ix) * in_c + c]
                                      : static_cast<int8_t>(in_zp);
                    }
                }
            }
        }
        for (int ox = 0; ox < out_w; ++ox) {
            const int8_t* p = patches + ox * cols;
            for (int o = 0; o < channels_; ++o) {
                const int8_t* wo = w + o * cols;
                int32_t acc = b[o];
                for (int k = 0; k < cols; ++k) acc += (p[k] - in_zp) * wo[k];
                const int32_t v =
                    MultiplyByQuantizedMultiplier(acc, multipliers_[o], shifts_[o]) + out_zp;
                out[(oy * out_w + ox) * channels_ + o] = static_cast<int8_t>(Clamp(v, lo, 127));
            }
        }
    }
    delete[] patches;
    return Status::kOk;
}

}  // namespace ops
}  // namespace tinyml
