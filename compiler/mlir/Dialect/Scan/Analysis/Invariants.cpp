#include "compiler/mlir/Dialect/Scan/Analysis/Invariants.h"

namespace scanforge::scan {

Invariants::Invariants(mlir::Operation *recurrence) {
  for (mlir::Operation &op : llvm::cast<RecurrenceOp>(recurrence).getBodyBlock()) {
    bool pure = llvm::isa<ParamOp>(op) || mlir::isPure(&op);
    bool fromInvariants = llvm::all_of(op.getOperands(), [&](mlir::Value v) { return isInvariant(v); });
    if (pure && fromInvariants) ops_.insert(&op);
  }
}

}  // namespace scanforge::scan
