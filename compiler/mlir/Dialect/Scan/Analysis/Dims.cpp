#include "compiler/mlir/Dialect/Scan/Analysis/Dims.h"

namespace scanforge::scan {

Dims::Dims(mlir::Operation *recurrence) {
  mlir::FailureOr<DimAnalysis> dims = DimAnalysis::compute(llvm::cast<RecurrenceOp>(recurrence));
  if (mlir::succeeded(dims)) dims_ = std::move(*dims);
}

}  // namespace scanforge::scan
