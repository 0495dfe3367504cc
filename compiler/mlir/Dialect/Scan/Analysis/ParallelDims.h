// Analysis: which dimensions of a forward recurrence and its backward can be split across
// workers (CUDA threads, CPU channel blocks), and how partial sums flow when they are.
//
// Channel dimensions are independent: each worker takes some of their indices. Contracted
// dimensions are held whole by each worker (in CUDA registers, with sizes fixed at compile time).
// The forward recurrence's contractions decide the split: every dimension it sums over is
// contracted, so the forward sums within a worker.
//
// The backward may still sum over a channel dimension (selective_ssm's B.grad sums over d). Such a
// value is "partial": each worker holds its own term of the sum. That is exact as long as the
// partial value only flows linearly into outputs and accumulated gradients, whose terms the
// target then adds (CUDA: atomics; CPU: per-block partials summed in a fixed order). If a partial
// value would feed anything else (a state update, a non-linear function), the split falls back to
// no channel dimensions: one worker per batch element holds everything, and every sum is local.
#pragma once

#include <string>

#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"
#include "llvm/ADT/DenseMap.h"

namespace scanforge::scan {

class ParallelDims {
 public:
  // An MLIR analysis of a forward scan.recurrence and its generated backward (if the module has
  // one). On IR whose dimensions do not verify it reports located errors and is not valid().
  explicit ParallelDims(mlir::Operation *forward);

  bool valid() const { return valid_; }
  DimMask channelDims() const { return channel_; }
  DimMask contractedDims() const { return contracted_; }
  // Why the channel dimensions were given up; empty when they were not.
  const std::string &fallbackReason() const { return fallbackReason_; }
  // The channel dimensions a value of the forward or the backward is a per-worker term of a sum
  // over (0 for a complete value).
  DimMask partialOver(mlir::Value v) const { return partial_.lookup(v); }

 private:
  bool valid_ = true;
  DimMask channel_ = 0, contracted_ = 0;
  std::string fallbackReason_;
  llvm::DenseMap<mlir::Value, DimMask> partial_;
};

}  // namespace scanforge::scan
