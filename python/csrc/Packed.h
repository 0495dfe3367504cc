// Packed calls on the backends that take one sequence at a time (the float64 reference, the CUDA
// kernels; docs/sequences.md): each sequence is a call of its own (B = 1, T = its length) on its
// part of the packed tensors, and the results are put together again: outputs and input gradients
// along T, final states and initial-state gradients one row per sequence, parameter gradients
// summed in sequence order (in float64). An empty sequence runs nothing: its final state is its
// initial state (zero if none), its initial-state gradient its final-state gradient.
#pragma once

#include <functional>

#include "python/csrc/Call.h"

namespace scanforge::torchext {

// A backend's forward of one sequence: outputs then finals (Backends.h), parameters bound.
using SequenceForward = std::function<std::vector<at::Tensor>(const Call &, at::TensorList inputs, at::TensorList initial)>;
// A backend's backward of one sequence: input, parameter and initial-state gradients.
using SequenceBackward = std::function<std::vector<at::Tensor>(const Call &, at::TensorList inputs, at::TensorList initial,
                                                               at::TensorList outputGrads, at::TensorList finalGrads)>;

std::vector<at::Tensor> packedForward(const Call &call, at::TensorList inputs, at::TensorList initial,
                                      const SequenceForward &forward);
std::vector<at::Tensor> packedBackward(const Call &call, at::TensorList inputs, at::TensorList initial,
                                       at::TensorList outputGrads, at::TensorList finalGrads,
                                       const SequenceBackward &backward);

}  // namespace scanforge::torchext
