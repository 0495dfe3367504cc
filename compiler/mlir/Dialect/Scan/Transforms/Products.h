// Product trees of arith.mulf in a recurrence body, taken apart into their factors and built again
// in a canonical order (--scan-factor-sums, --scan-order-products).
#pragma once

#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

namespace scanforge::scan {

// The factors of v's product tree, left to right: through every arith.mulf, or (singleUse) only
// through those whose one use is the tree, so that a shared product stays one value.
void collectFactors(mlir::Value v, llvm::SmallVectorImpl<mlir::Value> &factors, bool singleUse = false);

// The product of factors multiplied in the order they are defined (block arguments first), so that
// equal sets of factors build equal ops for CSE; `dims` learns the dimensions of what it creates.
mlir::Value productInDefinitionOrder(mlir::OpBuilder &b, mlir::Location loc, llvm::SmallVector<mlir::Value> factors,
                                     DimAnalysis &dims);

}  // namespace scanforge::scan
