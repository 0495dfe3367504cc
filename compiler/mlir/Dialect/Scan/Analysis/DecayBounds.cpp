#include "compiler/mlir/Dialect/Scan/Analysis/DecayBounds.h"

#include <cmath>
#include <map>
#include <optional>

namespace scanforge::scan {

std::string ParameterBound::text() const {
  switch (kind) {
    case NonPositive: return param + " <= 0";
    case NonNegative: return param + " >= 0";
    case MagnitudeAtMostOne: return "|" + param + "| <= 1";
  }
  return param;
}

bool ParameterBound::holds(float value) const {
  // A NaN parameter is not this condition's business: the NaN reaches every output it touches.
  switch (kind) {
    case NonPositive: return !(value > 0.0f);
    case NonNegative: return !(value < 0.0f);
    case MagnitudeAtMostOne: return !(std::fabs(value) > 1.0f);
  }
  return true;
}

namespace {

// Conditions under which a value lies in a range for every input: nullopt when the rules cannot
// show it; an empty list when it always does.
using Conditions = std::optional<std::vector<ParameterBound>>;

Conditions both(const Conditions &x, const Conditions &y) {
  if (!x || !y) return std::nullopt;
  std::vector<ParameterBound> all = *x;
  for (const ParameterBound &b : *y)
    if (llvm::none_of(all, [&](const ParameterBound &a) { return a.param == b.param && a.kind == b.kind; })) all.push_back(b);
  return all;
}
// The one that needs fewer conditions (the first on a tie).
Conditions either(const Conditions &x, const Conditions &y) {
  if (!x) return y;
  return y && y->size() < x->size() ? y : x;
}

// Sign and range rules over the body's arith, math and scan ops, memoised per value and range.
class Rules {
 public:
  enum Range { NonNegativeRange, NonPositiveRange, UnitInterval, MagnitudeAtMostOneRange };

  Conditions in(mlir::Value v, Range r) {
    auto key = std::make_pair(v.getAsOpaquePointer(), r);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    Conditions c = derive(v, r);
    memo_[key] = c;
    return c;
  }

 private:
  static std::optional<double> constant(mlir::Value v) {
    auto c = v.getDefiningOp<mlir::arith::ConstantOp>();
    auto f = c ? llvm::dyn_cast<mlir::FloatAttr>(c.getValue()) : nullptr;
    return f ? std::optional<double>(f.getValueAsDouble()) : std::nullopt;
  }
  static Conditions always(bool holds) { return holds ? Conditions(std::vector<ParameterBound>{}) : std::nullopt; }

  Conditions derive(mlir::Value v, Range r) {
    if (std::optional<double> c = constant(v)) {
      switch (r) {
        case NonNegativeRange: return always(*c >= 0);
        case NonPositiveRange: return always(*c <= 0);
        case UnitInterval: return always(*c >= 0 && *c <= 1);
        case MagnitudeAtMostOneRange: return always(std::fabs(*c) <= 1);
      }
    }
    mlir::Operation *op = v.getDefiningOp();
    if (!op) return std::nullopt;
    if (auto p = llvm::dyn_cast<ParamOp>(op)) {
      switch (r) {
        case NonNegativeRange: return std::vector<ParameterBound>{{p.getName().str(), ParameterBound::NonNegative}};
        case NonPositiveRange: return std::vector<ParameterBound>{{p.getName().str(), ParameterBound::NonPositive}};
        case UnitInterval: return std::nullopt;
        case MagnitudeAtMostOneRange:
          return std::vector<ParameterBound>{{p.getName().str(), ParameterBound::MagnitudeAtMostOne}};
      }
    }
    auto x = [&](Range s) { return in(op->getOperand(0), s); };
    auto y = [&](Range s) { return in(op->getOperand(1), s); };
    switch (r) {
      case NonNegativeRange:
      case NonPositiveRange: {
        // One sign's rules, the other's by negation: a product or quotient has sign r where its
        // operands have the same sign (r non-negative) or opposite ones (r non-positive).
        const bool nonNegative = r == NonNegativeRange;
        const Range other = nonNegative ? NonPositiveRange : NonNegativeRange;
        if (nonNegative && llvm::isa<mlir::math::ExpOp, mlir::math::AbsFOp, SigmoidOp, SoftplusOp, GOp>(op))
          return always(true);
        if (llvm::isa<mlir::arith::NegFOp>(op)) return x(other);
        if (llvm::isa<mlir::arith::MulFOp, mlir::arith::DivFOp>(op)) {
          if (nonNegative && op->getOperand(0) == op->getOperand(1)) return always(true);
          return either(both(x(NonNegativeRange), y(r)), both(x(NonPositiveRange), y(other)));
        }
        if (llvm::isa<mlir::arith::AddFOp>(op)) return both(x(r), y(r));
        if (llvm::isa<mlir::arith::SubFOp>(op)) return both(x(r), y(other));
        if (nonNegative ? llvm::isa<mlir::arith::MaximumFOp, mlir::arith::MaxNumFOp>(op)
                        : llvm::isa<mlir::arith::MinimumFOp, mlir::arith::MinNumFOp>(op))
          return either(x(r), y(r));
        return std::nullopt;
      }
      case UnitInterval:
        if (llvm::isa<SigmoidOp>(op)) return always(true);
        if (llvm::isa<mlir::math::ExpOp>(op)) return x(NonPositiveRange);  // e^x <= 1 for x <= 0
        if (llvm::isa<mlir::arith::MulFOp>(op)) return both(x(UnitInterval), y(UnitInterval));
        if (llvm::isa<mlir::arith::SubFOp>(op) && constant(op->getOperand(0)) == 1.0) return y(UnitInterval);
        return std::nullopt;
      case MagnitudeAtMostOneRange:
        if (llvm::isa<mlir::math::TanhOp>(op)) return always(true);
        if (llvm::isa<mlir::arith::NegFOp>(op)) return x(MagnitudeAtMostOneRange);
        if (llvm::isa<mlir::arith::MulFOp>(op)) return both(x(MagnitudeAtMostOneRange), y(MagnitudeAtMostOneRange));
        return in(v, UnitInterval);
    }
    return std::nullopt;
  }

  std::map<std::pair<void *, Range>, Conditions> memo_;
};

}  // namespace

DecayBounds::DecayBounds(mlir::Operation *recurrence) {
  Rules rules;
  for (UpdateOp up : llvm::cast<RecurrenceOp>(recurrence).getBodyBlock().getOps<UpdateOp>()) {
    Conditions c = rules.in(up.getA(), Rules::MagnitudeAtMostOneRange);
    states_.push_back(DecayBound{up.getName().str(), c.has_value(), c.value_or(std::vector<ParameterBound>{})});
  }
}

}  // namespace scanforge::scan
