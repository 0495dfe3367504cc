// The ports of a compiled recurrence as the CUDA kernels see them, taken from the dialect's
// analyses (scan::Ports, scan::BackwardSchedule), and the checks the kernels add on top: dimension
// names must be C identifiers, and a backward must range over its forward's dimensions.
#pragma once

#include <vector>

#include "compiler/mlir/Dialect/Scan/Analysis/BackwardSchedule.h"
#include "mlir/Pass/AnalysisManager.h"
#include "runtime/cuda/PackageFormat.h"

namespace scanforge::cuda {

using scan::DimMask;

struct RecurrenceInfo {
  scan::RecurrenceOp op;
  bool descending = false;         // steps run from t = T-1 down to 0
  std::vector<scan::Port> inputs, params, outputs, accums, states;
  const scan::BackwardSchedule *schedule = nullptr;  // backward only

  // Collects the ports of `rec` (a direct child of the module `analyses` manages); `forward` is
  // its forward recurrence when `rec` is a backward. Fails with a located error on names the
  // kernels cannot use (dimensions that are not identifiers) and on a backward that does not match
  // its forward.
  static mlir::FailureOr<RecurrenceInfo> collect(scan::RecurrenceOp rec, scan::RecurrenceOp forward,
                                                 mlir::AnalysisManager analyses);

  // Backward only: how it obtains each forward state (empty for a forward).
  const std::vector<scan::SavedState> &saved() const;
  int stateIndex(llvm::StringRef name) const;
};

}  // namespace scanforge::cuda
