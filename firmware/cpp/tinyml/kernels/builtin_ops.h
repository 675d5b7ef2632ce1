// builtin_ops.h - the kernels of the builtin operators and their registration.
#ifndef TINYML_KERNELS_BUILTIN_OPS_H
#define TINYML_KERNELS_BUILTIN_OPS_H

#include <cstdint>

#include "tinyml/kernel.h"
#include "tinyml/op_resolver.h"

namespace tinyml {
namespace ops {

// 3x3 convolution, 'same' padding, NHWC, per-channel int8 weights.
class Conv2D final : public Kernel {
  public:
    ~Conv2D() override;
    Status Prepare(Context& context, Node& node) override;
    Status Eval(Context& context, Node& node) override;

  private:
    int32_t* multipliers_ = nullptr;
    int* shifts_ = nullptr;
    int channels_ = 0;
    bool check_clipping_ = false;  // the node reads the sensor frame
};

// y = W x + b with per-output-unit int8 weights.
class FullyConnected final : public Kernel {
  public:
    ~FullyConnected() override;
    Status Prepare(Context& context, Node& node) override;
    Status Eval(Context& context, Node& node) override;

  private:
    int32_t* multipliers_ = nullptr;
    int* shifts_ = nullptr;
    int units_ = 0;
};

// Element-wise sum of two int8 tensors of the same shape.
class Add final : public Kernel {
  public:
    Status Prepare(Context& context, Node& node) override;
    Status Eval(Context& context, Node& node) override;

  private:
    int32_t input1_multiplier_ = 0;  // Q16
    int32_t input2_multiplier_ = 0;  // Q16
};

// int8 softmax through a table of exp(-d * scale), d = max - x.
class Softmax final : public Kernel {
  public:
    ~Softmax() override;
    Status Prepare(Context& context, Node& node) override;
    Status Eval(Context& context, Node& node) override;

  private:
    uint16_t* exp_table_ = nullptr;  // 256 entries, Q16
};

// Adds every kernel above to the resolver.
Status RegisterBuiltinOps(OpResolver& resolver);

}  // namespace ops
}  // namespace tinyml

#endif
