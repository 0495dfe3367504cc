// Small helpers for emitting element-wise f32 math inside a recurrence body.
#pragma once

#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h"
#include "mlir/IR/Builders.h"

namespace scanforge::scan {

class MathBuilder {
 public:
  MathBuilder(mlir::OpBuilder &builder, mlir::Location loc) : b_(builder), loc_(loc) {}

  void setLoc(mlir::Location loc) { loc_ = loc; }
  mlir::Location loc() const { return loc_; }
  mlir::OpBuilder &builder() { return b_; }

  mlir::Value constant(double value) {
    return b_.create<mlir::arith::ConstantOp>(loc_, b_.getF32FloatAttr(static_cast<float>(value)));
  }
  mlir::Value boolean(bool value) {
    return b_.create<mlir::arith::ConstantOp>(loc_, b_.getBoolAttr(value));
  }
  mlir::Value add(mlir::Value x, mlir::Value y) { return b_.create<mlir::arith::AddFOp>(loc_, x, y); }
  mlir::Value sub(mlir::Value x, mlir::Value y) { return b_.create<mlir::arith::SubFOp>(loc_, x, y); }
  mlir::Value mul(mlir::Value x, mlir::Value y) { return b_.create<mlir::arith::MulFOp>(loc_, x, y); }
  mlir::Value div(mlir::Value x, mlir::Value y) { return b_.create<mlir::arith::DivFOp>(loc_, x, y); }
  mlir::Value neg(mlir::Value x) { return b_.create<mlir::arith::NegFOp>(loc_, x); }
  mlir::Value cmp(mlir::arith::CmpFPredicate pred, mlir::Value x, mlir::Value y) {
    return b_.create<mlir::arith::CmpFOp>(loc_, pred, x, y);
  }
  mlir::Value select(mlir::Value cond, mlir::Value x, mlir::Value y) {
    return b_.create<mlir::arith::SelectOp>(loc_, cond, x, y);
  }
  mlir::Value sigmoid(mlir::Value x) { return b_.create<SigmoidOp>(loc_, x); }
  mlir::Value exp(mlir::Value x) { return b_.create<mlir::math::ExpOp>(loc_, x); }
  mlir::Value abs(mlir::Value x) { return b_.create<mlir::math::AbsFOp>(loc_, x); }
  mlir::Value sum(mlir::Value x, llvm::StringRef dim) { return b_.create<SumOp>(loc_, b_.getStringAttr(dim), x); }
  // 1 with the dimensions of `x`, for every x (NaN included), from ops the backends already have:
  // the scan dialect has no broadcast, and a select of two equal constants folds away.
  mlir::Value onesLike(mlir::Value x) {
    mlir::Value c = cmp(mlir::arith::CmpFPredicate::OGE, x, constant(0.0));
    return add(select(c, constant(1.0), constant(0.0)), select(c, constant(0.0), constant(1.0)));
  }

 private:
  mlir::OpBuilder &b_;
  mlir::Location loc_;
};

}  // namespace scanforge::scan
