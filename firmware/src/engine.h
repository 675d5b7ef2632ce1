/* engine.h - the int8 inference engine a debugger observes.
 *
 * Everything a heap audit wants to read is reachable from two globals:
 * g_engine (engine_t: model, op contexts, arena, per-layer weight blocks) and
 * g_tensors/g_tensor_count (the tensor table: address, size and lifetime of
 * every activation, for the lifetime-overlap check). */
#ifndef ENGINE_H
#define ENGINE_H

#include <stddef.h>
#include <stdint.h>

#define N_LAYERS    15
#define N_TENSORS   16 /* model input + one output per layer */
#define MAX_TENSORS 16
#define N_CLASSES   8
#define N_BRANCHES  3
/* What a build step returns when one of its allocations failed (-ENOMEM). */
#define BUILD_ENOMEM (-12)
/* model_load's status when one of its allocations failed (it frees what it took). */
#define LOAD_ENOMEM (-12)

typedef enum {
    OP_CONV = 0, /* conv2d, NCHW, pad k/2 */
    OP_DWCONV,   /* depthwise conv2d */
    OP_DENSE,    /* fully connected */
    OP_ADD,      /* saturating elementwise add */
    OP_RELU,
    OP_HEAD,     /* 1x1 conv detection branch + decode */
    OP_POST,     /* detection post-processing */
} op_type_t;

/* Static graph description (flash). */
typedef struct {
    const char *name;
    uint8_t type;
    uint8_t in0, in1; /* tensor ids; NO_TENSOR if unused */
    uint8_t out;
    uint8_t k, stride;
    uint8_t branch;   /* head branch 0..2 */
} op_desc_t;
#define NO_TENSOR 0xFFu

typedef struct {
    const char *name;
    uint8_t c, h, w;
} tensor_desc_t;

extern const op_desc_t g_ops[N_LAYERS];
extern const tensor_desc_t g_tensor_desc[N_TENSORS];

/* One model image in flash. */
typedef struct {
    const char *name;
    const uint8_t *image;   /* as stored: raw, or RLE-compressed */
    uint32_t image_len;
    uint32_t raw_len;       /* serialized size after decompression */
    uint8_t compressed;
} model_desc_t;

extern const model_desc_t g_model_wake, g_model_cmd;

/* Per-channel requantisation entry, built by op_init. */
typedef struct {
    int32_t mult;
    int32_t shift;
} qparam_t;

/* Per-operator runtime context; the array of them is g_engine.op_contexts
 * (one heap block, the one the leak-on-switch scenario loses). Kept at 24
 * bytes on purpose: the seed's "40-80 bytes per operator" scaled down. */
typedef struct {
    const char *name;       /* "conv1", "dw2", ..., "head_p3", "det_post" */
    const int8_t *weights;  /* into the layer's weight block, or relayout */
    const int32_t *bias;
    qparam_t *qparams;      /* heap, from op_init; NULL for add/relu/post */
    int8_t *relayout;       /* heap NCHW copy (reorder scenario), else NULL */
    uint8_t type, layout, layer, flags;
} op_ctx_t;

typedef enum {
    PHASE_IDLE = 0,
    PHASE_LOAD,
    PHASE_BUILD,
    PHASE_INFER,
    PHASE_SWITCH,
    PHASE_RELEASE,
} phase_t;

typedef struct {
    const model_desc_t *model; /* loaded model, NULL when none */
    const char *model_name;
    int32_t phase;             /* phase_t */
    uint32_t n_ops;
    op_ctx_t *op_contexts;     /* heap: n_ops entries */
    uint8_t *weight_blocks[N_LAYERS]; /* heap: bias + weights per layer */
    uint32_t weight_block_size[N_LAYERS];
    int32_t layer_mult[N_LAYERS];
    int8_t layer_shift[N_LAYERS];
    uint8_t layer_layout[N_LAYERS];
    int8_t *arena;             /* heap: planned activations */
    uint32_t arena_size;
    int8_t *branch_out[N_BRANCHES]; /* branch-peak: per-branch heap outputs */
    int32_t det_summary[N_BRANCHES];
    int8_t scores[N_CLASSES];
    uint32_t output_crc;
    uint32_t inferences;
    int8_t *post_out;          /* overrun: det_post's own (too small) output buffer */
} engine_t;

typedef struct {
    const char *name;
    uint32_t addr;          /* absolute RAM address, 0 = not in the arena */
    uint32_t size;
    int16_t producer;       /* layer writing it, -1 = model input */
    int16_t last_consumer;  /* last layer reading it */
} tensor_info_t;

extern engine_t g_engine;
extern tensor_info_t g_tensors[MAX_TENSORS];
extern uint32_t g_tensor_count;
extern int32_t g_current_layer;

/* Lifecycle: a debugger breaks on these and on their return. */
int model_load(engine_t *e, const model_desc_t *m);
int graph_build(engine_t *e);
int inference_run(engine_t *e);
int model_switch(engine_t *e, const model_desc_t *m);
int model_release(engine_t *e);
int op_init(engine_t *e, int op_index);
int op_invoke(engine_t *e, int layer_index);

/* Internals shared between the engine files. */
int loader_load(engine_t *e, const model_desc_t *m);   /* loader.c */
void loader_unload(engine_t *e);
void frag_records_free(void); /* also deferred-release's summary */
/* deferred-release: keeps a 64-byte summary until the next model_load. */
void release_summary_keep(const engine_t *e);
void frag_record_add(const char *what, uint32_t a, uint32_t b, uint32_t payload);
int planner_plan(engine_t *e);                          /* planner.c */
void planner_release(engine_t *e);
int8_t *tensor_ptr(uint32_t t);
uint32_t tensor_size(uint32_t t);
int op_prepare(engine_t *e, int op_index);              /* ops.c */
int op_execute(engine_t *e, int layer);
/* stack-deep: the layer whose op stages its weights on the stack (conv_b), and that op. */
#define STAGED_LAYER 7
int conv_staged(const op_desc_t *op, const op_ctx_t *ctx, const int8_t *in0, int8_t *out);
void op_unprepare(engine_t *e, int op_index);
uint32_t crc32_update(uint32_t crc, const void *data, uint32_t len);

#endif
