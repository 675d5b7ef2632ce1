/* ops.c - per-operator build (op_prepare, behind op_init) and execution
 * (op_execute, behind op_invoke).
 *
 * op_prepare is where graph_build's staircase comes from: every op with
 * weights gets a per-channel requantisation table (out_ch * 8 bytes), and an
 * op whose weights arrive NHWC gets a full NCHW re-layout copy (seed 4.2). */
#include <string.h>

#include "engine.h"
#include "kernels.h"
#include "mem.h"
#include "scenario.h"

static dims_t dims(uint32_t t)
{
    const tensor_desc_t *d = &g_tensor_desc[t];
    return (dims_t){d->c, d->h, d->w};
}

static int has_weights(int layer)
{
    uint8_t t = g_ops[layer].type;
    return t == OP_CONV || t == OP_DWCONV || t == OP_DENSE || t == OP_HEAD;
}

uint32_t layer_out_channels(int layer)
{
    return has_weights(layer) ? g_tensor_desc[g_ops[layer].out].c : 0u;
}

uint32_t layer_weight_len(int layer)
{
    const op_desc_t *op = &g_ops[layer];
    if (!has_weights(layer)) return 0;
    uint32_t oc = g_tensor_desc[op->out].c, ic = g_tensor_desc[op->in0].c;
    switch (op->type) {
    case OP_DWCONV: return oc * op->k * op->k;
    case OP_DENSE: return oc * tensor_size(op->in0);
    default: return oc * ic * op->k * op->k;
    }
}

int op_prepare(engine_t *e, int i)
{
    op_ctx_t *ctx = &e->op_contexts[i];
    const op_desc_t *op = &g_ops[i];

    ctx->name = op->name;
    ctx->type = op->type;
    ctx->layer = (uint8_t)i;
    if (!has_weights(i)) {
        return 0;
    }
    uint8_t *blk = e->weight_blocks[i];
    uint32_t oc = layer_out_channels(i), w_len = layer_weight_len(i);
    if (blk == NULL || e->weight_block_size[i] != 4u * oc + w_len) {
        return -1;
    }
    ctx->bias = (const int32_t *)(void *)blk;
    ctx->weights = (const int8_t *)(blk + 4u * oc);
    ctx->layout = e->layer_layout[i];

    /* Per-channel requantisation table: the file stores one scale per layer
     * plus a 2-bit per-channel trim, expanded here as the kernels want it. */
    ctx->qparams = mem_try_alloc(oc * sizeof(qparam_t), "build:qparams");
    if (ctx->qparams == NULL) return BUILD_ENOMEM;
    for (uint32_t c = 0; c < oc; c++) {
        ctx->qparams[c].mult = e->layer_mult[i] - (int32_t)(c & 3u) * 64;
        ctx->qparams[c].shift = e->layer_shift[i];
    }

    if (ctx->layout == 1u) {
        /* NHWC [O][kh][kw][I] -> NCHW [O][I][kh][kw]: a full copy that
         * stays resident as long as the graph. */
        uint32_t ic = g_tensor_desc[op->in0].c, k = op->k;
        int8_t *dst = mem_try_alloc(w_len, "build:relayout");
        if (dst == NULL) return BUILD_ENOMEM;
        for (uint32_t o = 0; o < oc; o++)
            for (uint32_t c = 0; c < ic; c++)
                for (uint32_t y = 0; y < k; y++)
                    for (uint32_t x = 0; x < k; x++)
                        dst[((o * ic + c) * k + y) * k + x] =
                            ctx->weights[((o * k + y) * k + x) * ic + c];
        ctx->relayout = dst;
        ctx->weights = dst;
    }
    return 0;
}

void op_unprepare(engine_t *e, int i)
{
    op_ctx_t *ctx = &e->op_contexts[i];
    mem_free(ctx->qparams);
    mem_free(ctx->relayout);
    ctx->qparams = NULL;
    ctx->relayout = NULL;
}

static void decode_branch(engine_t *e, uint32_t b)
{
    uint32_t t = g_ops[11 + b].out;
    e->det_summary[b] = k_decode(tensor_ptr(t), dims(t));
}

