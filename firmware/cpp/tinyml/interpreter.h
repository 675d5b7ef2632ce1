// interpreter.h - runs a Model: AllocateTensors creates one kernel per node
// (through the OpResolver), prepares it and plans the activation arena;
// Invoke runs every node in order. The interpreter owns its tensors, nodes,
// kernels and arena; its destructor frees them.
#ifndef TINYML_INTERPRETER_H
#define TINYML_INTERPRETER_H

#include <cstddef>
#include <cstdint>

#include "tinyml/kernel.h"
#include "tinyml/model.h"
#include "tinyml/op_resolver.h"
#include "tinyml/status.h"
#include "tinyml/tensor.h"

namespace tinyml {

class Interpreter final : public Context {
  public:
    Interpreter(const Model& model, const OpResolver& resolver);
    ~Interpreter();
    Interpreter(const Interpreter&) = delete;
    Interpreter& operator=(const Interpreter&) = delete;

    // Tensors, nodes, kernels (Prepare) and the arena; once per interpreter.
    Status AllocateTensors();
    // The whole graph, node after node; stops at the first node that fails.
    Status Invoke();
    // One node (the layer `node_index`).
    Status Invoke(int node_index);

    Tensor* input() { return allocated_ ? &tensors_[model_.input()] : nullptr; }
    const Tensor* output() const { return allocated_ ? &tensors_[model_.output()] : nullptr; }
    int node_count() const { return model_.operator_count(); }
    size_t arena_bytes() const { return arena_bytes_; }
    // The node whose Prepare or Eval failed last (-1: none).
    int failed_node() const { return failed_node_; }
    const char* last_error() const { return last_error_; }

    // Context
    Tensor& tensor(int index) override { return tensors_[index]; }
    bool IsGraphInput(int tensor_index) const override { return tensor_index == model_.input(); }
    void ReportError(const Node& node, const char* message) override;

  private:
    Status PrepareNode(int node_index);
    Status PlanArena();

    const Model& model_;
    const OpResolver& resolver_;
    Tensor* tensors_ = nullptr;
    Node* nodes_ = nullptr;
    uint8_t* arena_ = nullptr;  // as allocated; the tensors use it 16-aligned
    size_t arena_bytes_ = 0;
    bool allocated_ = false;
    int failed_node_ = -1;
    const char* last_error_ = nullptr;
};

}  // namespace tinyml

#endif
