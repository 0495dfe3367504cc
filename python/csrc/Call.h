// One call of a loaded recurrence, its tensors checked against the signature before any backend
// sees them: one tensor per port, all on one device, one dtype (float64, float32 or bfloat16),
// contiguous, with sizes that agree on B, T and every dimension. Every failure is a ValueError or
// TypeError naming the recurrence, the port and the shapes, so that Python gets an exception.
#pragma once

#include <ATen/ATen.h>

#include "python/csrc/Registry.h"
#include "runtime/cuda/RecurrenceRunner.h"

namespace scanforge::torchext {

using Names = std::vector<std::string>;

struct Call {
  const Loaded *rec = nullptr;
  cuda::Shape shape;  // B, T and every dimension's size
  at::ScalarType dtype = at::kFloat;
  std::vector<const Port *> initialPorts;  // the state of each given initial tensor

  const Signature &signature() const { return rec->signature; }
  std::vector<int64_t> step(const Port &port) const;   // [B, T, dims...]
  std::vector<int64_t> state(const Port &port) const;  // [B, dims...]
  std::vector<int64_t> param(const Port &port) const;  // [dims...]
};

// `initialNames[i]` names the state `initial[i]` starts; states not named start at zero.
Call bindCall(const std::string &key, at::TensorList inputs, at::TensorList params, const Names &initialNames,
              at::TensorList initial);

// Checks the gradients a backward receives: one per output [B, T, dims] and one per state [B, dims].
void checkGradients(const Call &call, at::TensorList outputGrads, at::TensorList finalGrads);

}  // namespace scanforge::torchext
