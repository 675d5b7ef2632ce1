/* planner.c - offline tensor layout in one activation arena (graph_build).
 *
 * Lifetimes come from the graph: producer = writing layer, last_consumer =
 * last reading layer. Tensors are placed greedily, largest first, at the
 * lowest 8-aligned offset that does not collide with an already placed
 * tensor whose lifetime intersects; so dead buffers are reused (seed 4.3)
 * and the three head outputs share one buffer when each is decoded at once.
 * The result is published in g_tensors for the debugger's overlap check. */
#include <string.h>

#include "engine.h"
#include "mem.h"
#include "scenario.h"

#define HEAD_FIRST_TENSOR 12u /* head_p3_out, head_p4_out, head_p5_out */
#define POST_LAYER        14

tensor_info_t g_tensors[MAX_TENSORS];
uint32_t g_tensor_count;

uint32_t tensor_size(uint32_t t)
{
    const tensor_desc_t *d = &g_tensor_desc[t];
    return (uint32_t)d->c * d->h * d->w;
}

int8_t *tensor_ptr(uint32_t t)
{
    return (int8_t *)(uintptr_t)g_tensors[t].addr;
}

static int lifetimes_meet(const tensor_info_t *a, const tensor_info_t *b)
{
    return a->producer <= b->last_consumer && b->producer <= a->last_consumer;
}

static int is_head_out(uint32_t t)
{
    return t >= HEAD_FIRST_TENSOR && t < HEAD_FIRST_TENSOR + N_BRANCHES;
}

int planner_plan(engine_t *e)
{
    uint32_t offset[N_TENSORS] = {0}, order[N_TENSORS];
    uint8_t placed[N_TENSORS] = {0};
    uint32_t arena = 0;

    /* Lifetimes. */
    for (uint32_t t = 0; t < N_TENSORS; t++) {
        g_tensors[t].name = g_tensor_desc[t].name;
        g_tensors[t].size = tensor_size(t);
        g_tensors[t].addr = 0;
        g_tensors[t].producer = (int16_t)((int)t - 1);
        g_tensors[t].last_consumer = g_tensors[t].producer;
    }
    for (int l = 0; l < N_LAYERS; l++) {
        if (g_ops[l].in0 != NO_TENSOR) g_tensors[g_ops[l].in0].last_consumer = (int16_t)l;
        if (g_ops[l].in1 != NO_TENSOR) g_tensors[g_ops[l].in1].last_consumer = (int16_t)l;
    }
    if (SCEN_DEFERRED_DECODE) {
        /* det_post decodes all three maps, so they live until it. */
        for (uint32_t b = 0; b < N_BRANCHES; b++) {
            g_tensors[HEAD_FIRST_TENSOR + b].last_consumer = POST_LAYER;
        }
    }
    g_tensor_count = N_TENSORS;

    /* Largest first; ties keep graph order. */
    for (uint32_t i = 0; i < N_TENSORS; i++) order[i] = i;
    for (uint32_t i = 1; i < N_TENSORS; i++) {
        for (uint32_t j = i; j > 0 && g_tensors[order[j]].size > g_tensors[order[j - 1]].size; j--) {
            uint32_t tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    }

    for (uint32_t i = 0; i < N_TENSORS; i++) {
        uint32_t t = order[i];
        if (SCEN_BRANCH_BUFFERS && is_head_out(t)) {
            continue; /* allocated by the branch itself at op_invoke */
        }
        if (SCEN_OVERRUN && t == N_TENSORS - 1u) {
            continue; /* det_post allocates its own output at op_invoke */
        }
        if (SCEN_BAD_SHARE_HINT && t == HEAD_FIRST_TENSOR + 1) {
            /* The manual "shared buffer" hint: head_p4_out reuses head_p3_out,
             * believed dead - but det_post still reads head_p3_out. */
            offset[t] = offset[HEAD_FIRST_TENSOR];
            placed[t] = 1;
            continue;
        }
        uint32_t best = 0;
        for (int moved = 1; moved;) {
            moved = 0;
            for (uint32_t o = 0; o < N_TENSORS; o++) {
                if (!placed[o] || !lifetimes_meet(&g_tensors[t], &g_tensors[o])) continue;
                if (best < offset[o] + g_tensors[o].size && offset[o] < best + g_tensors[t].size) {
                    best = (offset[o] + g_tensors[o].size + 7u) & ~7u;
                    moved = 1;
                }
            }
        }
        offset[t] = best;
        placed[t] = 1;
        if (best + g_tensors[t].size > arena) arena = best + g_tensors[t].size;
    }

    arena = (arena + 7u) & ~7u;
    e->arena = mem_try_alloc(arena, "build:arena");
    if (e->arena == NULL) return BUILD_ENOMEM;
    e->arena_size = arena;
    for (uint32_t t = 0; t < N_TENSORS; t++) {
        if (placed[t]) g_tensors[t].addr = (uint32_t)(uintptr_t)(e->arena + offset[t]);
    }
    return 0;
}

void planner_release(engine_t *e)
{
    mem_free(e->arena);
    e->arena = NULL;
    e->arena_size = 0;
    for (uint32_t b = 0; b < N_BRANCHES; b++) {
        mem_free(e->branch_out[b]);
        e->branch_out[b] = NULL;
    }
    mem_free(e->post_out); /* NULL unless overrun */
    e->post_out = NULL;
    for (uint32_t t = 0; t < g_tensor_count; t++) g_tensors[t].addr = 0;
}
