// zrle.cpp - inflating a zero-run coded model image (format in zrle.h).
#include "tinyml/zrle.h"

#include <cstring>

namespace tinyml {
namespace zrle {
namespace {

constexpr uint32_t kMagic = 0x315a4d54u;  // "TMZ1"

uint32_t U32(const uint8_t* p)
{
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
           (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

}  // namespace

size_t InflatedSize(const uint8_t* packed, size_t packed_size)
{
    if (packed_size < kHeaderSize || U32(packed) != kMagic) return 0;
    return U32(packed + 4);
}

bool Inflate(const uint8_t* packed, size_t packed_size, uint8_t* window, size_t window_size,
             uint8_t* out, size_t out_size)
{
    if (InflatedSize(packed, packed_size) != out_size || window_size == 0) return false;
    size_t in = kHeaderSize, done = 0, fill = 0;
    while (in < packed_size) {
        const uint8_t token = packed[in++];
        const bool zeros = token >= 0x80u;
        size_t run = zeros ? token - 0x7fu : token + 1u;
        if (!zeros && run > packed_size - in) return false;
        if (run > out_size - done - fill) return false;
        while (run > 0) {
            const size_t n = run < window_size - fill ? run : window_size - fill;
            if (zeros) {
                std::memset(window + fill, 0, n);
            } else {
                std::memcpy(window + fill, packed + in, n);
                in += n;
            }
            fill += n;
            run -= n;
            if (fill == window_size) {
                std::memcpy(out + done, window, fill);
                done += fill;
                fill = 0;
            }
        }
    }
    std::memcpy(out + done, window, fill);
    return done + fill == out_size;
}

}  // namespace zrle
}  // namespace tinyml
