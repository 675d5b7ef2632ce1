// sensor.h - the simulated sensor: the input frames the application feeds.
#ifndef CPP_APP_SENSOR_H
#define CPP_APP_SENSOR_H

#include <cstdint>

#include "tinyml/tensor.h"

namespace app {

// Every kClippedEvery-th frame (frames 3, 7, 11, ...) comes from a saturated
// sensor; Conv2D::Eval of the first layer rejects it.
constexpr uint32_t kClippedEvery = 4;
// A raw window: 32 samples per pixel of the 16x16 frame (16 KiB of int16).
constexpr int kSamplesPerPixel = 32;
constexpr int kWindowSamples = 16 * 16 * kSamplesPerPixel;

// Writes frame `frame` into the model's 16x16x1 int8 input tensor.
void ReadFrame(uint32_t frame, tinyml::Tensor& input);

// The same frame as a raw window on the heap (new[]; the caller deletes it),
// and the frame computed from it (the mean of each pixel's samples).
int16_t* ReadWindow(uint32_t frame);
void Downsample(const int16_t* window, tinyml::Tensor& input);

}  // namespace app

#endif
