#include "runtime/core/LrSchedule.h"

#include <cmath>
#include <numbers>
#include <string>

#include "runtime/core/Error.h"

namespace scanforge {

WarmupCosineSchedule::WarmupCosineSchedule(double peakLr, double minLr, int64_t warmupSteps, int64_t totalSteps)
    : peak_(peakLr), min_(minLr), warmup_(warmupSteps), total_(totalSteps) {
  const char *op = "WarmupCosineSchedule";
  if (!(minLr >= 0 && peakLr >= minLr && std::isfinite(peakLr)))
    throw RuntimeError(op, "needs 0 <= minLr <= peakLr, got minLr " + std::to_string(minLr) + ", peakLr " +
                               std::to_string(peakLr));
  if (warmupSteps < 0 || totalSteps < warmupSteps)
    throw RuntimeError(op, "needs 0 <= warmupSteps <= totalSteps, got " + std::to_string(warmupSteps) + " and " +
                               std::to_string(totalSteps));
}

double WarmupCosineSchedule::at(int64_t step) const {
  if (step < 0) throw RuntimeError("WarmupCosineSchedule::at", "negative step " + std::to_string(step));
  if (step < warmup_) return peak_ * static_cast<double>(step + 1) / static_cast<double>(warmup_);
  if (step >= total_) return min_;
  double progress = static_cast<double>(step - warmup_) / static_cast<double>(total_ - warmup_);
  return min_ + (peak_ - min_) * 0.5 * (1 + std::cos(std::numbers::pi * progress));
}

}  // namespace scanforge
