// --scan-autodiff: generates `@f.backward` for every forward recurrence `@f` in affine form.
//
// The adjoint of the forward scan s_t = a_t s_{t-1} + b_t is a scan in the opposite direction.
// Its state `s.adj` at step t holds d_t = dL/ds_{t-1} as far as it flows through step t:
//   g_t   = dL/ds_t = d_{t+1} + (what the outputs at t contribute)
//   d_t   = a_t g_t + (what outputs reading s_{t-1} contribute)
//   dL/da_t = g_t s_{t-1},  dL/db_t = g_t
// and the chain rule continues from a_t and b_t through the gate math to the inputs and parameters.
// The backward body first recomputes the forward step from the saved state (scan.saved), then
// sweeps the forward ops in reverse, accumulating adjoints.
#include "compiler/mlir/Dialect/Scan/IR/Adjoints.h"
#include "compiler/mlir/Dialect/Scan/IR/ScanBuilder.h"
#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"
#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/IRMapping.h"

namespace scanforge::scan {

#define GEN_PASS_DEF_SCANAUTODIFF
#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h.inc"

namespace {

using mlir::Value;
namespace arith = mlir::arith;

class Differentiator {
 public:
  Differentiator(RecurrenceOp fwd, DimAnalysis dims) : fwd_(fwd), dims_(std::move(dims)), b_(fwd.getContext()) {}

  RecurrenceOp run() {
    b_.setInsertionPointAfter(fwd_);
    std::string name = backwardName(fwd_.getSymName());
    bwd_ = b_.create<RecurrenceOp>(fwd_.getLoc(), b_.getStringAttr(name), fwd_.getDims(),
                                   fwd_.getReverse() ? mlir::UnitAttr() : b_.getUnitAttr(),
                                   mlir::FlatSymbolRefAttr::get(fwd_.getSymNameAttr()));
    bwd_.getBody().emplaceBlock();
    b_.setInsertionPointToStart(&bwd_.getBodyBlock());
    declarePorts();
    recompute();
    sweep();
    emitGradients();
    return bwd_;
  }

 private:
  // Inputs, output gradients, parameters, saved forward states and the adjoint states.
  void declarePorts() {
    for (InputOp in : fwd_.getBodyBlock().getOps<InputOp>())
      map_.map(in.getResult(), b_.clone(*in)->getResult(0));
    for (OutputOp out : fwd_.getBodyBlock().getOps<OutputOp>()) {
      auto grad = b_.create<InputOp>(out.getLoc(), b_.getF32Type(), b_.getStringAttr(gradientName(out.getName())),
                                     out.getDims(), out.getStorageAttr(), out.getNameAttr());
      outputGrads_.push_back({out, grad.getResult()});
    }
    for (ParamOp p : fwd_.getBodyBlock().getOps<ParamOp>()) map_.map(p.getResult(), b_.clone(*p)->getResult(0));
    for (UpdateOp up : fwd_.getBodyBlock().getOps<UpdateOp>()) {
      saved_[up.getName()] = b_.create<SavedOp>(up.getLoc(), b_.getF32Type(), up.getNameAttr(), up.getDims());
      carried_[up.getName()] =
          b_.create<PrevOp>(up.getLoc(), b_.getF32Type(), b_.getStringAttr(adjointStateName(up.getName())),
                            up.getDims(), up.getNameAttr());
    }
    for (PrevOp prev : fwd_.getBodyBlock().getOps<PrevOp>()) map_.map(prev.getResult(), saved_[prev.getName()]);
  }

  // The forward step again, with the saved state in place of the previous state.
  void recompute() {
    for (mlir::Operation &op : fwd_.getBodyBlock()) {
      if (llvm::isa<InputOp, ParamOp, PrevOp, OutputOp>(op)) continue;
      if (auto up = llvm::dyn_cast<UpdateOp>(op)) {
        MathBuilder m(b_, up.getLoc());
        Value a = map_.lookup(up.getA()), bb = map_.lookup(up.getB());
        map_.map(up.getResult(), m.add(m.mul(a, saved_[up.getName()]), bb));
        continue;
      }
      b_.clone(op, map_);
    }
  }

  Value fwdToBwd(Value v) { return map_.lookup(v); }

  // Values computed only from constants carry no gradient. An update always does, even with
  // constant a and b: it reads its previous state, which is not an operand (the initial state's
  // gradient; found by scan-fuzz, tests/fuzz/regressions/constant-update.scan).
  bool active(Value v) {
    auto it = active_.find(v);
    if (it != active_.end()) return it->second;
    mlir::Operation *def = v.getDefiningOp();
    bool result = llvm::isa<InputOp, ParamOp, PrevOp, UpdateOp>(def) ||
                  llvm::any_of(def->getOperands(), [&](Value operand) { return active(operand); });
    active_[v] = result;
    return result;
  }

