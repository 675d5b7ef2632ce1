// quant.cpp - quantized multipliers, written from the usual fixed-point
// definition: real = m * 2^(shift - 31) with m normalised to [2^30, 2^31).
#include "tinyml/quant.h"

namespace tinyml {

// noinline: the overload below would absorb it; each stays a function of its own.
__attribute__((noinline)) void QuantizeMultiplier(float real, int32_t* multiplier, int* shift)
{
    if (!(real > 0.0f)) {
        *multiplier = 0;
        *shift = 0;
        return;
    }
    int s = 0;
    while (real >= 1.0f) {
        real *= 0.5f;
        ++s;
    }
    while (real < 0.5f) {
        real *= 2.0f;
        --s;
    }
    // real in [0.5, 1): 2^31 * real fits after rounding unless it rounds up to 2^31.
    int64_t q = static_cast<int64_t>(real * 2147483648.0f + 0.5f);
    if (q >= (int64_t{1} << 31)) {
        q /= 2;
        ++s;
    }
    *multiplier = static_cast<int32_t>(q);
    *shift = s;
}

void QuantizeMultiplier(float input_scale, const float* filter_scales, float output_scale,
                        int channels, int32_t* multipliers, int* shifts)
{
    for (int c = 0; c < channels; ++c) {
        QuantizeMultiplier(input_scale * filter_scales[c] / output_scale, &multipliers[c],
                           &shifts[c]);
    }
}

int32_t MultiplyByQuantizedMultiplier(int32_t x, int32_t multiplier, int shift)
{
    const int right = 31 - shift;
    if (right <= 0) return x;  // multipliers >= 1 do not occur in these models
    if (right > 62) return 0;
    const int64_t product = static_cast<int64_t>(x) * multiplier;
    const int64_t rounded = (product + (int64_t{1} << (right - 1))) >> right;
    if (rounded > INT32_MAX) return INT32_MAX;
    if (rounded < INT32_MIN) return INT32_MIN;
    return static_cast<int32_t>(rounded);
}

}  // namespace tinyml
