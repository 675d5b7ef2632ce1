// interpreter.cpp - Interpreter (interpreter.h).
#include "tinyml/interpreter.h"

#include <cstdint>

#include "tinyml/planner.h"

namespace tinyml {

Interpreter::Interpreter(const Model& model, const OpResolver& resolver)
    : model_(model), resolver_(resolver)
{
}

Interpreter::~Interpreter()
{
    if (nodes_ != nullptr) {
        for (int i = 0; i < model_.operator_count(); ++i) delete nodes_[i].kernel;
    }
    delete[] nodes_;
    delete[] tensors_;
    delete[] arena_;
}

void Interpreter::ReportError(const Node& node, const char* message)
{
    failed_node_ = node.index;
    last_error_ = message;
}

__attribute__((noinline)) Status Interpreter::AllocateTensors()
{
    if (allocated_) return Status::kOk;
    const int tensor_count = model_.tensor_count();
    tensors_ = new Tensor[tensor_count];
    for (int i = 0; i < tensor_count; ++i) {
        const TensorDesc& d = model_.tensor(i);
        Tensor& t = tensors_[i];
        t.name = d.name;
        t.type = d.type;
        t.rank = d.rank;
        for (int k = 0; k < kMaxRank; ++k) t.dims[k] = d.dims[k];
        t.bytes = static_cast<size_t>(t.elements()) * (d.type == TensorType::kInt32 ? 4u : 1u);
        t.scale = d.scale;
        t.zero_point = d.zero_point;
        size_t size = 0;
        if (d.channel_scales >= 0) {
            t.channel_scales = static_cast<const float*>(model_.buffer(d.channel_scales, &size));
        }
        if (d.buffer >= 0) {
            // Constants stay where the model has them (flash, or its inflated blob).
            t.data = const_cast<void*>(model_.buffer(d.buffer, &size));
            if (t.data == nullptr || size != t.bytes) return Status::kError;
        }
    }
    const int node_count = model_.operator_count();
    nodes_ = new Node[node_count];
    for (int i = 0; i < node_count; ++i) {
        if (PrepareNode(i) != Status::kOk) return Status::kError;
    }
    if (PlanArena() != Status::kOk) return Status::kError;
    allocated_ = true;
    return Status::kOk;
}

__attribute__((noinline)) Status Interpreter::PrepareNode(int node_index)
{
    Node& node = nodes_[node_index];
    node.index = node_index;
    node.op = &model_.op(node_index);
    node.registration = resolver_.Find(node.op->opcode);
    if (node.registration == nullptr) {
        ReportError(node, "operator not registered");
        return Status::kError;
    }
    node.kernel = node.registration->create();
    return node.kernel->Prepare(*this, node);
}

Status Interpreter::PlanArena()
{
    const int tensor_count = model_.tensor_count();
    const int node_count = model_.operator_count();
    GreedyPlanner planner(tensor_count);
    int* ids = new int[tensor_count];
    for (int i = 0; i < tensor_count; ++i) {
        ids[i] = -1;
        if (model_.tensor(i).buffer >= 0) continue;
        // Alive from the node that writes it (the input: from the start) to
        // the last node that reads it (the output: to the end).
        int first = i == model_.input() ? 0 : -1;
        int last = i == model_.output() ? node_count - 1 : -1;
        for (int n = 0; n < node_count; ++n) {
            const OperatorDesc& op = model_.op(n);
            if (op.output == i && first < 0) first = n;
            for (int k = 0; k < op.input_count; ++k) {
                if (op.inputs[k] == i) last = n;
            }
        }
        if (first < 0) continue;  // never written: not part of the graph
        if (last < first) last = first;
        ids[i] = planner.AddBuffer(tensors_[i].bytes, first, last);
    }
    arena_bytes_ = planner.Plan();
    // operator new[] gives 8-byte alignment (newlib-nano); the tensors want 16.
    arena_ = new uint8_t[arena_bytes_ + GreedyPlanner::kAlignment];
    const uintptr_t base =
        (reinterpret_cast<uintptr_t>(arena_) + GreedyPlanner::kAlignment - 1) &
        ~static_cast<uintptr_t>(GreedyPlanner::kAlignment - 1);
    for (int i = 0; i < tensor_count; ++i) {
        if (ids[i] >= 0) tensors_[i].data = reinterpret_cast<void*>(base + planner.offset(ids[i]));
    }
    delete[] ids;
    return Status::kOk;
}

__attribute__((noinline)) Status Interpreter::Invoke()
{
    if (!allocated_) return Status::kError;
    failed_node_ = -1;
    for (int i = 0; i < model_.operator_count(); ++i) {
        if (Invoke(i) != Status::kOk) return Status::kError;
    }
    return Status::kOk;
}

__attribute__((noinline)) Status Interpreter::Invoke(int node_index)
{
    if (!allocated_ || node_index < 0 || node_index >= model_.operator_count()) {
        return Status::kError;
    }
    Node& node = nodes_[node_index];
    return node.kernel->Eval(*this, node);
}

}  // namespace tinyml
