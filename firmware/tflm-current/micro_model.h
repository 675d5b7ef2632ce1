// micro_model.h - OUR MODEL of current TensorFlow Lite Micro's shape (tflite-micro of 2026-10,
// namespace tflite::micro), NOT TFLM: the classes the arena observer reads, declared with
// current TFLM's class and member names in the same order (facts about the layout, see
// docs/tflm.md), and a small runtime of our own (micro_model.cpp) with current TFLM's call
// structure: the interpreter's constructor creates the MicroAllocator, which creates the
// SingleArenaBufferAllocator at the arena's top; AllocateTensors starts the model allocation,
// runs each operator's Init and Prepare through the graph (persistent buffers through the
// context, temporaries through AllocateTemp), plans with a greedy planner in the free gap and
// commits the plan to the head. It runs no model: the operators are made up (micro_model.cpp).
// Built with -DTFLM_NAMESPACE_TFLITE the classes are in tflite, as in TFLM until 2026-08.
#ifndef TFLM_CURRENT_MICRO_MODEL_H
#define TFLM_CURRENT_MICRO_MODEL_H

#include <cstddef>
#include <cstdint>

extern "C" {
typedef enum { kTfLiteOk = 0, kTfLiteError = 1 } TfLiteStatus;
}

namespace tflite {

// The model: our own stand-in for the flatbuffer (the observer names it by its address).
// Operator i reads tensor op_inputs[i] and writes op_outputs[i]; tensor t has tensor_bytes[t].
struct Model {
    uint32_t operator_count;
    uint32_t tensor_count;
    const int32_t* tensor_bytes;
    const int32_t* op_inputs;
    const int32_t* op_outputs;
    const int32_t* op_indices;  // into the op resolver
};

enum BuiltinOperator : int32_t {
    BuiltinOperator_ADD = 0,
    BuiltinOperator_CONV_2D = 3,
    BuiltinOperator_FULLY_CONNECTED = 9,
    BuiltinOperator_SOFTMAX = 25,
    BuiltinOperator_CUSTOM = 32,
    BuiltinOperator_MIN = BuiltinOperator_ADD,
    BuiltinOperator_MAX = BuiltinOperator_CUSTOM
};

#ifdef TFLM_NAMESPACE_TFLITE
#define TFLM_MICRO_BEGIN
#define TFLM_MICRO_END
#else
#define TFLM_MICRO_BEGIN namespace micro {
#define TFLM_MICRO_END }
#endif

TFLM_MICRO_BEGIN

struct TfLiteIntArray {
    int size;
    int data[1];
};

struct TfLiteEvalTensor {
    void* data;
    TfLiteIntArray* dims;
    int type;
};

struct TfLiteContext;
struct TfLiteNode {
    TfLiteIntArray* inputs;
    TfLiteIntArray* outputs;
    TfLiteIntArray* intermediates;
    void* user_data;
    const void* builtin_data;
    const void* custom_initial_data;
    int custom_initial_data_size;
};

struct TfLiteContext {
    size_t tensors_size;
    void* impl_;
    void* (*AllocatePersistentBuffer)(TfLiteContext* context, size_t bytes);
    TfLiteStatus (*RequestScratchBufferInArena)(TfLiteContext* context, size_t bytes, int* index);
};

struct TFLMRegistration {
    void* (*init)(TfLiteContext* context, const char* buffer, size_t length);
    void (*free)(TfLiteContext* context, void* buffer);
    TfLiteStatus (*prepare)(TfLiteContext* context, TfLiteNode* node);
    TfLiteStatus (*invoke)(TfLiteContext* context, TfLiteNode* node);
    void (*reset)(TfLiteContext* context, void* buffer);
    int32_t builtin_code;
    const char* custom_name;
};

struct NodeAndRegistration {
    TfLiteNode node;
    const TFLMRegistration* registration;
};

struct SubgraphAllocations {
    NodeAndRegistration* node_and_registrations;
    TfLiteEvalTensor* tensors;
};

struct ScratchBufferHandle {
    uint8_t* data;
};

class INonPersistentBufferAllocator {
 public:
    virtual ~INonPersistentBufferAllocator() {}
    virtual uint8_t* AllocateResizableBuffer(size_t size, size_t alignment) = 0;
    virtual TfLiteStatus ResizeBuffer(uint8_t* resizable_buf, size_t size, size_t alignment) = 0;
    virtual TfLiteStatus DeallocateResizableBuffer(uint8_t* resizable_buf) = 0;
    virtual uint8_t* AllocateTemp(size_t size, size_t alignment) = 0;
    virtual void DeallocateTemp(uint8_t* buf) = 0;
    virtual TfLiteStatus ResetTempAllocations() = 0;
    virtual TfLiteStatus ReserveNonPersistentOverlayMemory(size_t size, size_t alignment) = 0;
    virtual size_t GetAvailableMemory(size_t alignment) const = 0;
    virtual size_t GetNonPersistentUsedBytes() const = 0;
};

class IPersistentBufferAllocator {
 public:
    virtual ~IPersistentBufferAllocator() {}
    virtual uint8_t* AllocatePersistentBuffer(size_t size, size_t alignment) = 0;
    virtual size_t GetPersistentUsedBytes() const = 0;
};

class SingleArenaBufferAllocator : public INonPersistentBufferAllocator,
                                   public IPersistentBufferAllocator {
 public:
    SingleArenaBufferAllocator(uint8_t* buffer, size_t buffer_size);
    static SingleArenaBufferAllocator* Create(uint8_t* buffer_head, size_t buffer_size);

    uint8_t* AllocateResizableBuffer(size_t size, size_t alignment) override;
    TfLiteStatus ResizeBuffer(uint8_t* resizable_buf, size_t size, size_t alignment) override;
    TfLiteStatus DeallocateResizableBuffer(uint8_t* resizable_buf) override;
    uint8_t* AllocateTemp(size_t size, size_t alignment) override;
    void DeallocateTemp(uint8_t* buf) override;
    TfLiteStatus ResetTempAllocations() override;
    TfLiteStatus ReserveNonPersistentOverlayMemory(size_t size, size_t alignment) override;
    size_t GetAvailableMemory(size_t alignment) const override;
    size_t GetNonPersistentUsedBytes() const override;
    uint8_t* AllocatePersistentBuffer(size_t size, size_t alignment) override;
    size_t GetPersistentUsedBytes() const override;

 private:
    uint8_t* buffer_head_;
    uint8_t* buffer_tail_;
    uint8_t* head_;
    uint8_t* tail_;
    uint8_t* temp_;
    intptr_t temp_buffer_ptr_check_sum_;
    int temp_buffer_count_;
};

class MicroMemoryPlanner {
 public:
    virtual ~MicroMemoryPlanner() {}
    virtual TfLiteStatus AddBuffer(int size, int first_time_used, int last_time_used) = 0;
    virtual size_t GetMaximumMemorySize() = 0;
    virtual TfLiteStatus GetOffsetForBuffer(int buffer_index, int* offset) = 0;
};

class GreedyMemoryPlanner : public MicroMemoryPlanner {
 public:
    struct ListEntry {
        int offset;
        int requirements_index;
        int next_entry_index;
    };
    GreedyMemoryPlanner();
    TfLiteStatus Init(unsigned char* scratch_buffer, int scratch_buffer_size);
    TfLiteStatus AddBuffer(int size, int first_time_used, int last_time_used) override;
    size_t GetMaximumMemorySize() override;
    TfLiteStatus GetOffsetForBuffer(int buffer_index, int* offset) override;

