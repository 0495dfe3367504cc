// The time-mixing part of a block: maps [B, T, E] to [B, T, E] causally. Implemented by the
// compiled recurrences (RecurrentLayer) and by the sequential GRU/LSTM baselines.
#pragma once

#include <memory>

#include "models/layers/Module.h"
#include "runtime/core/Autograd.h"

namespace scanforge::models {

class Mixer {
 public:
  virtual ~Mixer() = default;
  virtual Variable forward(const Variable &x) = 0;
  virtual void collect(ModelParams &out, const std::string &prefix) const = 0;
  // Inference one chunk at a time with carried state (no gradients): x [B, T, E] continues where
  // the previous call stopped. resetStream() starts over (zero state) for a batch of `batch`.
  virtual Tensor stream(const Tensor &x) = 0;
  virtual void resetStream(int64_t batch) = 0;
};

}  // namespace scanforge::models
