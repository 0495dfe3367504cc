#include "compiler/halide/StepRunner.h"

#include <cstring>

#include "compiler/halide/CpuExecutor.h"

namespace scanforge::cpu {

namespace {

int64_t rowBytes(const PortLayout &layout, const std::vector<int64_t> &sizes) {
  int64_t n = layout.bf16 ? 2 : 4;
  for (int d : layout.dims) n *= sizes[d];
  return n;
}

}  // namespace

StepRunner::StepRunner(ChunkProgram &program, int64_t batch, std::vector<int64_t> dimSizes)
    : program_(program), batch_(batch), dimSizes_(std::move(dimSizes)) {
  for (const BoundInput &in : program.inputs) {
    inputBuffers_.push_back(unbound(in.layout));
    inputRowBytes_.push_back(rowBytes(in.layout, dimSizes_));
    paramMap_.set(in.param, inputBuffers_.back());
  }
  for (const BoundInput &p : program.params) {
    paramBuffers_.push_back(unbound(p.layout));
    paramMap_.set(p.param, paramBuffers_.back());
  }
  for (const BoundInput &s : program.initial) {
    stateBuffers_.push_back(unbound(s.layout));
    stateRowBytes_.push_back(rowBytes(s.layout, dimSizes_));
    paramMap_.set(s.param, stateBuffers_.back());
  }
  std::vector<Halide::Buffer<>> results;
  for (const ProducedOutput &o : program.outputs) {
    outputBuffers_.push_back(unbound(o.layout));
    outputRowBytes_.push_back(rowBytes(o.layout, dimSizes_));
    results.push_back(outputBuffers_.back());
  }
  for (const ProducedOutput &f : program.finals) {
    finals_.emplace_back(rowBytes(f.layout, dimSizes_) / sizeof(float));
    results.push_back(hostBuffer(f.layout, finals_.back().data(), 1, dimSizes_));
  }
  realization_.emplace(results);
  inputs.resize(inputBuffers_.size());
  params.resize(paramBuffers_.size());
  states.resize(stateBuffers_.size());
  outputs.resize(outputBuffers_.size());
}

Halide::Buffer<> StepRunner::unbound(const PortLayout &layout) const {
  static float placeholder;  // run() points the buffer at the caller's data before any use
  return hostBuffer(layout, &placeholder, 1, dimSizes_);
}

void StepRunner::run() {
  // Buffers share their halide_buffer_t with the parameter map's and the realization's copies.
  auto point = [](Halide::Buffer<> &buffer, void *base, int64_t offset) {
    buffer.raw_buffer()->host = static_cast<uint8_t *>(base) + offset;
  };
  for (size_t i = 0; i < paramBuffers_.size(); ++i) point(paramBuffers_[i], params[i], 0);
  for (int64_t b = 0; b < batch_; ++b) {
    for (size_t i = 0; i < inputBuffers_.size(); ++i) point(inputBuffers_[i], inputs[i], b * inputRowBytes_[i]);
    for (size_t i = 0; i < stateBuffers_.size(); ++i) point(stateBuffers_[i], states[i], b * stateRowBytes_[i]);
    for (size_t i = 0; i < outputBuffers_.size(); ++i) point(outputBuffers_[i], outputs[i], b * outputRowBytes_[i]);
    program_.pipeline.realize(*realization_, program_.target, paramMap_);
    // The program's finals are its states, in the same order; the caller's row is read no more.
    for (size_t i = 0; i < finals_.size(); ++i)
      std::memcpy(static_cast<uint8_t *>(states[i]) + b * stateRowBytes_[i], finals_[i].data(), stateRowBytes_[i]);
  }
}

}  // namespace scanforge::cpu