 private:
    void CalculateOffsetsIfNeeded();
    int max_buffer_count_;
    int buffer_count_;
    struct BufferRequirements {
        int size;
        int offline_offset;
        int first_time_used;
        int last_time_used;
    };
    BufferRequirements* requirements_;
    int* buffer_sizes_sorted_;
    int* buffer_ids_sorted_;
    ListEntry* buffers_sorted_by_offset_;
    int next_free_entry_;
    int first_entry_index_;
    int* buffer_offsets_;
    bool need_to_calculate_offsets_;
};

// A scratch buffer request, kept in the head while the model is prepared.
struct ScratchBufferRequest {
    size_t bytes;
    int node_idx;
    int subgraph_idx;
};

class MicroBuiltinDataAllocator {
 public:
    explicit MicroBuiltinDataAllocator(IPersistentBufferAllocator* persistent)
        : persistent_allocator_(persistent) {}
    void* Allocate(size_t size, size_t alignment_hint);

 private:
    IPersistentBufferAllocator* persistent_allocator_;
};

class MicroAllocator {
 public:
    MicroAllocator(SingleArenaBufferAllocator* memory_allocator, MicroMemoryPlanner* memory_planner);
    virtual ~MicroAllocator() {}
    static MicroAllocator* Create(uint8_t* tensor_arena, size_t arena_size);
    static MicroAllocator* Create(SingleArenaBufferAllocator* memory_allocator,
                                  MicroMemoryPlanner* memory_planner);

    SubgraphAllocations* StartModelAllocation(const Model* model);
    TfLiteStatus FinishModelAllocation(const Model* model, SubgraphAllocations* allocations,
                                       ScratchBufferHandle** scratch_buffer_handles);
    void* AllocatePersistentBuffer(size_t bytes);
    uint8_t* AllocateTempBuffer(size_t size, size_t alignment);
    void DeallocateTempBuffer(uint8_t* buffer);
    TfLiteStatus ResetTempAllocations();
    TfLiteStatus RequestScratchBufferInArena(size_t bytes, int subgraph_idx, int* buffer_idx);
    TfLiteStatus FinishPrepareNodeAllocations(int node_id);
    size_t used_bytes() const;
    MicroBuiltinDataAllocator* GetBuiltinDataAllocator() { return builtin_data_allocator_; }

