// zrle.h - the zero-run code of compressed model images: tokens t < 0x80
// copy t+1 literal bytes, t >= 0x80 write t-0x7f zero bytes (pruned weights
// are mostly runs of zeros). Header: u32 'TMZ1', u32 inflated size.
#ifndef TINYML_ZRLE_H
#define TINYML_ZRLE_H

#include <cstddef>
#include <cstdint>

namespace tinyml {
namespace zrle {

constexpr size_t kHeaderSize = 8;

// The inflated size a compressed image announces (0: not a zrle image).
size_t InflatedSize(const uint8_t* packed, size_t packed_size);

// Inflates `packed` into `out` (exactly `out_size` bytes) through `window`:
// tokens are decoded into the window, which is copied out whenever it fills.
bool Inflate(const uint8_t* packed, size_t packed_size, uint8_t* window, size_t window_size,
             uint8_t* out, size_t out_size);

}  // namespace zrle
}  // namespace tinyml

#endif
