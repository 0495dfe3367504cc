// A compiled recurrence as a differentiable runtime op: the one place where models/ meets the
// compiler (scanforge::Recurrence from compiler/api/Scanforge.h). The op's forward runs the
// recurrence's forward on the CPU backend and keeps its chunk checkpoints; its backward runs the
// generated backward recurrence.
#pragma once

#include <string>
#include <vector>

#include "compiler/api/Scanforge.h"
#include "runtime/core/Autograd.h"

namespace scanforge::models {

class ScanOp {
 public:
  explicit ScanOp(Recurrence recurrence);

  const Signature &signature() const { return recurrence_.signature(); }

  // inputs: one f32 Variable per input port, [B, T, dims...]; params: one per parameter, [dims...];
  // initial (optional, empty or one per state): [B, dims...]. Returns one Variable per output,
  // [B, T, dims...], differentiable in all of the above.
  std::vector<Variable> operator()(const std::vector<Variable> &inputs, const std::vector<Variable> &params,
                                   const std::vector<Variable> &initial = {}) const;

  // Streaming inference (no gradients): runs the steps of `inputs` starting from `states`
  // ([B, dims...] per state, updated in place to the states after the last step). One step (T = 1)
  // takes the decoding path, Recurrence::step.
  std::vector<Tensor> stream(const std::vector<Tensor> &inputs, const std::vector<Tensor> &params,
                             std::vector<Tensor> &states) const;

 private:
  std::vector<Tensor> step(const TensorViews &inputs, const TensorViews &params, const Shapes &shapes,
                           std::vector<Tensor> &states) const;

  Recurrence recurrence_;
  CustomOp op_;
};

}  // namespace scanforge::models
