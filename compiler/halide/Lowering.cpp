#include "compiler/halide/Lowering.h"

#include "compiler/halide/Math.h"
#include "llvm/ADT/TypeSwitch.h"

namespace scanforge::cpu {

using Halide::Expr;
using Halide::Func;
using Halide::Var;

namespace {

// atomic() vectorisation of a reduction needs Halide to prove its update associative, and the
// prover does not see through every term (quotients, for one); such a sum keeps the plain schedule.
bool provablyAssociative(Func &r) {
  std::vector<Expr> values = r.update_values().as_vector();
  return Halide::Internal::prove_associativity(r.name(), r.update_args(), values).associative();
}

Expr compare(mlir::arith::CmpFPredicate pred, Expr a, Expr b) {
  using P = mlir::arith::CmpFPredicate;
  switch (pred) {
    case P::OEQ: case P::UEQ: return a == b;
    case P::ONE: case P::UNE: return a != b;
    case P::OLT: case P::ULT: return a < b;
    case P::OLE: case P::ULE: return a <= b;
    case P::OGT: case P::UGT: return a > b;
    case P::OGE: case P::UGE: return a >= b;
    case P::AlwaysTrue: return Halide::cast<bool>(1);
    default: return Halide::cast<bool>(0);
  }
}

}  // namespace

Expr Lowering::expr(int id) {
  const Node &n = g_.node(id);
  auto carrier = carried_.find(id);
  // In a carrying scan's update, its carried nodes and the values computed from them are computed
  // there; ports and other stored nodes are the same Exprs as everywhere.
  bool inUpdate = inUpdate_ && n.op &&
                  (carrier != carried_.end() ? carrier->second.scan == inUpdate_ : !g_.materialized(id));
  std::map<int, Expr> &cache = inUpdate ? updateExprs_ : exprs_;
  auto it = cache.find(id);
  if (it != cache.end()) return it->second;
  Expr e;
  if (!n.op)
    e = leaf_(n.leaf);
  else if (inUpdate)
    e = compute(id);
  else if (carrier != carried_.end())
    e = s_.carried(*carrier->second.scan, carrier->second.index, s_.time());
  else
    e = g_.materialized(id) ? materialize(id) : compute(id);
  cache[id] = e;
  return e;
}

void Lowering::carry(StateScan &s, const std::vector<std::vector<int>> &groups) {
  groups_[&s] = groups;
  s.values = 1;
  for (const std::vector<int> &group : groups)
    for (int id : group) carried_[id] = {&s, s.values++};
}

void Lowering::defineScan(StateScan &s, int a, int b) {
  inUpdate_ = &s;
  // Each carried node is computed once per step, in a Func of its own (operands first), and read
  // by both the update and the scan's Tuple; nodes built from one y (sigmoid(±y), softplus(±y)) are
  // one Func's Tuple, so that Halide computes their exp(-|y|) once.
  std::vector<Halide::Var> at = s_.pureVars(s.dims);
  at.push_back(s_.time());
  std::vector<Expr> args(at.begin(), at.end());
  std::vector<Func> carried;
  for (const std::vector<int> &group : groups_[&s]) {
    Func c("carried_m" + std::to_string(group.front()));
    std::vector<Expr> values;
    for (int id : group) values.push_back(compute(id));
    if (values.size() == 1)
      c(at) = values.front();
    else
      c(at) = Halide::Tuple(values);
    for (size_t k = 0; k < group.size(); ++k) updateExprs_[group[k]] = Schedule::element(c, args, static_cast<int>(k));
    carried.push_back(c);
  }
  Expr aExpr = expr(a), bExpr = expr(b);
  inUpdate_ = nullptr;
  updateExprs_.clear();
  s_.defineScan(s, aExpr, bExpr, carried);
}

// A node stored once per chunk (or once per call when it does not depend on time).
Expr Lowering::materialize(int id) {
  const Node &n = g_.node(id);
  std::vector<int> dims = s_.dimsOf(n.dims);
  std::vector<Var> lhs = s_.pureVars(dims);
  if (n.perStep) lhs.push_back(s_.time());
  Func f("m" + std::to_string(id));
  f(lhs) = compute(id);
  f.compute_root();
  s_.storeVectorFirst(f, dims, n.perStep);
  s_.reorderLoops(f, dims, std::nullopt);
  s_.vectorizeStage(f, s_.vectorDim(n.dims));
  std::vector<Expr> call(lhs.begin(), lhs.end());
  return f(call);
}

Expr Lowering::compute(int id) {
  namespace arith = mlir::arith;
  namespace math = mlir::math;
  const Node &n = g_.node(id);
  auto x = [&](unsigned i) { return expr(n.operands[i]); };
  // sigmoid(-y) and softplus(-y) are built from y (Graph::coreOf), so that they share exp(-|y|)
  // with sigmoid(y) and softplus(y) (minLSTM's sigmoid(r), sigmoid(-r); its softplus(-i) and
  // derivative sigmoid(-i)).
  auto negated = [&] { return g_.coreOf(id) != n.operands[0]; };
  auto magnitudeOf = [&] { return expr(g_.coreOf(id)); };
  auto sigmoid = [&] { return cpu::sigmoid(magnitudeOf(), negated()); };
  if (n.sigmoidOnly) return sigmoid();
  if (n.softplusRatio) {
    auto [a, b] = std::make_pair(n.operands[0], n.operands[1]);
    return cpu::sigmoidOfSoftplusDifference(expr(a), expr(b), cpu::expMinusMagnitude(expr(g_.magnitudeOf(a))),
                                            cpu::expMinusMagnitude(expr(g_.magnitudeOf(b))), expOfScale(a, b));
  }
  return llvm::TypeSwitch<mlir::Operation *, Expr>(n.op)
      .Case<arith::ConstantOp>([&](arith::ConstantOp c) -> Expr {
        // strict_float hides the literal from the simplifier's constant patterns, which treat floats
        // as reals: 0.5 * h + e * 1e-30 would become (e + h * 5e29) * 1e-30 and overflow. Only the
        // constant is strict; the arithmetic around it keeps its fast-math flags.
        if (auto f = llvm::dyn_cast<mlir::FloatAttr>(c.getValue()))
          return Halide::strict_float(Expr(static_cast<float>(f.getValueAsDouble())));
        return Halide::cast<bool>(Expr(llvm::cast<mlir::IntegerAttr>(c.getValue()).getValue().getBoolValue() ? 1 : 0));
      })
      .Case<arith::AddFOp>([&](auto) { return x(0) + x(1); })
      .Case<arith::SubFOp>([&](auto) { return x(0) - x(1); })
      .Case<arith::MulFOp>([&](auto) { return x(0) * x(1); })
      .Case<arith::DivFOp>([&](auto) { return x(0) / x(1); })
      .Case<arith::NegFOp>([&](auto) { return -x(0); })
      .Case<arith::MaximumFOp>([&](auto) { return Halide::max(x(0), x(1)); })
      .Case<arith::MinimumFOp>([&](auto) { return Halide::min(x(0), x(1)); })
      .Case<arith::AndIOp>([&](auto) { return x(0) && x(1); })
      .Case<arith::OrIOp>([&](auto) { return x(0) || x(1); })
      .Case<arith::XOrIOp>([&](auto) { return x(0) != x(1); })
      .Case<arith::SelectOp>([&](auto) { return Halide::select(x(0), x(1), x(2)); })
      .Case<arith::CmpFOp>([&](arith::CmpFOp cmp) { return compare(cmp.getPredicate(), x(0), x(1)); })
      .Case<math::ExpOp>([&](auto) { return cpu::exp(x(0)); })
      .Case<math::LogOp>([&](auto) { return cpu::log(x(0)); })
      .Case<math::TanhOp>([&](auto) { return Halide::tanh(x(0)); })
      .Case<math::SqrtOp>([&](auto) { return Halide::sqrt(x(0)); })
      .Case<math::AbsFOp>([&](auto) { return Halide::abs(x(0)); })
      .Case<scan::SigmoidOp>([&](auto) { return sigmoid(); })
      .Case<scan::SoftplusOp>([&](auto) {  // max(a, 0) + log(1 + exp(-|a|)): no overflow for large |a|
        return Halide::max(x(0), 0.0f) + cpu::log1p(cpu::expMinusMagnitude(magnitudeOf()));
      })
      .Case<scan::GOp>([&](auto) {
        Expr a = x(0);
        return Halide::select(a >= 0.0f, a + 0.5f, x(1));
      })
      .Case<scan::SumOp>([&](scan::SumOp sum) { return contract(n, sum.getDim()); })
      .Default([&](mlir::Operation *other) -> Expr {
        throw std::logic_error("the CPU backend cannot lower '" + other->getName().getStringRef().str() + "'");
      });
}

Expr Lowering::expOfScale(int a, int b) {
  // |max(b, 0) - max(a, 0)| is symmetric in a and b: built in one order, so that a ratio and its
  // complement (minLSTM's sigmoid(r) and sigmoid(-r)) build the same Expr and their code computes
  // it once (from d and -d it was computed twice: minLSTM's forward 12.3 -> 10.6 ms at B = 8).
  auto [lo, hi] = std::minmax(a, b);
  return cpu::expMinusMagnitude(cpu::softplusDifferenceScale(expr(lo), expr(hi)));
}

// A contraction (fused with its siblings, see Graph::fusedWith) as its own reduction,
// vectorised along the data: across the summed dimension (with a horizontal add) when that is
// the operands' vector dimension and Halide can prove the update associative, else across the
// result's vector dimension.
Expr Lowering::contract(const Node &n, llvm::StringRef dimName) {
  int id = static_cast<int>(&n - &g_.node(0));
  std::vector<int> group = g_.fusedWith(id);
  // Fusing makes every member wait for all members' operands. When one of them reads (through
  // other contractions) a member of a group still being built, that wait would be a cycle: such a
  // contraction is computed on its own.
  if (llvm::any_of(group, [&](int member) { return contracting_.count(member) > 0; })) group = {id};
  for (int member : group) contracting_.insert(member);
  int dim = s_.table().index(dimName);
  std::vector<int> dims = s_.dimsOf(n.dims);
  std::vector<Var> lhs = s_.pureVars(dims);
  if (n.perStep) lhs.push_back(s_.time());
  std::string name = "sum_" + dimName.str() + std::to_string(counter_++);
  Func r(name);
  Halide::RDom rd(0, s_.extent(dim), "rd_" + name);
  std::vector<Expr> operands;
  for (int member : group) operands.push_back(expr(g_.node(member).operands[0]));
  for (int member : group) contracting_.erase(member);
  std::vector<int> members;  // less those computed on their own meanwhile (above)
  std::vector<Expr> zeros, terms;
  bool acrossSummed = true;
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i] != id && exprs_.count(group[i])) continue;
    members.push_back(group[i]);
    acrossSummed &= s_.vectorDim(g_.node(g_.node(group[i]).operands[0]).dims) == dim;
    zeros.push_back(0.0f);
    // The term shares subexpressions with other values (a DAG): a substitution that walks it as a
    // tree takes time exponential in its depth.
    terms.push_back(Halide::Internal::graph_substitute(s_.var(dim).name(), rd.x, operands[i]));
  }
  group = members;
  if (group.size() == 1) {
    r(lhs) = zeros.front();
    r(lhs) += terms.front();
  } else {
    r(lhs) = Halide::Tuple(zeros);
    std::vector<Expr> sums;
    for (size_t i = 0; i < terms.size(); ++i) sums.push_back(r(lhs)[i] + terms[i]);
    r(lhs) = Halide::Tuple(sums);
  }
  r.compute_root();
  s_.storeVectorFirst(r, dims, n.perStep);
  if (acrossSummed && provablyAssociative(r)) {
    // Lane-wise partial sums over the whole summed dimension, added across lanes once per result
    // (vectorising the update itself adds across the lanes at every vector of terms: a horizontal
    // reduction on the loop's critical path).
    s_.vectorizeStage(r, s_.vectorDim(n.dims));
    Halide::RVar outer("rdo_" + name), lane("rdl_" + name);
    Var laneVar("lane_" + name);
    r.update().split(rd.x, outer, lane, kLanesPerIteration, Halide::TailStrategy::GuardWithIf);
    Func partial = r.update().rfactor(lane, laneVar);
    if (lhs.empty())
      partial.compute_root();
    else
      partial.compute_at(r, lhs.front());
    partial.vectorize(laneVar);
    partial.update().reorder(laneVar, outer).vectorize(laneVar);
    r.update().atomic().vectorize(lane);
  } else {
    s_.reorderLoops(r, dims, std::nullopt);
    s_.vectorizeStage(r, s_.vectorDim(n.dims));
    s_.reorderLoops(r.update(), dims, rd.x);
    s_.vectorizeStage(r.update(), s_.vectorDim(n.dims));
  }
  std::vector<Expr> call(lhs.begin(), lhs.end());
  Expr result;
  for (size_t i = 0; i < group.size(); ++i) {
    Expr element = group.size() == 1 ? Expr(r(call)) : Expr(r(call)[static_cast<int>(i)]);
    exprs_[group[i]] = element;
    if (group[i] == id) result = element;
  }
  return result;
}

}  // namespace scanforge::cpu
