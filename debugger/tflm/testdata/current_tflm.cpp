// current_tflm.cpp - the classes of current TensorFlow Lite Micro (tflite-micro, 2022-07 on)
// as memlife-tflm reads them: our own declarations with TFLM's class and member names and
// order (facts about the layout, docs/tflm.md), not TFLM's code. The unit tests compile it
// with arm-none-eabi-g++ -g and lay synthetic RAM images out from its DWARF.
//
// Built as is, the classes are in namespace tflite (TFLM until 2026-08); with
// -DTFLM_MICRO_NAMESPACE they are in tflite::micro (tflite-micro of 2026-10, whose Model stays
// in tflite).
#include <stddef.h>
#include <stdint.h>

extern "C" {
typedef enum { kTfLiteOk = 0, kTfLiteError = 1 } TfLiteStatus;
typedef enum { kTfLiteNoType = 0, kTfLiteFloat32 = 1, kTfLiteInt8 = 9 } TfLiteType;
typedef struct TfLiteIntArray {
    int size;
    int data[];
} TfLiteIntArray;
typedef union TfLitePtrUnion {
    int32_t* i32;
    float* f;
    int8_t* int8;
    void* data;
} TfLitePtrUnion;
typedef struct TfLiteEvalTensor {
    TfLitePtrUnion data;
    TfLiteIntArray* dims;
    TfLiteType type;
} TfLiteEvalTensor;
typedef struct TfLiteNode {
    TfLiteIntArray* inputs;
    TfLiteIntArray* outputs;
    TfLiteIntArray* intermediates;
    void* user_data;
    const void* builtin_data;
    const void* custom_initial_data;
    int custom_initial_data_size;
} TfLiteNode;
typedef struct TfLiteContext {
    size_t tensors_size;
    void* impl_;
    void* (*AllocatePersistentBuffer)(struct TfLiteContext*, size_t);
} TfLiteContext;
}

#ifdef TFLM_MICRO_NAMESPACE
#define TFLM_NS_BEGIN namespace micro {
#define TFLM_NS_END }
#define TFLM_NS tflite::micro
#else
#define TFLM_NS_BEGIN
#define TFLM_NS_END
#define TFLM_NS tflite
#endif

namespace tflite {

enum BuiltinOperator : int32_t {
    BuiltinOperator_ADD = 0,
    BuiltinOperator_CONV_2D = 3,
    BuiltinOperator_FULLY_CONNECTED = 9,
    BuiltinOperator_SOFTMAX = 25,
    BuiltinOperator_CUSTOM = 32,
    BuiltinOperator_MIN = BuiltinOperator_ADD,
    BuiltinOperator_MAX = BuiltinOperator_CUSTOM
};

struct Model;
TFLM_NS_BEGIN
class MicroOpResolver;
class MicroMemoryPlanner {
 public:
    virtual ~MicroMemoryPlanner() {}
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

class INonPersistentBufferAllocator {
 public:
    virtual ~INonPersistentBufferAllocator() {}
    virtual uint8_t* AllocateTemp(size_t size, size_t alignment) { return nullptr; }
    virtual size_t GetNonPersistentUsedBytes() const { return 0; }
};

class IPersistentBufferAllocator {
 public:
    virtual ~IPersistentBufferAllocator() {}
    virtual uint8_t* AllocatePersistentBuffer(size_t size, size_t alignment) { return nullptr; }
    virtual size_t GetPersistentUsedBytes() const { return 0; }
};

class SingleArenaBufferAllocator : public INonPersistentBufferAllocator,
                                   public IPersistentBufferAllocator {
 public:
    size_t GetNonPersistentUsedBytes() const override { return 0; }
    size_t GetPersistentUsedBytes() const override { return 0; }

 private:
    uint8_t* buffer_head_ = nullptr;
    uint8_t* buffer_tail_ = nullptr;
    uint8_t* head_ = nullptr;
    uint8_t* tail_ = nullptr;
    uint8_t* temp_ = nullptr;
    intptr_t temp_buffer_ptr_check_sum_ = 0;
    int temp_buffer_count_ = 0;
};

#ifndef TFLM_MICRO_NAMESPACE
namespace micro {
#endif
class PersistentArenaBufferAllocator : public IPersistentBufferAllocator {
 private:
    uint8_t* buffer_head_ = nullptr;
    uint8_t* buffer_tail_ = nullptr;
    uint8_t* tail_temp_ = nullptr;
};
#ifndef TFLM_MICRO_NAMESPACE
}  // namespace micro
#endif

class NonPersistentArenaBufferAllocator : public INonPersistentBufferAllocator {
 private:
    uint8_t* buffer_head_ = nullptr;
    uint8_t* buffer_tail_ = nullptr;
    uint8_t* head_temp_ = nullptr;
    uint8_t* next_temp_ = nullptr;
    intptr_t temp_buffer_ptr_check_sum_ = 0;
    int temp_buffer_count_ = 0;
};

class MicroAllocator {
 public:
    virtual ~MicroAllocator() {}

