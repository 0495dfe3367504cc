// Analysis: every value's dimensions (DimAnalysis, IR/ScanDims.h) of a recurrence, cached by an
// AnalysisManager so that the CPU programs and the CUDA kernels read one computation.
#pragma once

#include <optional>

#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"

namespace scanforge::scan {

class Dims {
 public:
  // An MLIR analysis of a scan.recurrence; on IR whose dimensions do not verify it reports
  // located errors and is not valid().
  explicit Dims(mlir::Operation *recurrence);

  bool valid() const { return dims_.has_value(); }
  const DimAnalysis &get() const { return *dims_; }

 private:
  std::optional<DimAnalysis> dims_;
};

}  // namespace scanforge::scan
