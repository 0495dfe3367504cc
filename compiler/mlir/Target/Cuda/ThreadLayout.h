// How a recurrence's dimensions map onto CUDA threads.
//
// Channel dimensions are spread over threads: one thread per (batch element, channel index).
// Register dimensions are held whole by each thread, in registers, with sizes fixed when the
// kernel is compiled (-DSF_DIM_<name>=<size>). The forward recurrence's contractions decide the
// split: every dimension it sums over is a register dimension, so the forward sums in-thread.
//
// The backward may still sum over a channel dimension (selective_ssm's B.grad sums over d). Such a
// value is "partial": each thread holds its own term of the sum. That is exact as long as the
// partial value only flows linearly into outputs and accumulated gradients, which then add the
// terms with atomics. If a partial value would feed anything else (a state update, a non-linear
// function), the layout falls back to no channel dimensions: one thread per batch element holds
// everything, and every sum is in-thread.
#pragma once

#include <string>

#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"
#include "llvm/ADT/DenseMap.h"

namespace scanforge::cuda {

using scan::DimMask;

class ThreadLayout {
 public:
  // Chooses the layout for a forward recurrence and its backward (null when there is none).
  // Fails, with a located error, on IR whose dimensions do not verify.
  static mlir::FailureOr<ThreadLayout> choose(scan::RecurrenceOp forward, scan::RecurrenceOp backward);

  DimMask channelDims() const { return channel_; }
  DimMask registerDims() const { return registers_; }
  // Why the channel dimensions were given up; empty when they were not.
  const std::string &fallbackReason() const { return fallbackReason_; }
  // The channel dimensions a value is a per-thread term of a sum over (0 for a complete value).
  DimMask partialOver(mlir::Value v) const { return partial_.lookup(v); }

 private:
  DimMask channel_ = 0, registers_ = 0;
  std::string fallbackReason_;
  llvm::DenseMap<mlir::Value, DimMask> partial_;
};

}  // namespace scanforge::cuda
