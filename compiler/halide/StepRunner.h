// One time step of a forward ChunkProgram over a batch, for decoding: a step is too small to share
// across threads, so it runs on the calling thread, one realization per batch element. The Halide
// buffers (one batch element's window of every port), the parameter map and the realization are
// made once for a batch size and dimension sizes; a call only points the buffers at the caller's
// rows, so that after the first call a step compiles nothing and allocates nothing of its own.
#pragma once

#include <optional>
#include <vector>

#include "compiler/halide/ChunkProgram.h"

namespace scanforge::cpu {

class StepRunner {
 public:
  // `program` (a forward program, JIT-compiled) must outlive the runner and serve only it.
  StepRunner(ChunkProgram &program, int64_t batch, std::vector<int64_t> dimSizes);

  int64_t batch() const { return batch_; }
  const std::vector<int64_t> &dimSizes() const { return dimSizes_; }

  // The caller's dense tensors, in the program's port order (ChunkProgram::inputs, params,
  // initial / finals, outputs): per-step ports and states [B, layout dims...], parameters
  // [layout dims...]. run() reads the states and overwrites them with those after the step.
  std::vector<void *> inputs, params, states, outputs;

  void run();

 private:
  // A buffer of one step of one batch element of the layout; run() points it at the caller's data.
  Halide::Buffer<> unbound(const PortLayout &layout) const;

  ChunkProgram &program_;
  int64_t batch_;
  std::vector<int64_t> dimSizes_;
  std::vector<Halide::Buffer<>> inputBuffers_, paramBuffers_, stateBuffers_, outputBuffers_;
  std::vector<int64_t> inputRowBytes_, stateRowBytes_, outputRowBytes_;
  std::vector<std::vector<float>> finals_;  // one batch element's states after the step
  Halide::ParamMap paramMap_;
  std::optional<Halide::Realization> realization_;  // the outputs' buffers, then the finals'
};

}  // namespace scanforge::cpu
