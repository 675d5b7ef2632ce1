/* graph.c - the keyword-spotting CNN with a three-branch detection head.
 *
 * Backbone: conv1 -> dw2 -> pw2 -> dw3 -> pw3 -> add3 (residual) -> two
 * parallel conv branches conv_a/conv_b (the seed's dual-conv case) -> add4 ->
 * relu4 -> fc5 (keyword scores). Head: three 1x1 branches on features of three
 * scales (FPN style; 16x32x16, 16x16x8, 16x8x4 = the 80x80/40x40/20x20 maps
 * scaled down, sizes 16:4:1), then det_post. Both models share this graph. */
#include "engine.h"

/* Tensor ids: 0 = input, t = output of layer t-1. */
const tensor_desc_t g_tensor_desc[N_TENSORS] = {
    {"input", 1, 32, 16},        {"conv1_out", 16, 32, 16}, {"dw2_out", 16, 16, 8},
    {"pw2_out", 32, 16, 8},      {"dw3_out", 32, 16, 8},    {"pw3_out", 32, 16, 8},
    {"add3_out", 32, 16, 8},     {"conv_a_out", 32, 8, 4},  {"conv_b_out", 32, 8, 4},
    {"add4_out", 32, 8, 4},      {"relu4_out", 32, 8, 4},   {"fc5_out", 8, 1, 1},
    {"head_p3_out", 16, 32, 16}, {"head_p4_out", 16, 16, 8}, {"head_p5_out", 16, 8, 4},
    {"detections", 16, 1, 1},
};

const op_desc_t g_ops[N_LAYERS] = {
    /* name       type       in0 in1        out k  s  branch */
    {"conv1", OP_CONV, 0, NO_TENSOR, 1, 3, 1, 0},
    {"dw2", OP_DWCONV, 1, NO_TENSOR, 2, 3, 2, 0},
    {"pw2", OP_CONV, 2, NO_TENSOR, 3, 1, 1, 0},
    {"dw3", OP_DWCONV, 3, NO_TENSOR, 4, 3, 1, 0},
    {"pw3", OP_CONV, 4, NO_TENSOR, 5, 1, 1, 0},
    {"add3", OP_ADD, 3, 5, 6, 0, 0, 0},
    {"conv_a", OP_CONV, 6, NO_TENSOR, 7, 3, 2, 0},
    {"conv_b", OP_CONV, 6, NO_TENSOR, 8, 3, 2, 0},
    {"add4", OP_ADD, 7, 8, 9, 0, 0, 0},
    {"relu4", OP_RELU, 9, NO_TENSOR, 10, 0, 0, 0},
    {"fc5", OP_DENSE, 10, NO_TENSOR, 11, 0, 0, 0},
    {"head_p3", OP_HEAD, 1, NO_TENSOR, 12, 1, 1, 0},
    {"head_p4", OP_HEAD, 6, NO_TENSOR, 13, 1, 1, 1},
    {"head_p5", OP_HEAD, 10, NO_TENSOR, 14, 1, 1, 2},
    {"det_post", OP_POST, 11, NO_TENSOR, 15, 0, 0, 0},
};
