// --scan-extract-affine: rewrites `scan.next "s" %v` into `scan.update "s" a(%a) b(%b)` with
// v = a * prev(s) + b, or reports where the update stops being affine in s.
#include "compiler/mlir/Dialect/Scan/IR/ScanBuilder.h"
#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"
#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"

namespace scanforge::scan {

#define GEN_PASS_DEF_SCANEXTRACTAFFINE
#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h.inc"

namespace {

using mlir::Value;

// value = coeff * prev + offset; a null member stands for zero.
struct AffineForm {
  Value coeff;
  Value offset;
};

class UpdateExtractor {
 public:
  UpdateExtractor(RecurrenceOp rec, NextOp next, const DimTable &dims) : rec_(rec), next_(next), dims_(dims) {}

  mlir::LogicalResult run() {
    state_ = next_.getName();
    stateDims_ = dims_.mask(next_.getDims()).value_or(0);
    // Only the ops the new value is computed from matter; other users of the state are not updates.
    llvm::SmallPtrSet<mlir::Operation *, 32> slice;
    collectSlice(next_.getValue(), slice);
    llvm::SmallVector<mlir::Operation *> ops;
    for (mlir::Operation &op : rec_.getBodyBlock())
      if (slice.contains(&op)) ops.push_back(&op);
    for (mlir::Operation *op : ops)
      if (mlir::failed(visit(*op))) return mlir::failure();
    Value value = next_.getValue();
    if (Value other = otherState_.lookup(value)) return otherStateError(other);
    AffineForm form = forms_.count(value) ? forms_[value] : AffineForm{Value(), value};
    mlir::OpBuilder builder(next_);
    MathBuilder m(builder, next_.getLoc());
    Value a = form.coeff ? form.coeff : m.constant(0.0);
    Value b = form.offset ? form.offset : m.constant(0.0);
    auto update = builder.create<UpdateOp>(next_.getLoc(), next_.getNameAttr(), next_.getDims(), a, b,
                                             next_.getAdjointOfAttr());
    next_.getResult().replaceAllUsesWith(update.getResult());
    next_.erase();
    return mlir::success();
  }

 private:
  static void collectSlice(Value value, llvm::SmallPtrSetImpl<mlir::Operation *> &slice) {
    mlir::Operation *def = value.getDefiningOp();
    if (!def || !slice.insert(def).second) return;
    for (Value operand : def->getOperands()) collectSlice(operand, slice);
  }

  mlir::LogicalResult visit(mlir::Operation &op) {
    if (auto prev = llvm::dyn_cast<PrevOp>(op)) {
      if (prev.getName() == state_) forms_[prev.getResult()] = {one(prev), Value()};
      else otherState_[prev.getResult()] = prev.getResult();
      return mlir::success();
    }
    if (llvm::isa<NextOp, UpdateOp>(op)) {
      otherState_[op.getResult(0)] = op.getResult(0);
      return mlir::success();
    }
    if (op.getNumResults() == 0) return mlir::success();
    // Values that read another state only matter if they reach this update; remember the first read.
    for (Value operand : op.getOperands())
      if (Value other = otherState_.lookup(operand)) {
        otherState_[op.getResult(0)] = other;
        break;
      }
    bool dependent = llvm::any_of(op.getOperands(), [&](Value v) { return forms_.count(v) || conditions_.count(v); });
    if (!dependent) return mlir::success();
    // A condition computed from the state is only an error where it selects a value.
    if (op.getResult(0).getType().isInteger(1) && !llvm::isa<mlir::arith::SelectOp>(op)) {
      conditions_.insert(op.getResult(0));
      return mlir::success();
    }
    return affine(op);
  }

