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
  // Packed sequences (docs/sequences.md): the offsets of the N sequences in the T = total steps of
  // B = 1 inputs, whose states are [N, dims...]; empty: not packed.
  std::vector<int64_t> cuSeqlens;
  at::ScalarType dtype = at::kFloat;
  std::vector<const Port *> initialPorts;  // the state of each given initial tensor

  const Signature &signature() const { return rec->signature; }
  std::vector<int64_t> step(const Port &port) const;   // [B, T, dims...]
  std::vector<int64_t> state(const Port &port) const;  // [B, dims...], packed [N, dims...]
  bool packed() const { return !cuSeqlens.empty(); }
  int64_t rows() const;  // of a state: B, or N when packed
  std::vector<int64_t> param(const Port &port) const;  // [dims...]
};

// `initialNames[i]` names the state `initial[i]` starts; states not named start at zero. With
// `cuSeqlens` (int32 or int64, N + 1 offsets starting at 0, non-decreasing, ending at T; B = 1),
// a packed call: TypeError for another dtype, ValueError for offsets that do not fit.
Call bindCall(const std::string &key, at::TensorList inputs, at::TensorList params, const Names &initialNames,
              at::TensorList initial, const c10::optional<at::Tensor> &cuSeqlens = {});

// Checks the gradients a backward receives: one per output [B, T, dims] and one per state [B, dims].
void checkGradients(const Call &call, at::TensorList outputGrads, at::TensorList finalGrads);

}  // namespace scanforge::torchext
