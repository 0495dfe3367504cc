#include "compiler/mlir/Dialect/Scan/Transforms/Products.h"

#include <algorithm>

namespace scanforge::scan {

void collectFactors(mlir::Value v, llvm::SmallVectorImpl<mlir::Value> &factors, bool singleUse) {
  auto mul = v.getDefiningOp<mlir::arith::MulFOp>();
  if (mul && (!singleUse || v.hasOneUse())) {
    collectFactors(mul.getLhs(), factors, singleUse);
    collectFactors(mul.getRhs(), factors, singleUse);
    return;
  }
  factors.push_back(v);
}

mlir::Value productInDefinitionOrder(mlir::OpBuilder &b, mlir::Location loc, llvm::SmallVector<mlir::Value> factors,
                                     DimAnalysis &dims) {
  std::stable_sort(factors.begin(), factors.end(), [](mlir::Value x, mlir::Value y) {
    mlir::Operation *a = x.getDefiningOp(), *c = y.getDefiningOp();
    if (!a || !c) return !a && c;
    return a != c && a->isBeforeInBlock(c);
  });
  mlir::Value result = factors.front();
  for (size_t i = 1; i < factors.size(); ++i) {
    result = b.create<mlir::arith::MulFOp>(loc, result, factors[i]);
    (void)dims.ofNew(result);
  }
  return result;
}

}  // namespace scanforge::scan
