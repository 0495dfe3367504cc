// Analysis: the ops of a recurrence body whose values are the same at every step of every batch
// element — parameters, constants and pure math on them. Targets compute them once per call (CPU)
// or once per thread before the time loop (CUDA).
#pragma once

#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h"
#include "llvm/ADT/DenseSet.h"

namespace scanforge::scan {

class Invariants {
 public:
  explicit Invariants(mlir::Operation *recurrence);  // an MLIR analysis of a scan.recurrence

  bool contains(mlir::Operation *op) const { return ops_.contains(op); }
  bool isInvariant(mlir::Value v) const { return v.getDefiningOp() && contains(v.getDefiningOp()); }
  const llvm::DenseSet<mlir::Operation *> &ops() const { return ops_; }

 private:
  llvm::DenseSet<mlir::Operation *> ops_;
};

}  // namespace scanforge::scan
