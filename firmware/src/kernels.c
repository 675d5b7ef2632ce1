/* kernels.c - the arithmetic. Plain loops: the firmware exists to exercise
 * the heap, but the numbers are real so a wrong buffer shows in the CRC. */
#include "kernels.h"

static int8_t requant(int32_t acc, const qparam_t *q)
{
    int64_t v = (int64_t)acc * q->mult;
    v += (int64_t)1 << (q->shift - 1);
    v >>= q->shift;
    if (v > 127) return 127;
    if (v < -128) return -128;
    return (int8_t)v;
}

void k_conv2d(const int8_t *in, dims_t id, const int8_t *w, const int32_t *bias,
              const qparam_t *q, int k, int stride, int8_t *out, dims_t od)
{
    const int pad = k / 2;
    for (int o = 0; o < od.c; o++) {
        for (int y = 0; y < od.h; y++) {
            for (int x = 0; x < od.w; x++) {
                int32_t acc = bias[o];
                for (int i = 0; i < id.c; i++) {
                    const int8_t *wk = &w[((o * id.c + i) * k) * k];
                    const int8_t *ip = &in[i * id.h * id.w];
                    for (int ky = 0; ky < k; ky++) {
                        int iy = y * stride + ky - pad;
                        if (iy < 0 || iy >= id.h) continue;
                        for (int kx = 0; kx < k; kx++) {
                            int ix = x * stride + kx - pad;
                            if (ix < 0 || ix >= id.w) continue;
                            acc += (int32_t)ip[iy * id.w + ix] * wk[ky * k + kx];
                        }
                    }
                }
                out[(o * od.h + y) * od.w + x] = requant(acc, &q[o]);
            }
        }
    }
}

void k_dwconv(const int8_t *in, dims_t id, const int8_t *w, const int32_t *bias,
              const qparam_t *q, int k, int stride, int8_t *out, dims_t od)
{
    const int pad = k / 2;
    for (int c = 0; c < od.c; c++) {
        const int8_t *ip = &in[c * id.h * id.w];
        const int8_t *wk = &w[c * k * k];
        for (int y = 0; y < od.h; y++) {
            for (int x = 0; x < od.w; x++) {
                int32_t acc = bias[c];
                for (int ky = 0; ky < k; ky++) {
                    int iy = y * stride + ky - pad;
                    if (iy < 0 || iy >= id.h) continue;
                    for (int kx = 0; kx < k; kx++) {
                        int ix = x * stride + kx - pad;
                        if (ix < 0 || ix >= id.w) continue;
                        acc += (int32_t)ip[iy * id.w + ix] * wk[ky * k + kx];
                    }
                }
                out[(c * od.h + y) * od.w + x] = requant(acc, &q[c]);
            }
        }
    }
}

void k_dense(const int8_t *in, uint32_t n_in, const int8_t *w, const int32_t *bias,
             const qparam_t *q, int8_t *out, uint32_t n_out)
{
    for (uint32_t o = 0; o < n_out; o++) {
        int32_t acc = bias[o];
        for (uint32_t i = 0; i < n_in; i++) acc += (int32_t)in[i] * w[o * n_in + i];
        out[o] = requant(acc, &q[o]);
    }
}

void k_add(const int8_t *a, const int8_t *b, int8_t *out, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        int32_t v = (int32_t)a[i] + b[i];
        out[i] = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
    }
}

void k_relu(const int8_t *in, int8_t *out, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) out[i] = in[i] > 0 ? in[i] : 0;
}

int32_t k_decode(const int8_t *map, dims_t d)
{
    uint32_t summary = 0; /* unsigned: the hash may wrap */
    const uint32_t plane = (uint32_t)d.h * d.w;
    for (uint32_t c = 0; c < d.c; c++) {
        int32_t best = -129;
        uint32_t at = 0;
        for (uint32_t i = 0; i < plane; i++) {
            if (map[c * plane + i] > best) {
                best = map[c * plane + i];
                at = i;
            }
        }
        summary = summary * 31u + (uint32_t)(best * 4096) + at;
    }
    return (int32_t)summary;
}
