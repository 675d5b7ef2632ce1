// quant.h - int8 quantization arithmetic: a real multiplier as a Q31 integer
// and a shift, and the rounding multiply the kernels requantize with.
#ifndef TINYML_QUANT_H
#define TINYML_QUANT_H

#include <cstdint>

namespace tinyml {

// real = multiplier * 2^(shift - 31), multiplier in [2^30, 2^31).
void QuantizeMultiplier(float real, int32_t* multiplier, int* shift);
// Per output channel: real[c] = input_scale * filter_scales[c] / output_scale.
void QuantizeMultiplier(float input_scale, const float* filter_scales, float output_scale,
                        int channels, int32_t* multipliers, int* shifts);

// round(x * multiplier * 2^(shift - 31)), saturated to int32.
int32_t MultiplyByQuantizedMultiplier(int32_t x, int32_t multiplier, int shift);

inline int32_t Clamp(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

}  // namespace tinyml

#endif
