// softmax.cpp - Softmax over int8 logits: exp(x - max) from a 256-entry
// table built in Prepare, probabilities as int8 with scale 1/256, zero
// point -128.
#include "tinyml/kernels/builtin_ops.h"

#include <cmath>

#include "tinyml/quant.h"

namespace tinyml {
namespace ops {

Softmax::~Softmax()
{
    delete[] exp_table_;
}

Status Softmax::Prepare(Context& context, Node& node)
{
    const OperatorDesc& op = *node.op;
    const Tensor& input = context.tensor(op.inputs[0]);
    const Tensor& output = context.tensor(op.output);
    if (input.elements() != output.elements() || output.zero_point != -128) {
        context.ReportError(node, "Softmax: shapes do not match");
        return Status::kError;
    }
    exp_table_ = new uint16_t[256];
    for (int d = 0; d < 256; ++d) {
        exp_table_[d] =
            static_cast<uint16_t>(65535.0f * std::exp(-static_cast<float>(d) * input.scale) + 0.5f);
    }
    return Status::kOk;
}

Status Softmax::Eval(Context& context, Node& node)
{
    const OperatorDesc& op = *node.op;
    const Tensor& input = context.tensor(op.inputs[0]);
    Tensor& output = context.tensor(op.output);
    const int n = input.elements();
    const int8_t* x = input.int8();
    int32_t max = -128;
    for (int i = 0; i < n; ++i) max = x[i] > max ? x[i] : max;
    uint32_t sum = 0;
    for (int i = 0; i < n; ++i) sum += exp_table_[max - x[i]];
    for (int i = 0; i < n; ++i) {
        const uint32_t p = (exp_table_[max - x[i]] * 256u + sum / 2u) / sum;
        output.int8()[i] = static_cast<int8_t>(Clamp(static_cast<int32_t>(p) - 128, -128, 127));
    }
    return Status::kOk;
}

}  // namespace ops
}  // namespace tinyml
