// sensor.cpp - the frames: a moving blob on a ramp background, the same three
// frames over and over (tools/gen_cpp_model.py calibrates the model on
// them), and a saturated frame every kClippedEvery-th frame. A raw window
// holds each pixel as kSamplesPerPixel samples around 4x its value, whose
// mean gives the pixel back exactly.
#include "app/sensor.h"

namespace app {
namespace {

constexpr int kSide = 16;

int Pixel(uint32_t frame, int y, int x)
{
    const int p = static_cast<int>(frame % kClippedEvery);
    if (p == static_cast<int>(kClippedEvery) - 1) {
        return ((x + y) & 1) ? 127 : -128;  // saturated: on the rails
    }
    int v = (x * (3 + p) + y * 5 + p * 11) % 41 - 20;
    const int dx = x - 4 - 2 * p, dy = y - 8;
    if (dx * dx + dy * dy < 12) v += 60;
    return v;
}

}  // namespace

void ReadFrame(uint32_t frame, tinyml::Tensor& input)
{
    int8_t* x = input.int8();
    for (int y = 0; y < kSide; ++y) {
        for (int xx = 0; xx < kSide; ++xx) {
            x[y * kSide + xx] = static_cast<int8_t>(Pixel(frame, y, xx));
        }
    }
}

int16_t* ReadWindow(uint32_t frame)
{
    int16_t* window = new int16_t[kWindowSamples];
    for (int i = 0; i < kSide * kSide; ++i) {
        const int v = Pixel(frame, i / kSide, i % kSide);
        for (int k = 0; k < kSamplesPerPixel; ++k) {
            window[i * kSamplesPerPixel + k] = static_cast<int16_t>(4 * v + ((k & 1) ? 3 : -3));
        }
    }
    return window;
}

void Downsample(const int16_t* window, tinyml::Tensor& input)
{
    int8_t* x = input.int8();
    for (int i = 0; i < kSide * kSide; ++i) {
        int32_t sum = 0;
        for (int k = 0; k < kSamplesPerPixel; ++k) sum += window[i * kSamplesPerPixel + k];
        x[i] = static_cast<int8_t>(sum / (4 * kSamplesPerPixel));
    }
}

}  // namespace app
