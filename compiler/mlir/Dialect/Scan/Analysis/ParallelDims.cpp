#include "compiler/mlir/Dialect/Scan/Analysis/ParallelDims.h"

#include "compiler/mlir/Dialect/Scan/IR/Adjoints.h"

#include <optional>

#include "llvm/ADT/TypeSwitch.h"

namespace scanforge::scan {

namespace {

using mlir::Value;

bool isZeroConstant(Value v) {
  auto c = v.getDefiningOp<mlir::arith::ConstantOp>();
  if (!c) return false;
  auto f = llvm::dyn_cast<mlir::FloatAttr>(c.getValue());
  return f && f.getValueAsDouble() == 0.0;
}

// "'arith.addf' at model.scan:3:7" (or the location as MLIR prints it, when it is no file).
std::string where(mlir::Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << op->getName().getStringRef() << "' at ";
  if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(op->getLoc()))
    os << file.getFilename().getValue() << ":" << file.getLine() << ":" << file.getColumn();
  else
    os << op->getLoc();
  return text;
}

// Propagates partial sums through one recurrence; returns why the channel split does not work,
// or nothing when every partial value reaches only outputs and accumulated gradients linearly.
class PartialSums {
 public:
  PartialSums(const DimAnalysis &dims, DimMask channel, llvm::DenseMap<Value, DimMask> &partial)
      : dims_(dims), channel_(channel), partial_(partial) {}

  std::optional<std::string> run(RecurrenceOp rec) {
    for (mlir::Operation &op : rec.getBodyBlock())
      if (std::optional<std::string> why = visit(&op)) return why;
    return std::nullopt;
  }

 private:
  std::optional<std::string> visit(mlir::Operation *op) {
    if (auto sum = llvm::dyn_cast<SumOp>(op)) {
      DimMask dim = DimMask(1) << dims_.table().index(sum.getDim());
      partial_[sum.getResult()] = partial_.lookup(sum.getOperand()) | (dim & channel_);
      return std::nullopt;
    }
    if (llvm::isa<OutputOp, AccumOp>(op)) {
      DimMask q = partial_.lookup(op->getOperand(0));
      DimMask port = dims_.table().mask(llvm::cast<PortOpInterface>(op).getDims()).value_or(0);
      if (q & port) return where(op) + " broadcasts a sum over workers back over the summed dimension";
      return std::nullopt;
    }
    bool anyPartial = llvm::any_of(op->getOperands(), [&](Value v) { return partial_.lookup(v) != 0; });
    if (!anyPartial) return std::nullopt;
    if (llvm::isa<UpdateOp, NextOp>(op))
      return where(op) + " updates a state with a sum over the channel dimensions";
    std::optional<DimMask> q = linearCombination(op);
    if (!q) return where(op) + " needs the complete sum of an operand over the channel dimensions";
    partial_[op->getResult(0)] = *q;
    return std::nullopt;
  }

  // The partial dimensions of an op that combines per-worker terms linearly, or nothing.
  std::optional<DimMask> linearCombination(mlir::Operation *op) {
    auto partial = [&](unsigned i) { return partial_.lookup(op->getOperand(i)); };
    // A complete value may scale a term if it is the same for every term of the sum.
    auto scales = [&](unsigned i, DimMask q) { return partial(i) == 0 && !(dims_.of(op->getOperand(i)) & q); };
    // Every addend is a term of the same sum, or zero.
    auto sameSum = [&](llvm::ArrayRef<unsigned> operands) -> std::optional<DimMask> {
      DimMask q = 0;
      for (unsigned i : operands) q |= partial(i);
      for (unsigned i : operands)
        if (partial(i) != q && !isZeroConstant(op->getOperand(i))) return std::nullopt;
      return q;
    };
    return llvm::TypeSwitch<mlir::Operation *, std::optional<DimMask>>(op)
        .Case<mlir::arith::AddFOp, mlir::arith::SubFOp>([&](auto) { return sameSum({0, 1}); })
        .Case<mlir::arith::NegFOp>([&](auto) { return std::optional<DimMask>(partial(0)); })
        .Case<mlir::arith::MulFOp>([&](auto) -> std::optional<DimMask> {
          if (partial(0) && scales(1, partial(0))) return partial(0);
          if (partial(1) && scales(0, partial(1))) return partial(1);
          return std::nullopt;
        })
        .Case<mlir::arith::DivFOp>([&](auto) -> std::optional<DimMask> {
          if (partial(0) && scales(1, partial(0))) return partial(0);
          return std::nullopt;
        })
        .Case<mlir::arith::SelectOp>([&](auto) -> std::optional<DimMask> {
          std::optional<DimMask> q = sameSum({1, 2});
          if (q && scales(0, *q)) return q;
          return std::nullopt;
        })
        .Default([](mlir::Operation *) { return std::nullopt; });
  }

  const DimAnalysis &dims_;
  DimMask channel_;
  llvm::DenseMap<Value, DimMask> &partial_;
};

}  // namespace

ParallelDims::ParallelDims(mlir::Operation *op) {
  auto forward = llvm::cast<RecurrenceOp>(op);
  RecurrenceOp backward = backwardOf(forward);
  mlir::FailureOr<DimAnalysis> fwdDims = DimAnalysis::compute(forward);
  std::optional<DimAnalysis> bwdDims;
  if (mlir::succeeded(fwdDims) && backward) {
    mlir::FailureOr<DimAnalysis> dims = DimAnalysis::compute(backward);
    if (mlir::succeeded(dims)) bwdDims = std::move(*dims);
  }
  if (mlir::failed(fwdDims) || (backward && !bwdDims)) {
    valid_ = false;
    return;
  }
  DimMask all = (DimMask(1) << fwdDims->table().size()) - 1;
  DimMask summed = 0;
  for (SumOp sum : forward.getBodyBlock().getOps<SumOp>()) summed |= DimMask(1) << fwdDims->table().index(sum.getDim());

  channel_ = all & ~summed;
  contracted_ = summed;
  std::optional<std::string> why = PartialSums(*fwdDims, channel_, partial_).run(forward);
  if (!why && backward) why = PartialSums(*bwdDims, channel_, partial_).run(backward);
  if (why) {
    fallbackReason_ = "one worker per batch element, because " + *why;
    channel_ = 0;
    contracted_ = all;
    partial_.clear();
  }
}

}  // namespace scanforge::scan