  // The affine form of an op's result from the forms of its operands.
  mlir::LogicalResult affine(mlir::Operation &op) {
    mlir::OpBuilder builder(&op);
    builder.setInsertionPointAfter(&op);
    MathBuilder m(builder, op.getLoc());
    auto form = [&](Value v) { return forms_.count(v) ? forms_[v] : AffineForm{Value(), v}; };
    auto dep = [&](Value v) { return forms_.count(v) > 0; };
    Value result = op.getResult(0);
    return llvm::TypeSwitch<mlir::Operation *, mlir::LogicalResult>(&op)
        .Case<mlir::arith::AddFOp, mlir::arith::SubFOp>([&](auto bin) {
          AffineForm x = form(bin.getLhs()), y = form(bin.getRhs());
          bool isSub = llvm::isa<mlir::arith::SubFOp>(bin.getOperation());
          forms_[result] = {combine(m, x.coeff, y.coeff, isSub), combine(m, x.offset, y.offset, isSub)};
          return mlir::success();
        })
        .Case<mlir::arith::NegFOp>([&](auto neg) {
          AffineForm x = form(neg.getOperand());
          forms_[result] = {x.coeff ? m.neg(x.coeff) : Value(), x.offset ? m.neg(x.offset) : Value()};
          return mlir::success();
        })
        .Case<mlir::arith::MulFOp>([&](auto mul) {
          if (dep(mul.getLhs()) && dep(mul.getRhs()))
            return notAffine(op, "it multiplies two values that depend on '" + state_ + "'");
          bool lhsDep = dep(mul.getLhs());
          AffineForm x = form(lhsDep ? mul.getLhs() : mul.getRhs());
          Value factor = lhsDep ? mul.getRhs() : mul.getLhs();
          forms_[result] = {x.coeff ? m.mul(x.coeff, factor) : Value(), x.offset ? m.mul(x.offset, factor) : Value()};
          return mlir::success();
        })
        .Case<mlir::arith::DivFOp>([&](auto div) {
          if (dep(div.getRhs())) return notAffine(op, "it divides by a value that depends on '" + state_ + "'");
          AffineForm x = form(div.getLhs());
          forms_[result] = {x.coeff ? m.div(x.coeff, div.getRhs()) : Value(),
                            x.offset ? m.div(x.offset, div.getRhs()) : Value()};
          return mlir::success();
        })
        .Case<mlir::arith::SelectOp>([&](auto sel) {
          if (conditions_.count(sel.getCondition()))
            return notAffine(op, "the condition of 'arith.select' depends on '" + state_ + "'");
          AffineForm x = form(sel.getTrueValue()), y = form(sel.getFalseValue());
          auto pick = [&](Value a, Value b) -> Value {
            if (!a && !b) return Value();
            return m.select(sel.getCondition(), a ? a : m.constant(0.0), b ? b : m.constant(0.0));
          };
          forms_[result] = {pick(x.coeff, y.coeff), pick(x.offset, y.offset)};
          return mlir::success();
        })
        .Case<SumOp>([&](SumOp sum) {
          int dim = dims_.index(sum.getDim());
          if (dim >= 0 && (stateDims_ & (1u << dim)))
            return notAffine(op, "summing over '" + sum.getDim().str() + "' mixes the elements of state '" + state_ + "'");
          AffineForm x = form(sum.getOperand());
          forms_[result] = {x.coeff ? m.sum(x.coeff, sum.getDim()) : Value(),
                            x.offset ? m.sum(x.offset, sum.getDim()) : Value()};
          return mlir::success();
        })
        .Default([&](mlir::Operation *other) {
          return notAffine(*other, "'" + other->getName().getStringRef().str() +
                                       "' is applied to a value that depends on '" + state_ + "'");
        });
  }

  static Value combine(MathBuilder &m, Value x, Value y, bool subtract) {
    if (!y) return x;
    if (!x) return subtract ? m.neg(y) : y;
    return subtract ? m.sub(x, y) : m.add(x, y);
  }

  Value one(mlir::Operation *at) {
    mlir::OpBuilder builder(at);
    builder.setInsertionPointAfter(at);
    return MathBuilder(builder, at->getLoc()).constant(1.0);
  }

  mlir::LogicalResult notAffine(mlir::Operation &op, const std::string &why) {
    op.emitError() << "the update of state '" << state_ << "' is not linear in '" << state_ << "': " << why;
    return mlir::failure();
  }

  mlir::LogicalResult otherStateError(Value read) {
    auto diag = next_.emitError() << "the update of state '" << state_ << "' reads another state";
    diag.attachNote(read.getLoc()) << "the other state is read here";
    return mlir::failure();
  }

  RecurrenceOp rec_;
  NextOp next_;
  const DimTable &dims_;
  std::string state_;
  DimMask stateDims_ = 0;
  llvm::DenseMap<Value, AffineForm> forms_;
  llvm::DenseMap<Value, Value> otherState_;  // value -> the other state's read it depends on
  llvm::DenseSet<Value> conditions_;         // i1 values computed from the state
};

struct ExtractAffinePass : impl::ScanExtractAffineBase<ExtractAffinePass> {
  void runOnOperation() override {
    bool failed = false;
    getOperation().walk([&](RecurrenceOp rec) {
      DimTable dims(rec);
      llvm::SmallVector<NextOp> nexts(rec.getBodyBlock().getOps<NextOp>());
      for (NextOp next : nexts)
        if (mlir::failed(UpdateExtractor(rec, next, dims).run())) failed = true;
      // The original update expressions are now dead; drop them.
      mlir::IRRewriter rewriter(rec.getContext());
      (void)mlir::runRegionDCE(rewriter, rec.getBody());
    });
    if (failed) signalPassFailure();
  }
};

}  // namespace
}  // namespace scanforge::scan