 private:
    TfLiteStatus InitScratchBufferData();
    TfLiteStatus AllocateTfLiteEvalTensors(const Model* model, SubgraphAllocations* allocations);
    TfLiteStatus AllocateNodeAndRegistrations(const Model* model, SubgraphAllocations* allocations);
    TfLiteStatus AllocateScratchBufferHandles(ScratchBufferHandle** handles, size_t count);
    TfLiteStatus CommitStaticMemoryPlan(const Model* model, SubgraphAllocations* allocations,
                                        ScratchBufferHandle* scratch_buffer_handles);
    ScratchBufferRequest* GetScratchBufferRequests();

    INonPersistentBufferAllocator* non_persistent_buffer_allocator_;
    IPersistentBufferAllocator* persistent_buffer_allocator_;
    MicroBuiltinDataAllocator* builtin_data_allocator_;
    MicroMemoryPlanner* memory_planner_;
    bool model_is_allocating_;
    size_t scratch_buffer_request_count_;
    uint8_t* scratch_buffer_head_;
    size_t max_head_buffer_usage_;
};

class MicroGraph {
 public:
    virtual ~MicroGraph() {}
};

class MicroInterpreterGraph : public MicroGraph {
 public:
    MicroInterpreterGraph(TfLiteContext* context, const Model* model, MicroAllocator* allocator);
    virtual TfLiteStatus InitSubgraphs();
    virtual TfLiteStatus PrepareSubgraphs();
    virtual TfLiteStatus InvokeSubgraph(int subgraph_idx);
    void SetSubgraphAllocations(SubgraphAllocations* allocations)
    {
        subgraph_allocations_ = allocations;
    }
    SubgraphAllocations* GetAllocations() { return subgraph_allocations_; }
    int GetCurrentOperatorIndex() { return static_cast<int>(current_operator_index_); }

 private:
    TfLiteContext* context_;
    const Model* model_;
    MicroAllocator* allocator_;
    SubgraphAllocations* subgraph_allocations_;
    int current_subgraph_index_;
    uint32_t current_operator_index_;
    void* resource_variables_;
    const void* subgraphs_;
};

class MicroContext {
 public:
    virtual ~MicroContext() {}
};

class MicroInterpreterContext : public MicroContext {
 public:
    enum class InterpreterState { kInit, kPrepare, kMemoryPlanning, kInvoke };
    MicroInterpreterContext(MicroAllocator* allocator, const Model* model,
                            MicroInterpreterGraph* graph);
    void* AllocatePersistentBuffer(size_t bytes);
    TfLiteStatus RequestScratchBufferInArena(size_t bytes, int* buffer_idx);
    uint8_t* AllocateTempBuffer(size_t size, size_t alignment);
    void DeallocateTempBuffer(uint8_t* buffer);
    void SetInterpreterState(InterpreterState state);
    InterpreterState GetInterpreterState() const;
    MicroInterpreterGraph& graph() { return graph_; }

 private:
    MicroAllocator& allocator_;
    MicroInterpreterGraph& graph_;
    const Model* model_;
    InterpreterState state_;
    ScratchBufferHandle* scratch_buffer_handles_ = nullptr;
    void* external_context_payload_ = nullptr;
    void* alt_profiler_ = nullptr;
};

class MicroOpResolver {
 public:
    virtual ~MicroOpResolver() {}
    virtual const TFLMRegistration* FindOp(int index) const = 0;
};

class MicroInterpreter {
 public:
    MicroInterpreter(const Model* model, const MicroOpResolver& op_resolver,
                     uint8_t* tensor_arena, size_t tensor_arena_size,
                     void* resource_variables = nullptr, void* profiler = nullptr,
                     bool preserve_all_tensors = false);
    MicroInterpreter(const Model* model, const MicroOpResolver& op_resolver,
                     MicroAllocator* allocator, void* resource_variables = nullptr,
                     void* profiler = nullptr);
    ~MicroInterpreter();
    TfLiteStatus AllocateTensors();
    TfLiteStatus Invoke();
    size_t arena_used_bytes() const { return allocator_.used_bytes(); }

 private:
    void Init();
    TfLiteStatus PrepareNodeAndRegistrationDataFromFlatbuffer();

    const Model* model_;
    const MicroOpResolver& op_resolver_;
    TfLiteContext context_ = {};
    MicroAllocator& allocator_;
    MicroInterpreterGraph graph_;
    bool tensors_allocated_;
    TfLiteStatus initialization_status_;
    ScratchBufferHandle* scratch_buffer_handles_ = nullptr;
    void** input_tensors_;
    void** output_tensors_;
    MicroInterpreterContext micro_context_;
};

TFLM_MICRO_END
}  // namespace tflite

#endif
