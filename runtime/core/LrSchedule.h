// Linear warm-up followed by cosine decay, as a function of the 0-based optimizer step about to be
// taken:
//   step < warmup:           lr = peak * (step + 1) / warmup
//   warmup <= step < total:  lr = min + (peak - min) * (1 + cos(pi * (step - warmup) / (total - warmup))) / 2
//   step >= total:           lr = min
// So the first step already learns (peak / warmup), the last warm-up step reaches the peak, and the
// decay starts from the peak at step = warmup.
#pragma once

#include <cstdint>

namespace scanforge {

class WarmupCosineSchedule {
 public:
  WarmupCosineSchedule(double peakLr, double minLr, int64_t warmupSteps, int64_t totalSteps);
  double at(int64_t step) const;

 private:
  double peak_, min_;
  int64_t warmup_, total_;
};

}  // namespace scanforge
