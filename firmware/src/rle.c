/* rle.c - PackBits-style decoder: tag t < 128 copies t+1 literal bytes,
 * t >= 128 repeats the next byte t-126 times (2..129). Pruned weights have
 * long zero runs, so this halves the model image. */
#include "rle.h"

#include <string.h>

int32_t rle_decode(const uint8_t *src, uint32_t src_len, uint8_t *dst, uint32_t dst_cap)
{
    uint32_t i = 0, o = 0;

    while (i < src_len) {
        uint32_t t = src[i++];
        if (t < 128u) {
            uint32_t n = t + 1u;
            if (i + n > src_len || o + n > dst_cap) {
                return -1;
            }
            memcpy(&dst[o], &src[i], n);
            i += n;
            o += n;
        } else {
            uint32_t n = t - 126u;
            if (i >= src_len || o + n > dst_cap) {
                return -1;
            }
            memset(&dst[o], src[i++], n);
            o += n;
        }
    }
    return (int32_t)o;
}
