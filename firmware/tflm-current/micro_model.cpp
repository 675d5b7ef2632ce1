// micro_model.cpp - OUR MODEL of current TensorFlow Lite Micro's runtime (see micro_model.h):
// our own code with current TFLM's call structure and cursor rules, written from the layout
// facts in docs/tflm.md, not TFLM's code. Every function the arena observer breaks on is a
// real (noinline) function, as in a TFLM build.
#include "micro_model.h"

#include <cstring>
#include <new>

#define NOINLINE __attribute__((noinline))

namespace tflite {
TFLM_MICRO_BEGIN
namespace {

constexpr size_t kArenaAlignment = 16;
constexpr size_t kMaxScratchBuffersPerOp = 12;

uint8_t* AlignUp(uint8_t* p, size_t alignment)
{
    uintptr_t v = reinterpret_cast<uintptr_t>(p);
    return reinterpret_cast<uint8_t*>((v + alignment - 1) / alignment * alignment);
}

uint8_t* AlignDown(uint8_t* p, size_t alignment)
{
    uintptr_t v = reinterpret_cast<uintptr_t>(p);
    return reinterpret_cast<uint8_t*>(v / alignment * alignment);
}

// What the kernels reach through the context, as current TFLM's C entry points do.
void* ContextAllocatePersistentBuffer(TfLiteContext* context, size_t bytes)
{
    return static_cast<MicroInterpreterContext*>(context->impl_)->AllocatePersistentBuffer(bytes);
}

TfLiteStatus ContextRequestScratchBufferInArena(TfLiteContext* context, size_t bytes, int* index)
{
    return static_cast<MicroInterpreterContext*>(context->impl_)
        ->RequestScratchBufferInArena(bytes, index);
}

}  // namespace

// --- SingleArenaBufferAllocator: head up from buffer_head_, temporaries above the head up to
// temp_, persistent data down from buffer_tail_ to tail_.

SingleArenaBufferAllocator::SingleArenaBufferAllocator(uint8_t* buffer, size_t buffer_size)
    : buffer_head_(buffer), buffer_tail_(buffer + buffer_size), head_(buffer),
      tail_(buffer + buffer_size), temp_(buffer), temp_buffer_ptr_check_sum_(0),
      temp_buffer_count_(0)
{
}

NOINLINE SingleArenaBufferAllocator* SingleArenaBufferAllocator::Create(uint8_t* buffer_head,
                                                                       size_t buffer_size)
{
    // Built on the stack, then placed at the arena's top by its own first allocation.
    SingleArenaBufferAllocator tmp(buffer_head, buffer_size);
    uint8_t* at = tmp.AllocatePersistentBuffer(sizeof(SingleArenaBufferAllocator),
                                               alignof(SingleArenaBufferAllocator));
    return new (at) SingleArenaBufferAllocator(tmp);
}

NOINLINE uint8_t* SingleArenaBufferAllocator::AllocatePersistentBuffer(size_t size,
                                                                      size_t alignment)
{
    if (static_cast<size_t>(tail_ - head_) < size) return nullptr;
    uint8_t* placed = AlignDown(tail_ - size, alignment);
    if (placed < head_) return nullptr;
    tail_ = placed;
    return placed;
}

size_t SingleArenaBufferAllocator::GetPersistentUsedBytes() const
{
    return buffer_tail_ - tail_;
}

NOINLINE uint8_t* SingleArenaBufferAllocator::AllocateTemp(size_t size, size_t alignment)
{
    uint8_t* placed = AlignUp(temp_, alignment);
    if (placed > tail_ || static_cast<size_t>(tail_ - placed) < size) return nullptr;
    temp_ = placed + size;
    temp_buffer_ptr_check_sum_ ^= reinterpret_cast<intptr_t>(placed);
    ++temp_buffer_count_;
    return placed;
}

void SingleArenaBufferAllocator::DeallocateTemp(uint8_t* buf)
{
    temp_buffer_ptr_check_sum_ ^= reinterpret_cast<intptr_t>(buf);
    --temp_buffer_count_;
}

NOINLINE TfLiteStatus SingleArenaBufferAllocator::ResetTempAllocations()
{
    if (temp_buffer_count_ != 0 || temp_buffer_ptr_check_sum_ != 0) return kTfLiteError;
    temp_ = head_;
    return kTfLiteOk;
}

NOINLINE uint8_t* SingleArenaBufferAllocator::AllocateResizableBuffer(size_t size,
                                                                     size_t alignment)
{
    // One resizable buffer, at the head.
    if (ResizeBuffer(buffer_head_, size, alignment) != kTfLiteOk) return nullptr;
    return AlignUp(buffer_head_, alignment);
}

NOINLINE TfLiteStatus SingleArenaBufferAllocator::ResizeBuffer(uint8_t* resizable_buf,
                                                              size_t size, size_t alignment)
{
    if (resizable_buf != buffer_head_ || temp_ != head_) return kTfLiteError;
    uint8_t* start = AlignUp(buffer_head_, alignment);
    if (start > tail_ || static_cast<size_t>(tail_ - start) < size) return kTfLiteError;
    head_ = start + size;
    temp_ = head_;
    return kTfLiteOk;
}

NOINLINE TfLiteStatus SingleArenaBufferAllocator::DeallocateResizableBuffer(uint8_t* resizable_buf)
{
    return ResizeBuffer(resizable_buf, 0, 1);
}

NOINLINE TfLiteStatus SingleArenaBufferAllocator::ReserveNonPersistentOverlayMemory(
    size_t size, size_t alignment)
{
    return ResizeBuffer(buffer_head_, size, alignment);
}

size_t SingleArenaBufferAllocator::GetAvailableMemory(size_t alignment) const
{
    uint8_t* start = AlignUp(temp_, alignment);
    return start > tail_ ? 0 : static_cast<size_t>(AlignDown(tail_, alignment) - start);
}

size_t SingleArenaBufferAllocator::GetNonPersistentUsedBytes() const
{
    return (head_ > temp_ ? head_ : temp_) - buffer_head_;
}

// --- GreedyMemoryPlanner: its arrays one after another in the scratch area it is given,
// max_buffer_count_ of each; buffers placed largest first at the lowest offset that does not
// meet a buffer live at the same time.

GreedyMemoryPlanner::GreedyMemoryPlanner()
    : max_buffer_count_(0), buffer_count_(0), requirements_(nullptr),
      buffer_sizes_sorted_(nullptr), buffer_ids_sorted_(nullptr),
      buffers_sorted_by_offset_(nullptr), next_free_entry_(0), first_entry_index_(0),
      buffer_offsets_(nullptr), need_to_calculate_offsets_(true)
{
}

NOINLINE TfLiteStatus GreedyMemoryPlanner::Init(unsigned char* scratch_buffer,
                                                int scratch_buffer_size)
{
    const int per_buffer = sizeof(BufferRequirements) + sizeof(int) + sizeof(int) +
                           sizeof(ListEntry) + sizeof(int);
    max_buffer_count_ = scratch_buffer_size / per_buffer;
    buffer_count_ = 0;
    unsigned char* next = scratch_buffer;
    requirements_ = reinterpret_cast<BufferRequirements*>(next);
    next += sizeof(BufferRequirements) * max_buffer_count_;
    buffer_sizes_sorted_ = reinterpret_cast<int*>(next);
    next += sizeof(int) * max_buffer_count_;
    buffer_ids_sorted_ = reinterpret_cast<int*>(next);
    next += sizeof(int) * max_buffer_count_;
    buffers_sorted_by_offset_ = reinterpret_cast<ListEntry*>(next);
    next += sizeof(ListEntry) * max_buffer_count_;
    buffer_offsets_ = reinterpret_cast<int*>(next);
    need_to_calculate_offsets_ = true;
    return kTfLiteOk;
}

NOINLINE TfLiteStatus GreedyMemoryPlanner::AddBuffer(int size, int first_time_used,
                                                     int last_time_used)
{
    if (buffer_count_ >= max_buffer_count_) return kTfLiteError;
    BufferRequirements& r = requirements_[buffer_count_];
    r.size = size;
    r.offline_offset = -1;
    r.first_time_used = first_time_used;
    r.last_time_used = last_time_used;
    ++buffer_count_;
    need_to_calculate_offsets_ = true;
    return kTfLiteOk;
}

void GreedyMemoryPlanner::CalculateOffsetsIfNeeded()
{
    if (!need_to_calculate_offsets_) return;
    need_to_calculate_offsets_ = false;
    // Ids by size, largest first (insertion sort: few buffers).
    for (int i = 0; i < buffer_count_; ++i) {
        int j = i;
        while (j > 0 && requirements_[buffer_ids_sorted_[j - 1]].size < requirements_[i].size) {
            buffer_ids_sorted_[j] = buffer_ids_sorted_[j - 1];
            --j;
        }
        buffer_ids_sorted_[j] = i;
    }
    for (int k = 0; k < buffer_count_; ++k) {
        const int id = buffer_ids_sorted_[k];
        const BufferRequirements& me = requirements_[id];
        buffer_sizes_sorted_[k] = me.size;
        int offset = 0;
        bool moved = true;
        while (moved) {
            moved = false;
            for (int p = 0; p < k; ++p) {
                const int other = buffer_ids_sorted_[p];
                const BufferRequirements& o = requirements_[other];
                const bool live_together = o.first_time_used <= me.last_time_used &&
                                           me.first_time_used <= o.last_time_used;
                const int o_start = buffer_offsets_[other];
                const bool meet = o_start < offset + me.size && offset < o_start + o.size;
                if (live_together && meet) {
                    offset = o_start + o.size;
                    moved = true;
                }
            }
        }
        buffer_offsets_[id] = offset;
        buffers_sorted_by_offset_[k] = {offset, id, -1};
    }
}

NOINLINE TfLiteStatus GreedyMemoryPlanner::GetOffsetForBuffer(int buffer_index, int* offset)
{
    if (buffer_index < 0 || buffer_index >= buffer_count_) return kTfLiteError;
    CalculateOffsetsIfNeeded();
    *offset = buffer_offsets_[buffer_index];
    return kTfLiteOk;
}

NOINLINE size_t GreedyMemoryPlanner::GetMaximumMemorySize()
{
    CalculateOffsetsIfNeeded();
    size_t top = 0;
    for (int i = 0; i < buffer_count_; ++i) {
        const size_t end = static_cast<size_t>(buffer_offsets_[i] + requirements_[i].size);
        if (end > top) top = end;
    }
    return top;
}

// --- MicroBuiltinDataAllocator: the operators' builtin parameters, in the tail.

NOINLINE void* MicroBuiltinDataAllocator::Allocate(size_t size, size_t alignment_hint)
{
    return persistent_allocator_->AllocatePersistentBuffer(size, alignment_hint);
}

// --- MicroAllocator: placed in the arena's tail, holding the arena allocator through its two
// interfaces.

MicroAllocator::MicroAllocator(SingleArenaBufferAllocator* memory_allocator,
                               MicroMemoryPlanner* memory_planner)
    : non_persistent_buffer_allocator_(memory_allocator),
      persistent_buffer_allocator_(memory_allocator), builtin_data_allocator_(nullptr),
      memory_planner_(memory_planner), model_is_allocating_(false),
      scratch_buffer_request_count_(0), scratch_buffer_head_(nullptr), max_head_buffer_usage_(0)
{
}

NOINLINE MicroAllocator* MicroAllocator::Create(uint8_t* tensor_arena, size_t arena_size)
{
    uint8_t* aligned = AlignUp(tensor_arena, kArenaAlignment);
    SingleArenaBufferAllocator* memory_allocator =
        SingleArenaBufferAllocator::Create(aligned, tensor_arena + arena_size - aligned);
    uint8_t* planner_at = memory_allocator->AllocatePersistentBuffer(
        sizeof(GreedyMemoryPlanner), alignof(GreedyMemoryPlanner));
    if (planner_at == nullptr) return nullptr;
    return Create(memory_allocator, new (planner_at) GreedyMemoryPlanner());
}

NOINLINE MicroAllocator* MicroAllocator::Create(SingleArenaBufferAllocator* memory_allocator,
                                                MicroMemoryPlanner* memory_planner)
{
    uint8_t* at = memory_allocator->AllocatePersistentBuffer(sizeof(MicroAllocator),
                                                             alignof(MicroAllocator));
    if (at == nullptr) return nullptr;
    return new (at) MicroAllocator(memory_allocator, memory_planner);
}

NOINLINE TfLiteStatus MicroAllocator::InitScratchBufferData()
{
    scratch_buffer_request_count_ = 0;
    scratch_buffer_head_ = non_persistent_buffer_allocator_->AllocateResizableBuffer(
        sizeof(ScratchBufferRequest) * kMaxScratchBuffersPerOp, alignof(ScratchBufferRequest));
    return scratch_buffer_head_ == nullptr ? kTfLiteError : kTfLiteOk;
}

ScratchBufferRequest* MicroAllocator::GetScratchBufferRequests()
{
    return reinterpret_cast<ScratchBufferRequest*>(
        AlignUp(scratch_buffer_head_, alignof(ScratchBufferRequest)));
}

NOINLINE TfLiteStatus MicroAllocator::AllocateTfLiteEvalTensors(const Model* model,
                                                                SubgraphAllocations* allocations)
{
    auto* tensors = reinterpret_cast<TfLiteEvalTensor*>(
        persistent_buffer_allocator_->AllocatePersistentBuffer(
            sizeof(TfLiteEvalTensor) * model->tensor_count, alignof(TfLiteEvalTensor)));
    if (tensors == nullptr) return kTfLiteError;
    for (uint32_t i = 0; i < model->tensor_count; ++i) tensors[i] = {nullptr, nullptr, 9};
    allocations->tensors = tensors;
    return kTfLiteOk;
}

NOINLINE TfLiteStatus MicroAllocator::AllocateNodeAndRegistrations(
    const Model* model, SubgraphAllocations* allocations)
{
    auto* nodes = reinterpret_cast<NodeAndRegistration*>(
        persistent_buffer_allocator_->AllocatePersistentBuffer(
            sizeof(NodeAndRegistration) * model->operator_count, alignof(NodeAndRegistration)));
    if (nodes == nullptr) return kTfLiteError;
    std::memset(nodes, 0, sizeof(NodeAndRegistration) * model->operator_count);
    allocations->node_and_registrations = nodes;
    return kTfLiteOk;
}

NOINLINE SubgraphAllocations* MicroAllocator::StartModelAllocation(const Model* model)
{
    if (model_is_allocating_) return nullptr;
    model_is_allocating_ = true;
    uint8_t* at = persistent_buffer_allocator_->AllocatePersistentBuffer(
        sizeof(MicroBuiltinDataAllocator), alignof(MicroBuiltinDataAllocator));
    if (at == nullptr) return nullptr;
    builtin_data_allocator_ = new (at) MicroBuiltinDataAllocator(persistent_buffer_allocator_);
    if (InitScratchBufferData() != kTfLiteOk) return nullptr;
    auto* output = reinterpret_cast<SubgraphAllocations*>(
        persistent_buffer_allocator_->AllocatePersistentBuffer(sizeof(SubgraphAllocations),
                                                               alignof(SubgraphAllocations)));
    if (output == nullptr) return nullptr;
    if (AllocateTfLiteEvalTensors(model, output) != kTfLiteOk ||
        AllocateNodeAndRegistrations(model, output) != kTfLiteOk) {
        return nullptr;
    }
    return output;
}

NOINLINE void* MicroAllocator::AllocatePersistentBuffer(size_t bytes)
{
    return persistent_buffer_allocator_->AllocatePersistentBuffer(bytes, kArenaAlignment);
}

NOINLINE uint8_t* MicroAllocator::AllocateTempBuffer(size_t size, size_t alignment)
{
    return non_persistent_buffer_allocator_->AllocateTemp(size, alignment);
}

void MicroAllocator::DeallocateTempBuffer(uint8_t* buffer)
{
    non_persistent_buffer_allocator_->DeallocateTemp(buffer);
}

NOINLINE TfLiteStatus MicroAllocator::ResetTempAllocations()
{
    return non_persistent_buffer_allocator_->ResetTempAllocations();
}

NOINLINE TfLiteStatus MicroAllocator::RequestScratchBufferInArena(size_t bytes, int subgraph_idx,
                                                                  int* buffer_idx)
{
    ScratchBufferRequest* r = &GetScratchBufferRequests()[scratch_buffer_request_count_];
    r->bytes = bytes;
    r->node_idx = -1;
    r->subgraph_idx = subgraph_idx;
    *buffer_idx = static_cast<int>(scratch_buffer_request_count_++);
    return kTfLiteOk;
}

NOINLINE TfLiteStatus MicroAllocator::FinishPrepareNodeAllocations(int node_id)
{
    if (ResetTempAllocations() != kTfLiteOk) return kTfLiteError;
    ScratchBufferRequest* requests = GetScratchBufferRequests();
    for (size_t i = 0; i < scratch_buffer_request_count_; ++i) {
        if (requests[i].node_idx == -1) requests[i].node_idx = node_id;
    }
    // Room for the next operator's requests.
    return non_persistent_buffer_allocator_->ResizeBuffer(
        scratch_buffer_head_,
        sizeof(ScratchBufferRequest) * (scratch_buffer_request_count_ + kMaxScratchBuffersPerOp),
        alignof(ScratchBufferRequest));
}

NOINLINE TfLiteStatus MicroAllocator::AllocateScratchBufferHandles(ScratchBufferHandle** handles,
                                                                   size_t count)
{
    if (count == 0) return kTfLiteOk;
    *handles = reinterpret_cast<ScratchBufferHandle*>(
        persistent_buffer_allocator_->AllocatePersistentBuffer(sizeof(ScratchBufferHandle) * count,
                                                               alignof(ScratchBufferHandle)));
    return *handles == nullptr ? kTfLiteError : kTfLiteOk;
}

// One buffer to plan: a tensor written by an operator (or a graph input) or a scratch buffer.
struct AllocationInfo {
    size_t bytes;
    void** output_ptr;
    int first_created;
    int last_used;
    int32_t offline_offset;
    bool needs_allocating;
};

NOINLINE TfLiteStatus MicroAllocator::CommitStaticMemoryPlan(
    const Model* model, SubgraphAllocations* allocations,
    ScratchBufferHandle* scratch_buffer_handles)
{
    const size_t count = model->tensor_count + scratch_buffer_request_count_;
    // The buffers' lifetimes, in temporaries above the head.
    auto* info = reinterpret_cast<AllocationInfo*>(non_persistent_buffer_allocator_->AllocateTemp(
        sizeof(AllocationInfo) * count, alignof(AllocationInfo)));
    if (info == nullptr) return kTfLiteError;
    for (uint32_t t = 0; t < model->tensor_count; ++t) {
        info[t] = {static_cast<size_t>(model->tensor_bytes[t]),
                   &allocations->tensors[t].data, -1, -1, -1, true};
    }
    for (uint32_t op = 0; op < model->operator_count; ++op) {
        AllocationInfo& in = info[model->op_inputs[op]];
        AllocationInfo& out = info[model->op_outputs[op]];
        if (in.first_created < 0) in.first_created = 0;  // a graph input
        in.last_used = static_cast<int>(op);
        if (out.first_created < 0) out.first_created = static_cast<int>(op);
        out.last_used = static_cast<int>(op);
    }
    ScratchBufferRequest* requests = GetScratchBufferRequests();
    for (size_t s = 0; s < scratch_buffer_request_count_; ++s) {
        info[model->tensor_count + s] = {requests[s].bytes,
                                         reinterpret_cast<void**>(&scratch_buffer_handles[s].data),
                                         requests[s].node_idx, requests[s].node_idx, -1, true};
    }
    // The planner gets the rest of the free gap.
    const size_t remaining = non_persistent_buffer_allocator_->GetAvailableMemory(kArenaAlignment);
    uint8_t* planner_arena = non_persistent_buffer_allocator_->AllocateTemp(remaining,
                                                                            kArenaAlignment);
    if (planner_arena == nullptr) return kTfLiteError;
    auto* planner = static_cast<GreedyMemoryPlanner*>(memory_planner_);
    planner->Init(planner_arena, static_cast<int>(remaining));
    for (size_t i = 0; i < count; ++i) {
        // Buffers are aligned to 16 in the head.
        const int aligned = static_cast<int>((info[i].bytes + 15) / 16 * 16);
        if (planner->AddBuffer(aligned, info[i].first_created, info[i].last_used) != kTfLiteOk) {
            return kTfLiteError;
        }
    }
    uint8_t* head_start = AlignUp(scratch_buffer_head_, kArenaAlignment);
    for (size_t i = 0; i < count; ++i) {
        int offset = 0;
        if (planner->GetOffsetForBuffer(static_cast<int>(i), &offset) != kTfLiteOk) {
            return kTfLiteError;
        }
        *info[i].output_ptr = head_start + offset;
    }
    non_persistent_buffer_allocator_->DeallocateTemp(planner_arena);
    non_persistent_buffer_allocator_->DeallocateTemp(reinterpret_cast<uint8_t*>(info));
    if (non_persistent_buffer_allocator_->ResetTempAllocations() != kTfLiteOk) return kTfLiteError;
    if (non_persistent_buffer_allocator_->DeallocateResizableBuffer(scratch_buffer_head_) !=
        kTfLiteOk) {
        return kTfLiteError;
    }
    const size_t head_usage = memory_planner_->GetMaximumMemorySize();
    if (max_head_buffer_usage_ < head_usage) max_head_buffer_usage_ = head_usage;
    return non_persistent_buffer_allocator_->ReserveNonPersistentOverlayMemory(
        max_head_buffer_usage_, kArenaAlignment);
}

NOINLINE TfLiteStatus MicroAllocator::FinishModelAllocation(
    const Model* model, SubgraphAllocations* allocations,
    ScratchBufferHandle** scratch_buffer_handles)
{
    if (!model_is_allocating_) return kTfLiteError;
    if (AllocateScratchBufferHandles(scratch_buffer_handles, scratch_buffer_request_count_) !=
        kTfLiteOk) {
        return kTfLiteError;
    }
    if (CommitStaticMemoryPlan(model, allocations, *scratch_buffer_handles) != kTfLiteOk) {
        return kTfLiteError;
    }
    model_is_allocating_ = false;
    return kTfLiteOk;
}

NOINLINE size_t MicroAllocator::used_bytes() const
{
    return non_persistent_buffer_allocator_->GetNonPersistentUsedBytes() +
           persistent_buffer_allocator_->GetPersistentUsedBytes();
}

// --- MicroInterpreterGraph: the operator loops, current_operator_index_ the running node.

MicroInterpreterGraph::MicroInterpreterGraph(TfLiteContext* context, const Model* model,
                                             MicroAllocator* allocator)
    : context_(context), model_(model), allocator_(allocator), subgraph_allocations_(nullptr),
      current_subgraph_index_(0), current_operator_index_(0), resource_variables_(nullptr),
      subgraphs_(nullptr)
{
}

NOINLINE TfLiteStatus MicroInterpreterGraph::InitSubgraphs()
{
    NodeAndRegistration* nodes = subgraph_allocations_[0].node_and_registrations;
    for (current_operator_index_ = 0; current_operator_index_ < model_->operator_count;
         ++current_operator_index_) {
        NodeAndRegistration& n = nodes[current_operator_index_];
        if (n.registration->init != nullptr) {
            n.node.user_data = n.registration->init(context_, nullptr, 0);
        }
    }
    return kTfLiteOk;
}

NOINLINE TfLiteStatus MicroInterpreterGraph::PrepareSubgraphs()
{
    NodeAndRegistration* nodes = subgraph_allocations_[0].node_and_registrations;
    for (current_operator_index_ = 0; current_operator_index_ < model_->operator_count;
         ++current_operator_index_) {
        NodeAndRegistration& n = nodes[current_operator_index_];
        if (n.registration->prepare != nullptr &&
            n.registration->prepare(context_, &n.node) != kTfLiteOk) {
            return kTfLiteError;
        }
        if (allocator_->FinishPrepareNodeAllocations(static_cast<int>(current_operator_index_)) !=
            kTfLiteOk) {
            return kTfLiteError;
        }
    }
    return kTfLiteOk;
}

NOINLINE TfLiteStatus MicroInterpreterGraph::InvokeSubgraph(int subgraph_idx)
{
    current_subgraph_index_ = subgraph_idx;
    NodeAndRegistration* nodes = subgraph_allocations_[subgraph_idx].node_and_registrations;
    for (current_operator_index_ = 0; current_operator_index_ < model_->operator_count;
         ++current_operator_index_) {
        NodeAndRegistration& n = nodes[current_operator_index_];
        if (n.registration->invoke(context_, &n.node) != kTfLiteOk) return kTfLiteError;
    }
    return kTfLiteOk;
}

// --- MicroInterpreterContext: what kernels ask of the interpreter.

MicroInterpreterContext::MicroInterpreterContext(MicroAllocator* allocator, const Model* model,
                                                 MicroInterpreterGraph* graph)
    : allocator_(*allocator), graph_(*graph), model_(model), state_(InterpreterState::kInit)
{
}

NOINLINE void* MicroInterpreterContext::AllocatePersistentBuffer(size_t bytes)
{
    return allocator_.AllocatePersistentBuffer(bytes);
}

NOINLINE TfLiteStatus MicroInterpreterContext::RequestScratchBufferInArena(size_t bytes,
                                                                           int* buffer_idx)
{
    if (state_ != InterpreterState::kPrepare) return kTfLiteError;
    return allocator_.RequestScratchBufferInArena(bytes, 0, buffer_idx);
}

NOINLINE uint8_t* MicroInterpreterContext::AllocateTempBuffer(size_t size, size_t alignment)
{
    if (state_ != InterpreterState::kPrepare) return nullptr;
    return allocator_.AllocateTempBuffer(size, alignment);
}

void MicroInterpreterContext::DeallocateTempBuffer(uint8_t* buffer)
{
    allocator_.DeallocateTempBuffer(buffer);
}

void MicroInterpreterContext::SetInterpreterState(InterpreterState state)
{
    state_ = state;
}

MicroInterpreterContext::InterpreterState MicroInterpreterContext::GetInterpreterState() const
{
    return state_;
}

// --- MicroInterpreter.

NOINLINE MicroInterpreter::MicroInterpreter(const Model* model, const MicroOpResolver& op_resolver,
                                            uint8_t* tensor_arena, size_t tensor_arena_size,
                                            void* resource_variables, void* profiler,
                                            bool preserve_all_tensors)
    : model_(model), op_resolver_(op_resolver),
      allocator_(*MicroAllocator::Create(tensor_arena, tensor_arena_size)),
      graph_(&context_, model, &allocator_), tensors_allocated_(false),
      initialization_status_(kTfLiteError), input_tensors_(nullptr), output_tensors_(nullptr),
      micro_context_(&allocator_, model_, &graph_)
{
    (void)resource_variables;
    (void)profiler;
    (void)preserve_all_tensors;
    Init();
}

NOINLINE MicroInterpreter::MicroInterpreter(const Model* model, const MicroOpResolver& op_resolver,
                                            MicroAllocator* allocator, void* resource_variables,
                                            void* profiler)
    : model_(model), op_resolver_(op_resolver), allocator_(*allocator),
      graph_(&context_, model, allocator), tensors_allocated_(false),
      initialization_status_(kTfLiteError), input_tensors_(nullptr), output_tensors_(nullptr),
      micro_context_(&allocator_, model_, &graph_)
{
    (void)resource_variables;
    (void)profiler;
    Init();
}

NOINLINE MicroInterpreter::~MicroInterpreter()
{
    SubgraphAllocations* allocations = graph_.GetAllocations();
    if (allocations == nullptr) return;
    for (uint32_t i = 0; i < model_->operator_count; ++i) {
        NodeAndRegistration& n = allocations[0].node_and_registrations[i];
        if (n.registration != nullptr && n.registration->free != nullptr) {
            n.registration->free(&context_, n.node.user_data);
        }
    }
}

void MicroInterpreter::Init()
{
    micro_context_.SetInterpreterState(MicroInterpreterContext::InterpreterState::kInit);
    context_.impl_ = &micro_context_;
    context_.tensors_size = model_->tensor_count;
    context_.AllocatePersistentBuffer = ContextAllocatePersistentBuffer;
    context_.RequestScratchBufferInArena = ContextRequestScratchBufferInArena;
    initialization_status_ = kTfLiteOk;
}

NOINLINE TfLiteStatus MicroInterpreter::PrepareNodeAndRegistrationDataFromFlatbuffer()
{
    NodeAndRegistration* nodes = graph_.GetAllocations()[0].node_and_registrations;
    MicroBuiltinDataAllocator* builtin_data = allocator_.GetBuiltinDataAllocator();
    for (uint32_t i = 0; i < model_->operator_count; ++i) {
        const TFLMRegistration* registration = op_resolver_.FindOp(model_->op_indices[i]);
        if (registration == nullptr) return kTfLiteError;
        nodes[i].registration = registration;
        nodes[i].node = {};
        // A builtin operator's parameters (8 B in this model), as the parser allocates them.
        if (registration->builtin_code != BuiltinOperator_CUSTOM) {
            void* params = builtin_data->Allocate(8, 4);
            if (params == nullptr) return kTfLiteError;
            nodes[i].node.builtin_data = params;
        }
    }
    return kTfLiteOk;
}

NOINLINE TfLiteStatus MicroInterpreter::AllocateTensors()
{
    SubgraphAllocations* allocations = allocator_.StartModelAllocation(model_);
    if (allocations == nullptr) {
        initialization_status_ = kTfLiteError;
        return kTfLiteError;
    }
    graph_.SetSubgraphAllocations(allocations);
    if (PrepareNodeAndRegistrationDataFromFlatbuffer() != kTfLiteOk) return kTfLiteError;
    micro_context_.SetInterpreterState(MicroInterpreterContext::InterpreterState::kInit);
    if (graph_.InitSubgraphs() != kTfLiteOk) return kTfLiteError;
    micro_context_.SetInterpreterState(MicroInterpreterContext::InterpreterState::kPrepare);
    if (graph_.PrepareSubgraphs() != kTfLiteOk) return kTfLiteError;
    micro_context_.SetInterpreterState(MicroInterpreterContext::InterpreterState::kMemoryPlanning);
    if (allocator_.FinishModelAllocation(model_, allocations, &scratch_buffer_handles_) !=
        kTfLiteOk) {
        return kTfLiteError;
    }
    // The input and output tensor pointer arrays (one each), as current TFLM keeps them.
    input_tensors_ = static_cast<void**>(allocator_.AllocatePersistentBuffer(sizeof(void*)));
    output_tensors_ = static_cast<void**>(allocator_.AllocatePersistentBuffer(sizeof(void*)));
    if (input_tensors_ == nullptr || output_tensors_ == nullptr) return kTfLiteError;
    tensors_allocated_ = true;
    micro_context_.SetInterpreterState(MicroInterpreterContext::InterpreterState::kInvoke);
    return kTfLiteOk;
}

NOINLINE TfLiteStatus MicroInterpreter::Invoke()
{
    if (initialization_status_ != kTfLiteOk || !tensors_allocated_) return kTfLiteError;
    return graph_.InvokeSubgraph(0);
}

TFLM_MICRO_END
}  // namespace tflite
