// register.cpp - the builtin kernels in the resolver; each node gets its own
// instance from Create<K>() (operator new) in Interpreter::PrepareNode.
#include "tinyml/kernels/builtin_ops.h"

namespace tinyml {
namespace ops {
namespace {

template <class K>
Kernel* Create()
{
    return new K();
}

}  // namespace

Status RegisterBuiltinOps(OpResolver& resolver)
{
    if (resolver.AddBuiltin(BuiltinOp::kConv2D, "CONV_2D", &Create<Conv2D>) != Status::kOk ||
        resolver.AddBuiltin(BuiltinOp::kFullyConnected, "FULLY_CONNECTED",
                            &Create<FullyConnected>) != Status::kOk ||
        resolver.AddBuiltin(BuiltinOp::kAdd, "ADD", &Create<Add>) != Status::kOk ||
        resolver.AddBuiltin(BuiltinOp::kSoftmax, "SOFTMAX", &Create<Softmax>) != Status::kOk) {
        return Status::kError;
    }
    return Status::kOk;
}

}  // namespace ops
}  // namespace tinyml