  // Adds `contribution` to the adjoint of forward value `v`, summing away dimensions v lacks.
  // `use` is the recomputed result of the op that reads v: v was broadcast along its dimensions,
  // so v's adjoint sums the contribution over every one of them that v lacks. An adjoint may lack
  // some of them itself (one coming back from sum(n: ...) is the same for every n): it is then
  // broadcast along them first, or the sum would drop a factor |n| (scan-fuzz seed 7254:
  // sum(n: x0 + x1) with x0[d] gave x0.grad / |n|).
  void accumulate(Value v, Value contribution, MathBuilder &m, Value use = {}) {
    if (!active(v)) return;
    DimMask want = dims_.of(v);
    DimMask have = dims_.ofNew(contribution);
    if (use && (dims_.ofNew(use) & ~want & ~have)) {
      contribution = m.mul(contribution, m.onesLike(use));
      have = dims_.ofNew(contribution);
    }
    for (size_t d = 0; d < dims_.table().size(); ++d)
      if ((have & ~want) & (1u << d)) contribution = m.sum(contribution, dims_.table().name(static_cast<int>(d)));
    auto it = adj_.find(v);
    if (it == adj_.end()) adj_[v] = contribution;
    else it->second = m.add(it->second, contribution);
  }

  void sweep() {
    llvm::SmallVector<mlir::Operation *> ops;
    for (mlir::Operation &op : fwd_.getBodyBlock()) ops.push_back(&op);
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      mlir::Operation *op = *it;
      MathBuilder m(b_, op->getLoc());
      if (auto out = llvm::dyn_cast<OutputOp>(op)) {
        for (auto &[o, grad] : outputGrads_)
          if (o == out) accumulate(out.getValue(), grad, m);
        continue;
      }
      if (auto up = llvm::dyn_cast<UpdateOp>(op)) accumulate(up.getResult(), carried_[up.getName()], m);
      if (op->getNumResults() != 1 || !adj_.count(op->getResult(0))) continue;
      differentiate(op, adj_[op->getResult(0)], m);
    }
  }

  // Propagates the adjoint `g` of op's result to its operands. An operand of a binary op, a select
  // or an update may have fewer dimensions than the result (it is broadcast): accumulate() is told r.
  void differentiate(mlir::Operation *op, Value g, MathBuilder &m) {
    auto x = [&](unsigned i) { return fwdToBwd(op->getOperand(i)); };
    Value r = fwdToBwd(op->getResult(0));
    auto zero = [&] { return m.constant(0.0); };
    using P = arith::CmpFPredicate;
    llvm::TypeSwitch<mlir::Operation *>(op)
        .Case<UpdateOp>([&](UpdateOp up) {
          Value prev = saved_[up.getName()];
          accumulate(up.getA(), m.mul(g, prev), m, r);
          accumulate(up.getB(), g, m, r);
          prevAdj_[up.getName()] = m.mul(x(0), g);
        })
        .Case<arith::AddFOp>([&](auto) {
          accumulate(op->getOperand(0), g, m, r);
          accumulate(op->getOperand(1), g, m, r);
        })
        .Case<arith::SubFOp>([&](auto) {
          accumulate(op->getOperand(0), g, m, r);
          accumulate(op->getOperand(1), m.neg(g), m, r);
        })
        .Case<arith::MulFOp>([&](auto) {
          accumulate(op->getOperand(0), m.mul(g, x(1)), m, r);
          accumulate(op->getOperand(1), m.mul(g, x(0)), m, r);
        })
        .Case<arith::DivFOp>([&](auto) {
          Value gx = m.div(g, x(1));
          accumulate(op->getOperand(0), gx, m, r);
          accumulate(op->getOperand(1), m.neg(m.mul(gx, r)), m, r);  // d(x/y)/dy = -(x/y)/y
        })
        .Case<arith::NegFOp>([&](auto) { accumulate(op->getOperand(0), m.neg(g), m); })
        .Case<arith::MaximumFOp, arith::MinimumFOp>([&](auto) {
          P pred = llvm::isa<arith::MaximumFOp>(op) ? P::OGE : P::OLE;
          Value firstWins = m.cmp(pred, x(0), x(1));
          accumulate(op->getOperand(0), m.select(firstWins, g, zero()), m, r);
          accumulate(op->getOperand(1), m.select(firstWins, zero(), g), m, r);
        })
        .Case<arith::SelectOp>([&](auto) {
          accumulate(op->getOperand(1), m.select(x(0), g, zero()), m, r);
          accumulate(op->getOperand(2), m.select(x(0), zero(), g), m, r);
        })
        .Case<mlir::math::ExpOp>([&](auto) { accumulate(op->getOperand(0), m.mul(g, r), m); })
        .Case<mlir::math::LogOp>([&](auto) { accumulate(op->getOperand(0), m.div(g, x(0)), m); })
        .Case<mlir::math::TanhOp>([&](auto) {
          // 1 - tanh(x)^2 cancels where tanh saturates (float32 rounds it to 0 from |x| = 9 on, and
          // has ~1e-3 relative error at |x| = 5); sech(x)^2 = 4e / (1 + e)^2 with e = exp(-2|x|)
          // keeps a few ulp everywhere.
          Value e = m.exp(m.mul(m.constant(-2.0), m.abs(x(0))));
          Value onePlus = m.add(m.constant(1.0), e);
          accumulate(op->getOperand(0), m.mul(g, m.div(m.mul(m.constant(4.0), e), m.mul(onePlus, onePlus))), m);
        })
        .Case<mlir::math::SqrtOp>([&](auto) {
          accumulate(op->getOperand(0), m.div(m.mul(g, m.constant(0.5)), r), m);
        })
        .Case<mlir::math::AbsFOp>([&](auto) {
          accumulate(op->getOperand(0), m.select(m.cmp(P::OGE, x(0), zero()), g, m.neg(g)), m);
        })
        .Case<SigmoidOp>([&](auto) {
          // r (1 - r) cancels where the sigmoid saturates upwards (float32 rounds 1 - r to 0 from
          // x = 17 on, 5e-4 wrong at x = 10); r sigmoid(-x) keeps a few ulp everywhere, and the
          // CPU backend shares the exponential of the two where it computes both in one loop.
          accumulate(op->getOperand(0), m.mul(g, m.mul(r, m.sigmoid(m.neg(x(0))))), m);
        })
        .Case<SoftplusOp>([&](auto) { accumulate(op->getOperand(0), m.mul(g, m.sigmoid(x(0))), m); })
        .Case<GOp>([&](auto) {
          Value s = m.sigmoid(x(0));
          Value slope = m.select(m.cmp(P::OGE, x(0), zero()), m.constant(1.0), m.mul(s, m.sub(m.constant(1.0), s)));
          accumulate(op->getOperand(0), m.mul(g, slope), m);
        })
        .Case<SumOp>([&](auto) { accumulate(op->getOperand(0), g, m); })  // broadcasts back by name
        .Case<PrevOp>([&](PrevOp prev) { prevAdj_[prev.getName()] = combine(prev.getName(), g, m); })
        .Default([&](mlir::Operation *) {});  // ports, constants, comparisons: no gradient
  }

