// --scan-simplify: algebraic clean-up of element-wise math, aimed at the zeros and ones that
// autodiff produces (unused branches of where, max, abs; seeds of unused outputs).
#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"
#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h"
#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace scanforge::scan {

#define GEN_PASS_DEF_SCANSIMPLIFY
#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h.inc"

namespace {

namespace arith = mlir::arith;
using mlir::Value;

bool isConstant(Value v, double want) {
  mlir::FloatAttr attr;
  return mlir::matchPattern(v, mlir::m_Constant(&attr)) && attr.getValueAsDouble() == want;
}

// x * 0 and 0 / x are zeros over x's dimensions, but the constant that replaces them has none. A
// sum of zeros is zero whatever it sums over, but once the zero is added to (or selected with,
// ...) a value without one of x's dimensions, a sum over that dimension downstream meets an
// operand without it (sum(d: x0 * 0 + p0) with x0[d], p0[n]: `0 + p0` is p0, an internal error).
// So a zero is not taken for them where their result reaches such a sum after an op that does not
// keep it zero (anything but a product, a negation, a quotient of it, or a sum).
bool zeroWouldLoseSummedDims(mlir::Operation *op, Value x) {
  auto rec = op->getParentOfType<RecurrenceOp>();
  if (!rec) return false;
  DimAnalysis dims = DimAnalysis::onDemand(rec);
  const DimTable &table = dims.table();
  DimMask lost = dims.ofNew(x);
  if (!lost) return false;
  auto keepsZero = [](mlir::Operation *user, mlir::Operation *from) {
    if (llvm::isa<arith::MulFOp, arith::NegFOp, SumOp>(user)) return true;
    auto div = llvm::dyn_cast<arith::DivFOp>(user);
    return div && div.getLhs().getDefiningOp() == from;
  };
  llvm::SmallVector<std::pair<mlir::Operation *, bool>> work{{op, true}};  // (op, its result is still zero)
  llvm::DenseSet<mlir::Operation *> seen[2];  // by whether the result is still zero
  while (!work.empty()) {
    auto [from, zero] = work.pop_back_val();
    for (mlir::Operation *user : from->getUsers()) {
      if (auto sum = llvm::dyn_cast<SumOp>(user); sum && !zero) {
        int d = table.index(sum.getDim());
        if (d >= 0 && (lost & (1u << d))) return true;
      }
      std::pair<mlir::Operation *, bool> next{user, zero && keepsZero(user, from)};
      if (seen[next.second].insert(next.first).second) work.push_back(next);
    }
  }
  return false;
}

struct MulByZero : mlir::OpRewritePattern<arith::MulFOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(arith::MulFOp op, mlir::PatternRewriter &rw) const override {
    for (auto [zero, other] : {std::pair{op.getLhs(), op.getRhs()}, std::pair{op.getRhs(), op.getLhs()}})
      if (isConstant(zero, 0.0) && !zeroWouldLoseSummedDims(op, other)) {
        rw.replaceOp(op, zero);
        return mlir::success();
      }
    return mlir::failure();
  }
};

struct AddZero : mlir::OpRewritePattern<arith::AddFOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(arith::AddFOp op, mlir::PatternRewriter &rw) const override {
    if (isConstant(op.getRhs(), 0.0)) return rw.replaceOp(op, op.getLhs()), mlir::success();
    if (isConstant(op.getLhs(), 0.0)) return rw.replaceOp(op, op.getRhs()), mlir::success();
    return mlir::failure();
  }
};

struct SubZero : mlir::OpRewritePattern<arith::SubFOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(arith::SubFOp op, mlir::PatternRewriter &rw) const override {
    if (isConstant(op.getRhs(), 0.0)) return rw.replaceOp(op, op.getLhs()), mlir::success();
    if (isConstant(op.getLhs(), 0.0)) return rw.replaceOpWithNewOp<arith::NegFOp>(op, op.getRhs()), mlir::success();
    return mlir::failure();
  }
};

struct DivSimplify : mlir::OpRewritePattern<arith::DivFOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(arith::DivFOp op, mlir::PatternRewriter &rw) const override {
    if (isConstant(op.getLhs(), 0.0) && !zeroWouldLoseSummedDims(op, op.getRhs()))
      return rw.replaceOp(op, op.getLhs()), mlir::success();
    if (isConstant(op.getRhs(), 1.0)) return rw.replaceOp(op, op.getLhs()), mlir::success();
    return mlir::failure();
  }
};

struct NegOfZero : mlir::OpRewritePattern<arith::NegFOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(arith::NegFOp op, mlir::PatternRewriter &rw) const override {
    if (isConstant(op.getOperand(), 0.0)) return rw.replaceOp(op, op.getOperand()), mlir::success();
    if (auto inner = op.getOperand().getDefiningOp<arith::NegFOp>())
      return rw.replaceOp(op, inner.getOperand()), mlir::success();
    return mlir::failure();
  }
};

// where(c, 0, 0) -> 0 is arith's own fold; sum(n: 0) needs ours (the zero has no dimension n).
struct SumOfZero : mlir::OpRewritePattern<SumOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(SumOp op, mlir::PatternRewriter &rw) const override {
    if (!isConstant(op.getOperand(), 0.0)) return mlir::failure();
    rw.replaceOp(op, op.getOperand());
    return mlir::success();
  }
};

struct SimplifyPass : impl::ScanSimplifyBase<SimplifyPass> {
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<MulByZero, AddZero, SubZero, DivSimplify, NegOfZero, SumOfZero>(&getContext());
    if (mlir::failed(mlir::applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

}  // namespace
}  // namespace scanforge::scan
