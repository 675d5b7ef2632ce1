// op_resolver.cpp - OpResolver (op_resolver.h).
#include "tinyml/op_resolver.h"

namespace tinyml {

OpResolver::OpResolver() : count_(0) {}

Status OpResolver::AddBuiltin(BuiltinOp op, const char* name, KernelFactory create)
{
    if (count_ == kMaxOps || Find(op) != nullptr || create == nullptr) return Status::kError;
    registrations_[count_++] = Registration{op, name, create};
    return Status::kOk;
}

const Registration* OpResolver::Find(BuiltinOp op) const
{
    for (int i = 0; i < count_; ++i) {
        if (registrations_[i].op == op) return &registrations_[i];
    }
    return nullptr;
}

}  // namespace tinyml