  // d_t collects a_t g_t (from the update) and direct uses of prev(s) (from accumulate on the prev op).
  Value combine(llvm::StringRef state, Value direct, MathBuilder &m) {
    auto it = prevAdj_.find(state);
    return it == prevAdj_.end() ? direct : m.add(it->second, direct);
  }

  void emitGradients() {
    MathBuilder m(b_, fwd_.getLoc());
    for (InputOp in : fwd_.getBodyBlock().getOps<InputOp>()) {
      m.setLoc(in.getLoc());
      Value g = adj_.count(in.getResult()) ? adj_[in.getResult()] : m.constant(0.0);
      b_.create<OutputOp>(in.getLoc(), b_.getStringAttr(gradientName(in.getName())), in.getDims(), g, in.getStorageAttr(),
                          in.getNameAttr());
    }
    for (ParamOp p : fwd_.getBodyBlock().getOps<ParamOp>()) {
      m.setLoc(p.getLoc());
      Value g = adj_.count(p.getResult()) ? adj_[p.getResult()] : m.constant(0.0);
      b_.create<AccumOp>(p.getLoc(), b_.getStringAttr(gradientName(p.getName())), p.getDims(), g, p.getNameAttr());
    }
    for (UpdateOp up : fwd_.getBodyBlock().getOps<UpdateOp>()) {
      m.setLoc(up.getLoc());
      auto it = prevAdj_.find(up.getName());
      Value d = it != prevAdj_.end() ? it->second : m.constant(0.0);
      b_.create<NextOp>(up.getLoc(), b_.getF32Type(), b_.getStringAttr(adjointStateName(up.getName())), up.getDims(), d,
                       up.getNameAttr());
    }
  }

  RecurrenceOp fwd_, bwd_;
  DimAnalysis dims_;
  mlir::OpBuilder b_;
  mlir::IRMapping map_;                             // forward value -> recomputed value in the backward
  llvm::DenseMap<Value, Value> adj_;                // forward value -> its adjoint (backward value)
  llvm::DenseMap<Value, bool> active_;
  llvm::SmallVector<std::pair<OutputOp, Value>> outputGrads_;
  llvm::StringMap<Value> saved_, carried_, prevAdj_;
};

struct AutodiffPass : impl::ScanAutodiffBase<AutodiffPass> {
  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    llvm::SmallVector<RecurrenceOp> forwards;
    for (RecurrenceOp rec : module.getOps<RecurrenceOp>())
      if (!rec.getAdjointOf() && !backwardOf(rec)) forwards.push_back(rec);
    for (RecurrenceOp rec : forwards) {
      for (NextOp next : rec.getBodyBlock().getOps<NextOp>()) {
        next.emitError() << "state '" << next.getName()
                         << "' is not in affine form; run --scan-extract-affine before --scan-autodiff";
        return signalPassFailure();
      }
      mlir::FailureOr<DimAnalysis> dims = DimAnalysis::compute(rec);
      if (mlir::failed(dims)) return signalPassFailure();
      Differentiator(rec, std::move(*dims)).run();
    }
  }
};

}  // namespace
}  // namespace scanforge::scan
