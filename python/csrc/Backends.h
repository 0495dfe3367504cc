// The backends behind the ops, each taking a checked Call. A forward returns the outputs
// (declaration order) then the final value of every state; a backward returns the gradients of
// the inputs, the parameters and the given initial states, in that order, in the call's dtype.
// The backward recomputes the forward's checkpoints from the same tensors, so that no opaque saved
// object crosses the op boundary (the cost: one more forward per backward, docs/python.md).
#pragma once

#include "python/csrc/Call.h"

namespace scanforge::torchext {

// CPU float32 / bfloat16: the Halide programs (Recurrence).
std::vector<at::Tensor> halideForward(const Call &call, at::TensorList inputs, at::TensorList params, at::TensorList initial);
std::vector<at::Tensor> halideBackward(const Call &call, at::TensorList inputs, at::TensorList params, at::TensorList initial,
                                       at::TensorList outputGrads, at::TensorList finalGrads);

// One step of decoding (Recurrence::step): `call` bound on the inputs with a time axis of 1,
// `inputs` without it; returns the outputs [B, dims...] then every state after the step.
std::vector<at::Tensor> halideStep(const Call &call, at::TensorList inputs, at::TensorList params, at::TensorList states);

// CPU float64: the reference interpreter, exactly as the IR says.
std::vector<at::Tensor> referenceForward(const Call &call, at::TensorList inputs, at::TensorList params, at::TensorList initial);
std::vector<at::Tensor> referenceBackward(const Call &call, at::TensorList inputs, at::TensorList params,
                                          at::TensorList initial, at::TensorList outputGrads, at::TensorList finalGrads);

}  // namespace scanforge::torchext
