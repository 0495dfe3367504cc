// --scan-factor-sums: sum(n: f * g) -> f * sum(n: g) for every factor f without dimension n, so
// that sums which differ only by such factors become one sum after CSE. The selective SSM's
// backward sums (g + C y.grad) * delta * B and (g + C y.grad) * x * B over n: after this pass
// both are one sum of (g + C y.grad) * B, times delta and times x.
#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"
#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h"
#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h"
#include "compiler/mlir/Dialect/Scan/Transforms/Products.h"

namespace scanforge::scan {

#define GEN_PASS_DEF_SCANFACTORSUMS
#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h.inc"

namespace {

using mlir::Value;

void factorSums(RecurrenceOp rec, DimAnalysis &dims) {
  llvm::SmallVector<SumOp> sums(rec.getBodyBlock().getOps<SumOp>()), replaced;
  for (SumOp sum : sums) {
    int dim = dims.table().index(sum.getDim());
    llvm::SmallVector<Value> factors, inside, outside;
    collectFactors(sum.getOperand(), factors);
    for (Value f : factors) (dims.of(f) >> dim & 1 ? inside : outside).push_back(f);
    if (outside.empty() || inside.empty()) continue;
    mlir::OpBuilder b(sum);
    Value summed = b.create<SumOp>(sum.getLoc(), sum.getDimAttr(), productInDefinitionOrder(b, sum.getLoc(), inside, dims));
    (void)dims.ofNew(summed);
    outside.push_back(summed);
    sum.getResult().replaceAllUsesWith(productInDefinitionOrder(b, sum.getLoc(), outside, dims));
    replaced.push_back(sum);
  }
  // Erased only now: `dims` keys values by address, which a new op could otherwise reuse.
  for (SumOp sum : replaced) sum.erase();
}

struct FactorSumsPass : impl::ScanFactorSumsBase<FactorSumsPass> {
  void runOnOperation() override {
    for (RecurrenceOp rec : getOperation().getOps<RecurrenceOp>()) {
      mlir::FailureOr<DimAnalysis> dims = DimAnalysis::compute(rec);
      if (mlir::failed(dims)) return signalPassFailure();
      factorSums(rec, *dims);
    }
  }
};

}  // namespace
}  // namespace scanforge::scan
