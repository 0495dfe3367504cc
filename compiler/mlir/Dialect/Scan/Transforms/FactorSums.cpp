// --scan-factor-sums: sum(n: f * g) -> f * sum(n: g) for every factor f without dimension n, so
// that sums which differ only by such factors become one sum after CSE. The selective SSM's
// backward sums (g + C y.grad) * delta * B and (g + C y.grad) * x * B over n: after this pass
// both are one sum of (g + C y.grad) * B, times delta and times x.
#include <algorithm>

#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"
#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h"
#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h"
#include "mlir/IR/Builders.h"

namespace scanforge::scan {

#define GEN_PASS_DEF_SCANFACTORSUMS
#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h.inc"

namespace {

namespace arith = mlir::arith;
using mlir::Value;

// The factors of a product tree of arith.mulf, left to right.
void collectFactors(Value v, llvm::SmallVectorImpl<Value> &factors) {
  if (auto mul = v.getDefiningOp<arith::MulFOp>()) {
    collectFactors(mul.getLhs(), factors);
    collectFactors(mul.getRhs(), factors);
    return;
  }
  factors.push_back(v);
}

// A product in a canonical order (by where each factor is defined), so that equal sets of
// factors build equal ops for CSE to merge. `dims` learns the dimensions of the values it creates.
Value product(mlir::OpBuilder &b, mlir::Location loc, llvm::SmallVector<Value> factors, DimAnalysis &dims) {
  std::stable_sort(factors.begin(), factors.end(), [](Value x, Value y) {
    mlir::Operation *a = x.getDefiningOp(), *c = y.getDefiningOp();
    if (!a || !c) return !a && c;  // block arguments first
    return a != c && a->isBeforeInBlock(c);
  });
  Value result = factors.front();
  for (size_t i = 1; i < factors.size(); ++i) {
    result = b.create<arith::MulFOp>(loc, result, factors[i]);
    (void)dims.ofNew(result);
  }
  return result;
}

void factorSums(RecurrenceOp rec, DimAnalysis &dims) {
  llvm::SmallVector<SumOp> sums(rec.getBodyBlock().getOps<SumOp>()), replaced;
  for (SumOp sum : sums) {
    int dim = dims.table().index(sum.getDim());
    llvm::SmallVector<Value> factors, inside, outside;
    collectFactors(sum.getOperand(), factors);
    for (Value f : factors) (dims.of(f) >> dim & 1 ? inside : outside).push_back(f);
    if (outside.empty() || inside.empty()) continue;
    mlir::OpBuilder b(sum);
    Value summed = b.create<SumOp>(sum.getLoc(), sum.getDimAttr(), product(b, sum.getLoc(), inside, dims));
    (void)dims.ofNew(summed);
    outside.push_back(summed);
    sum.getResult().replaceAllUsesWith(product(b, sum.getLoc(), outside, dims));
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
