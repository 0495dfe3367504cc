// --scan-order-products: a product tree's factors multiplied fewest dimensions first, so that the
// factors without a dimension are multiplied once per element of the others instead of once per
// element of all. The selective SSM's delta * B * x ([d], [n], [d]) becomes (delta * x) * B: one
// multiply per (d, n) fewer in its forward, recompute and backward, and the backward's
// (g * x) * delta shares delta * x.
#include <map>

#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"
#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h"
#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h"
#include "compiler/mlir/Dialect/Scan/Transforms/Products.h"
#include "llvm/ADT/bit.h"

namespace scanforge::scan {

#define GEN_PASS_DEF_SCANORDERPRODUCTS
#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h.inc"

namespace {

using mlir::Value;

// What a tree of multiplies costs: each multiply counts the dimensions of its result (a stand-in
// for its element count, the sizes being unknown).
int costOf(Value v, DimAnalysis &dims) {
  auto mul = v.getDefiningOp<mlir::arith::MulFOp>();
  if (!mul || !v.hasOneUse()) return 0;
  return llvm::popcount(dims.of(v)) + costOf(mul.getLhs(), dims) + costOf(mul.getRhs(), dims);
}

// The root of a product tree: a multiply that is not the single use of another multiply.
bool isRoot(mlir::arith::MulFOp mul) {
  Value v = mul.getResult();
  return !v.hasOneUse() || !llvm::isa<mlir::arith::MulFOp>(*v.getUsers().begin());
}

void orderProducts(RecurrenceOp rec, DimAnalysis &dims) {
  llvm::SmallVector<mlir::arith::MulFOp> roots;
  for (auto mul : rec.getBodyBlock().getOps<mlir::arith::MulFOp>())
    if (isRoot(mul)) roots.push_back(mul);
  for (mlir::arith::MulFOp root : roots) {
    llvm::SmallVector<Value> factors;
    collectFactors(root.getLhs(), factors, true);
    collectFactors(root.getRhs(), factors, true);
    // Factors of one dimension set multiplied together first, the sets fewest dimensions first.
    std::map<std::pair<int, DimMask>, llvm::SmallVector<Value>> groups;
    for (Value f : factors) groups[{llvm::popcount(dims.of(f)), dims.of(f)}].push_back(f);
    if (groups.size() < 2) continue;
    int old = llvm::popcount(dims.of(root.getResult())) + costOf(root.getLhs(), dims) + costOf(root.getRhs(), dims);
    int cost = 0;
    DimMask sofar = 0;
    bool first = true;
    for (auto &[key, members] : groups) {
      cost += (static_cast<int>(members.size()) - 1) * key.first;
      if (!first) cost += llvm::popcount(sofar | key.second);
      sofar |= key.second;
      first = false;
    }
    if (cost >= old) continue;
    mlir::OpBuilder b(root);
    Value result;
    for (auto &[key, members] : groups) {
      Value group = productInDefinitionOrder(b, root.getLoc(), members, dims);
      if (result) {
        result = b.create<mlir::arith::MulFOp>(root.getLoc(), result, group);
        (void)dims.ofNew(result);
      } else {
        result = group;
      }
    }
    root.getResult().replaceAllUsesWith(result);
  }
  // The old trees have no uses left; canonicalize erases them (erasing here could hand their
  // addresses to values `dims` does not know).
}

struct OrderProductsPass : impl::ScanOrderProductsBase<OrderProductsPass> {
  void runOnOperation() override {
    for (RecurrenceOp rec : getOperation().getOps<RecurrenceOp>()) {
      mlir::FailureOr<DimAnalysis> dims = DimAnalysis::compute(rec);
      if (mlir::failed(dims)) return signalPassFailure();
      orderProducts(rec, *dims);
    }
  }
};

}  // namespace
}  // namespace scanforge::scan
