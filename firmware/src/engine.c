/* engine.c - the lifecycle a debugger breaks on.
 *
 * Every public phase function is noinline + used with external linkage, so a
 * breakpoint on its entry and on its return brackets exactly one phase.
 * model_switch tears down and rebuilds through the static helpers below, never
 * through the public functions, so that per iteration model_load, graph_build,
 * model_switch and model_release are each hit exactly once (op_init once per
 * op; inference_run twice: model A, then model B after the switch). */
#include <string.h>

#include "engine.h"
#include "mem.h"
#include "model_data.h"
#include "scenario.h"

#define PHASE_FN __attribute__((noinline, used))

engine_t g_engine;
int32_t g_current_layer = -1;

/* Simulated status of the unload step: in leak-on-switch the flash driver
 * reports "cache flush pending" (nonzero) every time. Deterministic, so the
 * leak is exactly one op_contexts block per switch. */
#define UNLOAD_ERR_FLUSH_PENDING (-16)

static int model_unload(engine_t *e)
{
    loader_unload(e);
    return SCEN_LEAK_ON_SWITCH ? UNLOAD_ERR_FLUSH_PENDING : 0;
}

static int load_model(engine_t *e, const model_desc_t *m)
{
    if (e->model != NULL || m == NULL) {
        return -1;
    }
    return loader_load(e, m);
}
static int build_failed(engine_t *e, int rc, int arena_failed); /* at the end */
/* Build: op context array, one op_init per operator, then the arena; any of
 * their allocations may fail (BUILD_ENOMEM), and build_failed then frees what
 * the build took. public_ops: op_init (graph_build) or op_prepare (switch). */
static int build_graph(engine_t *e, int public_ops)
{
    /* op_contexts is not checked for NULL: after the leak-on-switch early
     * return it still holds the old block, which this overwrites (the leak). */
    if (e->model == NULL) {
        return -1;
    }
    e->n_ops = N_LAYERS;
    e->op_contexts = mem_try_alloc(N_LAYERS * sizeof(op_ctx_t), "build:op_contexts");
    if (e->op_contexts == NULL) return BUILD_ENOMEM; /* n_ops is unused without it */
    memset(e->op_contexts, 0, N_LAYERS * sizeof(op_ctx_t));
    for (int i = 0; i < N_LAYERS; i++) {
        int rc = public_ops ? op_init(e, i) : op_prepare(e, i);
        if (rc != 0) return build_failed(e, rc, 0);
    }
    int rc = planner_plan(e);
    return rc == 0 ? 0 : build_failed(e, rc, 1);
}

static void free_op_data(engine_t *e)
{
    planner_release(e);
    if (e->op_contexts != NULL) {
        for (uint32_t i = 0; i < e->n_ops; i++) op_unprepare(e, (int)i);
    }
}

/* Correct teardown (model_release): every path frees op_contexts. */
static int teardown(engine_t *e)
{
    int rc;

    free_op_data(e);
    rc = model_unload(e);
    if (rc != 0) {
        goto cleanup; /* report it, but still release everything */
    }
cleanup:
    mem_free(e->op_contexts);
    e->op_contexts = NULL;
    e->n_ops = 0;
    return rc;
}

/* model_switch's own teardown, with the seed's bug in leak-on-switch: the
 * early return on the unload status skips free(op_contexts). */
static int switch_teardown(engine_t *e)
{
    int rc;

    free_op_data(e);
    rc = model_unload(e);
    if (rc != 0) {
        return rc; /* BUG (leak-on-switch): op_contexts is never freed */
    }
    mem_free(e->op_contexts);
    e->op_contexts = NULL;
    e->n_ops = 0;
    return 0;
}

PHASE_FN int model_load(engine_t *e, const model_desc_t *m)
{
    e->phase = PHASE_LOAD;
    /* fragmentation, deferred-release: last lifecycle's records and summary
     * are dropped here, so every lifecycle starts from the same heap state. */
    frag_records_free();
    int rc = load_model(e, m);
    e->phase = PHASE_IDLE;
    return rc;
}

PHASE_FN int graph_build(engine_t *e)
{
    e->phase = PHASE_BUILD;
    int rc = build_graph(e, 1);
    e->phase = PHASE_IDLE;
    return rc;
}

/* The empty asm after the call stops GCC from turning it into a tail call,
 * so a breakpoint on the return of op_init/op_invoke sees the op's effect. */
PHASE_FN int op_init(engine_t *e, int op_index)
{
    int rc = op_prepare(e, op_index);
    __asm__ volatile("" ::: "memory");
    return rc;
}

PHASE_FN int op_invoke(engine_t *e, int layer_index)
{
    g_current_layer = layer_index;
    int rc = op_execute(e, layer_index);
    __asm__ volatile("" ::: "memory");
    return rc;
}

PHASE_FN int inference_run(engine_t *e)
{
    int rc = 0;

    if (e->arena == NULL) {
        return -1;
    }
    e->phase = PHASE_INFER;
    memcpy(tensor_ptr(0), g_input_features, tensor_size(0));
    for (int l = 0; l < N_LAYERS && rc == 0; l++) {
        rc = op_invoke(e, l);
    }
    g_current_layer = -1;
    e->output_crc = crc32_update(0, tensor_ptr(g_ops[N_LAYERS - 1].out),
                                 tensor_size(g_ops[N_LAYERS - 1].out));
    e->output_crc = crc32_update(e->output_crc, e->det_summary, sizeof(e->det_summary));
    e->inferences++;
    /* fragmentation: a result log (32 bytes per layer) outlives the
     * inference; too big for the small holes, it lands above the arena. */
    frag_record_add("result", e->output_crc, e->inferences, 32u * N_LAYERS);
    e->phase = PHASE_IDLE;
    return rc;
}

PHASE_FN int model_switch(engine_t *e, const model_desc_t *m)
{
    int rc;

    e->phase = PHASE_SWITCH;
    /* An unload error is logged by the caller's design, not fatal: the next
     * model must come up (wake word -> command word). */
    (void)switch_teardown(e);
    rc = load_model(e, m);
    if (rc == 0) {
        rc = build_graph(e, 0);
    }
    e->phase = PHASE_IDLE;
    return rc;
}

PHASE_FN int model_release(engine_t *e)
{
    e->phase = PHASE_RELEASE;
    (void)teardown(e); /* the unload status is not a release failure */
    release_summary_keep(e); /* deferred-release only */
    e->phase = PHASE_IDLE;
    return 0;
}

uint32_t crc32_update(uint32_t crc, const void *data, uint32_t len)
{
    const uint8_t *p = data;
    crc = ~crc;
    while (len--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

/* A failed build's clean-up: the ops' tables, then the context array, so the
 * heap is as the build found it. error-path's BUG: after a failed arena the
 * clean-up "knows" only the ops' tables need freeing, and forgets op_contexts. */
static int build_failed(engine_t *e, int rc, int arena_failed)
{
    for (uint32_t i = 0; i < e->n_ops; i++) op_unprepare(e, (int)i);
    if (!(SCEN_ERROR_PATH && arena_failed)) {
        mem_free(e->op_contexts);
    }
    e->op_contexts = NULL;
    e->n_ops = 0;
    return rc;
}
