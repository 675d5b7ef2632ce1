// fully_connected.cpp - FullyConnected: y = W x + b over the input's
// elements (any shape), int8 weights [units][inputs] with one scale per unit.
#include "tinyml/kernels/builtin_ops.h"

#include "tinyml/quant.h"

namespace tinyml {
namespace ops {

FullyConnected::~FullyConnected()
{
    delete[] shifts_;
    delete[] multipliers_;
}

Status FullyConnected::Prepare(Context& context, Node& node)
{
    const OperatorDesc& op = *node.op;
    if (op.input_count != 3) return Status::kError;
    const Tensor& input = context.tensor(op.inputs[0]);
    const Tensor& weights = context.tensor(op.inputs[1]);
    const Tensor& bias = context.tensor(op.inputs[2]);
    const Tensor& output = context.tensor(op.output);
    if (weights.rank != 2 || weights.dims[1] != input.elements() ||
        bias.elements() != weights.dims[0] || output.elements() != weights.dims[0] ||
        weights.channel_scales == nullptr || bias.type != TensorType::kInt32) {
        context.ReportError(node, "FullyConnected: shapes do not match");
        return Status::kError;
    }
    units_ = weights.dims[0];
    multipliers_ = new int32_t[units_];
    shifts_ = new int[units_];
    QuantizeMultiplier(input.scale, weights.channel_scales, output.scale, units_, multipliers_,
                       shifts_);
    return Status::kOk;
}

Status FullyConnected::Eval(Context& context, Node& node)
{
    const OperatorDesc& op = *node.op;
    const Tensor& input = context.tensor(op.inputs[0]);
    const Tensor& weights = context.tensor(op.inputs[1]);
    const Tensor& bias = context.tensor(op.inputs[2]);
    Tensor& output = context.tensor(op.output);
    const int n = input.elements();
    const int8_t* x = input.int8();
    const int32_t in_zp = input.zero_point, out_zp = output.zero_point;
    const int32_t lo = op.relu ? Clamp(out_zp, -128, 127) : -128;
    for (int u = 0; u < units_; ++u) {
        const int8_t* w = weights.int8() + u * n;
        int32_t acc = bias.int32()[u];
        for (int i = 0; i < n; ++i) acc += (x[i] - in_zp) * w[i];
        const int32_t v = MultiplyByQuantizedMultiplier(acc, multipliers_[u], shifts_[u]) + out_zp;
        output.int8()[u] = static_cast<int8_t>(Clamp(v, lo, 127));
    }
    return Status::kOk;
}

}  // namespace ops
}  // namespace tinyml