int op_execute(engine_t *e, int l)
{
    const op_desc_t *op = &g_ops[l];
    const op_ctx_t *ctx = &e->op_contexts[l];
    const int8_t *in0 = tensor_ptr(op->in0);
    int8_t *out;

    if (op->type == OP_HEAD && SCEN_BRANCH_BUFFERS) {
        /* Each branch gets its own output buffer; nothing is shared across
         * branches, and det_post frees them: all three are live at once. */
        e->branch_out[op->branch] = mem_alloc(tensor_size(op->out), "infer:branch_out");
        g_tensors[op->out].addr = (uint32_t)(uintptr_t)e->branch_out[op->branch];
    }
    if (op->type == OP_POST && SCEN_OVERRUN) {
        /* BUG (overrun): the buffer is sized for the scores, the top class
         * and one summary word (8 + 1 + 4 = 13 bytes), but det_post writes
         * its full 16-byte detections tensor below: 3 bytes too many. */
        e->post_out = mem_alloc(N_CLASSES + 1u + 4u, "infer:post_out");
        g_tensors[op->out].addr = (uint32_t)(uintptr_t)e->post_out;
    }
    out = tensor_ptr(op->out);
    if (out == NULL || in0 == NULL) {
        return -1;
    }

    if (SCEN_STACK_DEEP && l == STAGED_LAYER) {
        return conv_staged(op, ctx, in0, out);
    }
    switch (op->type) {
    case OP_CONV:
    case OP_HEAD:
        k_conv2d(in0, dims(op->in0), ctx->weights, ctx->bias, ctx->qparams, op->k, op->stride,
                 out, dims(op->out));
        if (op->type == OP_HEAD && !SCEN_DEFERRED_DECODE) {
            decode_branch(e, op->branch); /* consumed at once: buffer free again */
        }
        break;
    case OP_DWCONV:
        k_dwconv(in0, dims(op->in0), ctx->weights, ctx->bias, ctx->qparams, op->k, op->stride,
                 out, dims(op->out));
        break;
    case OP_DENSE:
        k_dense(in0, tensor_size(op->in0), ctx->weights, ctx->bias, ctx->qparams, out,
                tensor_size(op->out));
        break;
    case OP_ADD:
        k_add(in0, tensor_ptr(op->in1), out, tensor_size(op->out));
        break;
    case OP_RELU:
        k_relu(in0, out, tensor_size(op->out));
        break;
    case OP_POST:
        if (SCEN_DEFERRED_DECODE) {
            for (uint32_t b = 0; b < N_BRANCHES; b++) decode_branch(e, b);
        }
        for (uint32_t b = 0; b < N_BRANCHES; b++) {
            mem_free(e->branch_out[b]); /* NULL unless branch-peak */
            e->branch_out[b] = NULL;
        }
        memcpy(e->scores, in0, N_CLASSES);
        memcpy(out, in0, N_CLASSES);
        memcpy(out + N_CLASSES, e->det_summary, sizeof(e->det_summary) < 8u ? sizeof(e->det_summary) : 8u);
        break;
    default:
        return -1;
    }
    return 0;
}

/* stack-deep (the RTOS firmware): conv_b stages its weights on the calling task's stack, eight
 * output channels (2304 bytes) at a time, as a port to a part with a small fast RAM might. Same
 * arithmetic, same output; the one layer whose op takes the inference task to within a few
 * words of its stack end (firmware/README.md, "RTOS firmware"). At the end of the file so that
 * the lines above keep their numbers (documented allocation sites). */
#define STAGED_CHANNELS 8
#define STAGED_BYTES    (STAGED_CHANNELS * 32 * 3 * 3)

__attribute__((noinline)) int conv_staged(const op_desc_t *op, const op_ctx_t *ctx,
                                          const int8_t *in0, int8_t *out)
{
    int8_t stage[STAGED_BYTES];
    const dims_t id = dims(op->in0), od = dims(op->out);
    const uint32_t per_channel = (uint32_t)id.c * op->k * op->k;

    if (per_channel * STAGED_CHANNELS > sizeof(stage) || od.c % STAGED_CHANNELS != 0) {
        return -1;
    }
    for (int o = 0; o < od.c; o += STAGED_CHANNELS) {
        dims_t slice = od;
        slice.c = STAGED_CHANNELS;
        memcpy(stage, ctx->weights + (uint32_t)o * per_channel, per_channel * STAGED_CHANNELS);
        k_conv2d(in0, id, stage, ctx->bias + o, ctx->qparams + o, op->k, op->stride,
                 out + (uint32_t)o * od.h * od.w, slice);
    }
    return 0;
}
