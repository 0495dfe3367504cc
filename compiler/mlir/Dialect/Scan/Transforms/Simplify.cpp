// --scan-simplify: algebraic clean-up of element-wise math, aimed at the zeros and ones that
// autodiff produces (unused branches of where, max, abs; seeds of unused outputs).
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

struct MulByZero : mlir::OpRewritePattern<arith::MulFOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(arith::MulFOp op, mlir::PatternRewriter &rw) const override {
    for (Value v : {op.getLhs(), op.getRhs()})
      if (isConstant(v, 0.0)) {
        rw.replaceOp(op, v);
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
    if (isConstant(op.getLhs(), 0.0)) return rw.replaceOp(op, op.getLhs()), mlir::success();
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
