// add.cpp - Add: element-wise sum of two int8 tensors of one shape, each
// rescaled to the output's scale with a Q16 multiplier.
#include "tinyml/kernels/builtin_ops.h"

#include "tinyml/quant.h"

namespace tinyml {
namespace ops {

Status Add::Prepare(Context& context, Node& node)
{
    const OperatorDesc& op = *node.op;
    if (op.input_count != 2) return Status::kError;
    const Tensor& a = context.tensor(op.inputs[0]);
    const Tensor& b = context.tensor(op.inputs[1]);
    const Tensor& output = context.tensor(op.output);
    if (a.elements() != b.elements() || a.elements() != output.elements() ||
        !(output.scale > 0.0f)) {
        context.ReportError(node, "Add: shapes do not match");
        return Status::kError;
    }
    input1_multiplier_ = static_cast<int32_t>(a.scale / output.scale * 65536.0f + 0.5f);
    input2_multiplier_ = static_cast<int32_t>(b.scale / output.scale * 65536.0f + 0.5f);
    return Status::kOk;
}

Status Add::Eval(Context& context, Node& node)
{
    const OperatorDesc& op = *node.op;
    const Tensor& a = context.tensor(op.inputs[0]);
    const Tensor& b = context.tensor(op.inputs[1]);
    Tensor& output = context.tensor(op.output);
    const int n = output.elements();
    for (int i = 0; i < n; ++i) {
        const int32_t sum = (a.int8()[i] - a.zero_point) * input1_multiplier_ +
                            (b.int8()[i] - b.zero_point) * input2_multiplier_;
        const int32_t v = ((sum + 32768) >> 16) + output.zero_point;
        output.int8()[i] = static_cast<int8_t>(Clamp(v, op.relu ? output.zero_point : -128, 127));
    }
    return Status::kOk;
}

}  // namespace ops
}  // namespace tinyml
