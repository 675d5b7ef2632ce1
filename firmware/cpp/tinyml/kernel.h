// kernel.h - what a kernel is to the interpreter: a class with a virtual
// Prepare (once, in AllocateTensors) and Eval (once per Invoke), one instance
// per graph node, and the Context through which it reaches its tensors.
#ifndef TINYML_KERNEL_H
#define TINYML_KERNEL_H

#include "tinyml/model.h"
#include "tinyml/status.h"
#include "tinyml/tensor.h"

namespace tinyml {

class Kernel;
struct Registration;

// One operator of the graph, as the interpreter runs it.
struct Node {
    int index = -1;  // position in the graph (0-based): the layer number
    const OperatorDesc* op = nullptr;
    const Registration* registration = nullptr;
    Kernel* kernel = nullptr;
};

// The interpreter as the kernels see it.
class Context {
  public:
    virtual Tensor& tensor(int index) = 0;
    virtual bool IsGraphInput(int tensor_index) const = 0;
    virtual void ReportError(const Node& node, const char* message) = 0;

  protected:
    ~Context() = default;
};

class Kernel {
  public:
    virtual ~Kernel() = default;
    // Checks shapes and computes what Eval needs (may allocate).
    virtual Status Prepare(Context& context, Node& node) = 0;
    // Runs the operator on the node's tensors.
    virtual Status Eval(Context& context, Node& node) = 0;
};

}  // namespace tinyml

#endif
