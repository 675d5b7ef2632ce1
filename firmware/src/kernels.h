/* kernels.h - int8 NCHW kernels with int32 accumulation and per-channel
 * requantisation (acc * mult >> shift, rounded, saturated). */
#ifndef KERNELS_H
#define KERNELS_H
#include <stdint.h>

#include "engine.h"

typedef struct {
    uint8_t c, h, w;
} dims_t;

void k_conv2d(const int8_t *in, dims_t id, const int8_t *w, const int32_t *bias,
              const qparam_t *q, int k, int stride, int8_t *out, dims_t od);
void k_dwconv(const int8_t *in, dims_t id, const int8_t *w, const int32_t *bias,
              const qparam_t *q, int k, int stride, int8_t *out, dims_t od);
void k_dense(const int8_t *in, uint32_t n_in, const int8_t *w, const int32_t *bias,
             const qparam_t *q, int8_t *out, uint32_t n_out);
void k_add(const int8_t *a, const int8_t *b, int8_t *out, uint32_t n);
void k_relu(const int8_t *in, int8_t *out, uint32_t n);
/* Detection decode: per channel, the peak value and where it is. */
int32_t k_decode(const int8_t *map, dims_t d);

#endif