 private:
    INonPersistentBufferAllocator* non_persistent_buffer_allocator_ = nullptr;
    IPersistentBufferAllocator* persistent_buffer_allocator_ = nullptr;
    void* builtin_data_allocator_ = nullptr;
    MicroMemoryPlanner* memory_planner_ = nullptr;
    bool model_is_allocating_ = false;
    size_t scratch_buffer_request_count_ = 0;
    uint8_t* scratch_buffer_head_ = nullptr;
    size_t max_head_buffer_usage_ = 0;
};

class MicroGraph {
 public:
    virtual ~MicroGraph() {}
};

class GreedyMemoryPlanner : public MicroMemoryPlanner {
 public:
    struct ListEntry {
        int offset;
        int requirements_index;
        int next_entry_index;
    };

 private:
    int max_buffer_count_ = 0;
    int buffer_count_ = 0;
    struct BufferRequirements {
        int size;
        int offline_offset;
        int first_time_used;
        int last_time_used;
    };
    BufferRequirements* requirements_ = nullptr;
    int* buffer_sizes_sorted_ = nullptr;
    int* buffer_ids_sorted_ = nullptr;
    ListEntry* buffers_sorted_by_offset_ = nullptr;
    int next_free_entry_ = 0;
    int first_entry_index_ = 0;
    int* buffer_offsets_ = nullptr;
    bool need_to_calculate_offsets_ = false;
};

#ifndef TFLM_MICRO_NAMESPACE
namespace micro {
#endif
class MicroInterpreterGraph : public MicroGraph {
 private:
    TfLiteContext* context_ = nullptr;
    const Model* model_ = nullptr;
    MicroAllocator* allocator_ = nullptr;
    SubgraphAllocations* subgraph_allocations_ = nullptr;
    int current_subgraph_index_ = 0;
    uint32_t current_operator_index_ = 0;
    void* resource_variables_ = nullptr;
    void* profiler_ = nullptr;
    const void* subgraphs_ = nullptr;
};
#ifndef TFLM_MICRO_NAMESPACE
}  // namespace micro
#endif

class MicroContext {
 public:
    virtual ~MicroContext() {}
};

#ifndef TFLM_MICRO_NAMESPACE
namespace micro {
#endif
class MicroInterpreterContext : public MicroContext {
 public:
    enum class InterpreterState { kInit, kPrepare, kMemoryPlanning, kInvoke };
    MicroInterpreterContext(MicroAllocator& allocator, MicroInterpreterGraph& graph)
        : allocator_(allocator), graph_(graph) {}

 private:
    MicroAllocator& allocator_;
    MicroInterpreterGraph& graph_;
    const Model* model_ = nullptr;
    InterpreterState state_ = InterpreterState::kInit;
    void* scratch_buffer_handles_ = nullptr;
    void* external_context_payload_ = nullptr;
    void* alt_profiler_ = nullptr;
};
#ifndef TFLM_MICRO_NAMESPACE
}  // namespace micro
#endif

class MicroInterpreter {
 public:
    MicroInterpreter(const MicroOpResolver& op_resolver, MicroAllocator& allocator)
        : op_resolver_(op_resolver), allocator_(allocator), micro_context_(allocator, graph_) {}

 private:
    const Model* model_ = nullptr;
    const MicroOpResolver& op_resolver_;
    TfLiteContext context_ = {};
    MicroAllocator& allocator_;
    micro::MicroInterpreterGraph graph_;
    bool tensors_allocated_ = false;
    TfLiteStatus initialization_status_ = kTfLiteOk;
    void* scratch_buffer_handles_ = nullptr;
    void** input_tensors_ = nullptr;
    void** output_tensors_ = nullptr;
    micro::MicroInterpreterContext micro_context_;
};

TFLM_NS_END
}  // namespace tflite

// One of each, so that DWARF describes them and the vtables are emitted.
TFLM_NS::SingleArenaBufferAllocator g_single;
tflite::micro::PersistentArenaBufferAllocator g_persistent;
TFLM_NS::NonPersistentArenaBufferAllocator g_non_persistent;
TFLM_NS::MicroAllocator g_micro_allocator;
TFLM_NS::MicroInterpreter g_interpreter(*reinterpret_cast<const TFLM_NS::MicroOpResolver*>(&g_single),
                                        g_micro_allocator);
TFLM_NS::SubgraphAllocations g_subgraph_allocations;
TFLM_NS::TFLMRegistration g_registration;
TFLM_NS::GreedyMemoryPlanner g_planner;
tflite::BuiltinOperator g_builtin = tflite::BuiltinOperator_ADD;

extern "C" void _start() { for (;;) {} }
void operator delete(void*) noexcept {}
void operator delete(void*, unsigned int) noexcept {}
