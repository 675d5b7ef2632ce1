/* rle.h - decoder for the PackBits-style model compression (tools/gen_model.py). */
#ifndef RLE_H
#define RLE_H
#include <stdint.h>
/* Returns the number of bytes written, or -1 on a malformed/oversized stream. */
int32_t rle_decode(const uint8_t *src, uint32_t src_len, uint8_t *dst, uint32_t dst_cap);
#endif
