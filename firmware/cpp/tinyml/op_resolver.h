// op_resolver.h - the registry of kernels: which class implements which
// builtin operator.
#ifndef TINYML_OP_RESOLVER_H
#define TINYML_OP_RESOLVER_H

#include "tinyml/kernel.h"
#include "tinyml/model.h"
#include "tinyml/status.h"

namespace tinyml {

using KernelFactory = Kernel* (*)();

struct Registration {
    BuiltinOp op = BuiltinOp::kConv2D;
    const char* name = nullptr;
    KernelFactory create = nullptr;  // a new kernel instance (operator new)
};

class OpResolver {
  public:
    OpResolver();
    Status AddBuiltin(BuiltinOp op, const char* name, KernelFactory create);
    const Registration* Find(BuiltinOp op) const;
    int size() const { return count_; }

  private:
    static constexpr int kMaxOps = 8;
    Registration registrations_[kMaxOps];
    int count_;
};

}  // namespace tinyml

#endif
