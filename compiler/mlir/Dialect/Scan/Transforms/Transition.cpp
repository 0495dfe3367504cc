// --scan-transition: a forward recurrence becomes its slice transition, h = a * h with no outputs
// (Passes.td). Only element-wise coefficients exist in the dialect, so the transition of a slice is
// an element-wise product, the same shape as the state.
#include "compiler/mlir/Dialect/Scan/IR/ScanBuilder.h"
#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h"

namespace scanforge::scan {

#define GEN_PASS_DEF_SCANTRANSITION
#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h.inc"

namespace {

struct TransitionPass : impl::ScanTransitionBase<TransitionPass> {
  void runOnOperation() override {
    for (RecurrenceOp rec : getOperation().getOps<RecurrenceOp>()) {
      if (rec.getAdjointOf()) continue;
      llvm::SmallVector<mlir::Operation *> outputs;
      llvm::SmallVector<UpdateOp> updates;
      for (mlir::Operation &op : rec.getBodyBlock()) {
        if (auto next = llvm::dyn_cast<NextOp>(op)) {
          next.emitError("--scan-transition needs the affine form of '") << next.getName()
              << "': run --scan-extract-affine first";
          return signalPassFailure();
        }
        if (llvm::isa<OutputOp>(op)) outputs.push_back(&op);
        if (auto update = llvm::dyn_cast<UpdateOp>(op)) updates.push_back(update);
      }
      for (mlir::Operation *op : outputs) op->erase();
      for (UpdateOp update : updates) {
        mlir::OpBuilder builder(update);
        update.getBMutable().assign(MathBuilder(builder, update.getLoc()).constant(0.0));
      }
    }
  }
};

}  // namespace
}  // namespace scanforge::scan
