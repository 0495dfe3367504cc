#include "compiler/halide/ChunkProgram.h"

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"
#include "llvm/ADT/TypeSwitch.h"

namespace scanforge::cpu {
namespace {

using Halide::Expr;
using Halide::Func;
using Halide::ImageParam;
using Halide::Var;
using mlir::Value;
using scan::DimMask;

std::vector<int> layoutOf(const scan::DimTable &table, mlir::ArrayAttr dims) {
  auto order = scan::layoutOrder(table, dims);
  return std::vector<int>(order.begin(), order.end());
}

DimMask maskOf(const std::vector<int> &dims) {
  DimMask m = 0;
  for (int d : dims) m |= 1u << d;
  return m;
}

// An injective mapping of port names ("x.grad") to identifiers: '_' -> "__", '.' -> "_d".
std::string sanitize(llvm::StringRef name) {
  std::string out;
  for (char c : name) out += c == '_' ? "__" : c == '.' ? "_d" : std::string(1, c);
  return out;
}

bool isBf16(std::optional<mlir::Type> storage) { return storage && storage->isBF16(); }

// A state's values over one chunk. func(dims..., t) is the value after step t; the slot just
// before the chunk's first step (t = -1, or t = steps for a reverse scan) holds its start value.
struct StateScan {
  std::string name;
  std::vector<int> dims;  // layout order
  bool reverse = false;
  Func func;
  ImageParam start;
};

// ---------------------------------------------------------------------------------------------
// The program's expression graph. Values of the forward body (recomputed in a backward program)
// and of the backward body are numbered structurally, so the backward's copy of the gate math and
// the forward recompute share one node. Expensive nodes used by several definitions are computed
// once per chunk; expensive nodes that do not change over time are computed once per call.
// ---------------------------------------------------------------------------------------------
struct Node {
  mlir::Operation *op = nullptr;  // null for leaves
  std::string leaf;               // "in:x", "par:p", "before:s", "state:s", "fwdbefore:s", "fwdstate:s"
  std::vector<int> operands;
  DimMask dims = 0;
  bool perStep = false;  // reads an input or a state
  std::set<int> roots;   // the definitions (state updates, outputs, accumulations) that read it
  DimMask loops = 0;     // the dimensions of the loops it is evaluated in
  bool feedsScan = false;  // read by a state update
  bool sigmoidOnly = false;  // the sigmoid inside g(x), shared with an explicit sigmoid(x)
};

class Graph {
 public:
  using LeafKey = std::function<std::string(mlir::Operation *)>;

  // Numbers a value of a body; `leaf` names its port and state leaves.
  int number(Value v, const scan::DimAnalysis &dims, const LeafKey &leaf) {
    auto memoKey = std::make_pair(v.getAsOpaquePointer(), static_cast<const void *>(&dims));
    auto it = memo_.find(memoKey);
    if (it != memo_.end()) return it->second;
    mlir::Operation *op = v.getDefiningOp();
    Node node;
    std::string key;
    if (llvm::isa<scan::InputOp, scan::ParamOp, scan::PrevOp, scan::SavedOp, scan::UpdateOp>(op)) {
      node.leaf = leaf(op);
      key = node.leaf;
      node.perStep = node.leaf.rfind("par:", 0) != 0;
    } else {
      node.op = op;
      std::string text;
      llvm::raw_string_ostream os(text);
      os << op->getName().getStringRef();
      for (mlir::NamedAttribute attr : op->getAttrs()) os << " " << attr.getName().getValue() << "=" << attr.getValue();
      for (Value operand : op->getOperands()) {
        int id = number(operand, dims, leaf);
        node.operands.push_back(id);
        node.perStep |= nodes_[id].perStep;
        os << " %" << id;
      }
      key = os.str();
      // g(x) = x >= 0 ? x + 0.5 : sigmoid(x) reads the same sigmoid(x) as its derivative does.
      if (llvm::isa<scan::GOp>(op)) node.operands.push_back(sigmoidOf(op, node.operands.front(), dims.of(v)));
    }
    node.dims = dims.of(v);
    auto [slot, fresh] = ids_.emplace(key, static_cast<int>(nodes_.size()));
    if (fresh) nodes_.push_back(node);
    memo_[memoKey] = slot->second;
    return slot->second;
  }

  int sigmoidOf(mlir::Operation *g, int operand, DimMask dims) {
    auto [slot, fresh] = ids_.emplace("scan.sigmoid %" + std::to_string(operand), static_cast<int>(nodes_.size()));
    if (fresh) {
      Node n;
      n.op = g;
      n.sigmoidOnly = true;
      n.operands = {operand};
      n.dims = dims;
      n.perStep = nodes_[operand].perStep;
      nodes_.push_back(n);
    }
    return slot->second;
  }

  // Records that definition `root`, which loops over `loops`, reads node `id`. The operand of a
  // contraction is evaluated in loops over the operand's own dimensions.
  void markRoot(int id, int root, DimMask loops, bool scanRoot) {
    Node &n = nodes_[id];
    bool fresh = n.roots.insert(root).second;
    if (!fresh && (n.loops | loops) == n.loops && (n.feedsScan || !scanRoot)) return;
    n.loops |= loops;
    n.feedsScan |= scanRoot;
    bool contraction = n.op && llvm::isa<scan::SumOp>(n.op);
    for (int operand : n.operands) markRoot(operand, root, contraction ? nodes_[operand].dims : loops, scanRoot);
  }

  // Contractions over the same dimension with the same result shape that feed only outputs and
  // accumulations, and do not read one another, are computed in one pass (a Tuple reduction).
  std::vector<int> fusedWith(int id) const {
    const Node &n = nodes_[id];
    if (n.feedsScan) return {id};
    auto sum = llvm::cast<scan::SumOp>(n.op);
    std::vector<int> group;
    for (size_t other = 0; other < nodes_.size(); ++other) {
      const Node &o = nodes_[other];
      if (o.roots.empty() || o.feedsScan || !o.op || o.dims != n.dims || o.perStep != n.perStep) continue;
      auto otherSum = llvm::dyn_cast<scan::SumOp>(o.op);
      if (!otherSum || otherSum.getDim() != sum.getDim()) continue;
      bool independent = true;
      for (int member : group) independent &= !reads(member, static_cast<int>(other)) && !reads(static_cast<int>(other), member);
      if (independent) group.push_back(static_cast<int>(other));
    }
    if (std::find(group.begin(), group.end(), id) == group.end()) return {id};
    return group;
  }

  bool reads(int id, int target) const {
    if (id == target) return true;
    for (int operand : nodes_[id].operands)
      if (reads(operand, target)) return true;
    return false;
  }

  const Node &node(int id) const { return nodes_[id]; }

  // Decides, operands first, which nodes are computed once and stored: those that still
  // contain a transcendental function (not counting ones inside stored operands) and would
  // otherwise be computed repeatedly: shared by several definitions, constant over time, or
  // evaluated inside loops over dimensions they do not have.
  void decide() {
    costly_.assign(nodes_.size(), false);
    stored_.assign(nodes_.size(), false);
    for (size_t id = 0; id < nodes_.size(); ++id) {
      const Node &n = nodes_[id];
      if (!n.op || llvm::isa<mlir::arith::ConstantOp>(n.op)) continue;
      bool costly = n.sigmoidOnly || llvm::isa<mlir::math::ExpOp, mlir::math::LogOp, mlir::math::TanhOp,
                                               mlir::math::SqrtOp, scan::SigmoidOp, scan::SoftplusOp>(n.op);
      for (int operand : n.operands) costly |= costly_[operand] && !stored_[operand];
      costly_[id] = costly;
      stored_[id] = costly && (n.roots.size() > 1 || !n.perStep || (n.loops & ~n.dims) != 0);
    }
  }
  bool materialized(int id) const { return stored_[id]; }

 private:
  std::vector<Node> nodes_;
  std::map<std::string, int> ids_;
  std::map<std::pair<const void *, const void *>, int> memo_;
  std::vector<bool> costly_, stored_;
};

// ---------------------------------------------------------------------------------------------
class Builder {
 public:
  Builder(scan::RecurrenceOp forward, scan::RecurrenceOp rec) : table_(rec), t_("t") {
    for (size_t d = 0; d < table_.size(); ++d) {
      program_.dimNames.push_back(table_.name(static_cast<int>(d)).str());
      vars_.push_back(Var("v_" + table_.name(static_cast<int>(d)).str()));
    }
    // Vector dimension preference: the dimensions of the forward outputs first (they are the
    // channels the per-step inputs and outputs are laid out along), then the rest.
    for (auto out : forward.getBodyBlock().getOps<scan::OutputOp>())
      for (int d : layoutOf(table_, out.getDims()))
        if (std::find(vectorOrder_.begin(), vectorOrder_.end(), d) == vectorOrder_.end()) vectorOrder_.push_back(d);
    for (int d = 0; d < static_cast<int>(table_.size()); ++d)
      if (std::find(vectorOrder_.begin(), vectorOrder_.end(), d) == vectorOrder_.end()) vectorOrder_.push_back(d);
    program_.target = Halide::get_jit_target_from_environment().with_feature(Halide::Target::NoAsserts);
  }

  ChunkProgram &program() { return program_; }
  Graph &graph() { return graph_; }
  const scan::DimTable &table() const { return table_; }
  const Var &time() const { return t_; }

  // ---- ports ----
  BoundInput &bind(std::vector<BoundInput> &list, const std::string &role, llvm::StringRef name, mlir::ArrayAttr dims,
                   bool bf16, bool perStep) {
    for (BoundInput &b : list)
      if (b.layout.name == name) return b;
    PortLayout layout{name.str(), layoutOf(table_, dims), bf16, perStep};
    int rank = static_cast<int>(layout.dims.size()) + (perStep ? 1 : 0);
    ImageParam param(bf16 ? Halide::BFloat(16) : Halide::Float(32), rank, role + "_" + sanitize(name));
    if (rank > 0) param.dim(0).set_stride(1);  // dense innermost dimension: vector loads
    list.push_back({layout, param});
    BoundInput &bound = list.back();
    for (size_t i = 0; i < layout.dims.size(); ++i)
      extents_.emplace(layout.dims[i], bound.param.dim(static_cast<int>(layout.dims.size() - 1 - i)).extent());
    if (perStep && !steps_.defined()) steps_ = bound.param.dim(rank - 1).extent();
    return bound;
  }
  BoundInput &bindStep(scan::InputOp in) {
    return bind(program_.inputs, "in", in.getName(), in.getDims(), isBf16(in.getStorage()), true);
  }
  BoundInput &bindParam(scan::ParamOp p) { return bind(program_.params, "par", p.getName(), p.getDims(), false, false); }

  Expr load(const BoundInput &in) {
    Expr value = in.layout.perStep ? in.param(args(in.layout.dims, t_)) : in.param(args(in.layout.dims));
    value = in.layout.bf16 ? Halide::cast<float>(value) : value;
    // A parameter whose contiguous dimension is not its vector dimension is copied once per call
    // into vector-first storage, so the loops that read it every step do not gather.
    int vec = vectorDim(maskOf(in.layout.dims));
    if (in.layout.perStep || in.layout.dims.size() < 2 || vec == in.layout.dims.back()) return value;
    auto it = staged_.find(in.layout.name);
    if (it == staged_.end()) {
      Func f("staged_" + sanitize(in.layout.name));
      f(pureVars(in.layout.dims)) = value;
      f.compute_root();
      storeVectorFirst(f, in.layout.dims, false);
      reorderLoops(f, in.layout.dims, std::nullopt);
      vectorizeStage(f, vec);
      it = staged_.emplace(in.layout.name, f).first;
    }
    return it->second(args(in.layout.dims));
  }

  // ---- dimensions and variables ----
  std::vector<int> dimsOf(DimMask mask) const {
    std::vector<int> dims;
    for (int d = 0; d < static_cast<int>(table_.size()); ++d)
      if (mask & (1u << d)) dims.push_back(d);
    return dims;
  }
  // Halide arguments for dims (in a layout order): the innermost (last) dimension first.
  std::vector<Expr> args(const std::vector<int> &dims) const {
    std::vector<Expr> out;
    for (auto it = dims.rbegin(); it != dims.rend(); ++it) out.push_back(vars_[*it]);
    return out;
  }
  std::vector<Expr> args(const std::vector<int> &dims, Expr t) const {
    std::vector<Expr> out = args(dims);
    out.push_back(t);
    return out;
  }
  std::vector<Var> pureVars(const std::vector<int> &dims) const {
    std::vector<Var> out;
    for (auto it = dims.rbegin(); it != dims.rend(); ++it) out.push_back(vars_[*it]);
    return out;
  }
  const Var &var(int dim) const { return vars_[dim]; }
  int vectorDim(DimMask mask) const {
    for (int d : vectorOrder_)
      if (mask & (1u << d)) return d;
    return -1;
  }
  Expr steps() const {
    if (!steps_.defined()) throw std::logic_error("a recurrence without per-step inputs cannot be lowered");
    return steps_;
  }
  Expr extent(int dim) const { return extents_.at(dim); }
  // f32 lanes of the host's vectors: 16 with AVX-512, 8 with AVX2.
  int lanes() const { return program_.target.natural_vector_size(Halide::Float(32)); }

  // Stores a Func with its vector dimension innermost and vectorises its stage over it.
  void vectorizeStage(Halide::Stage stage, int vectorDim) const {
    if (vectorDim >= 0) stage.vectorize(vars_[vectorDim], lanes(), Halide::TailStrategy::GuardWithIf);
  }
  void storeVectorFirst(Func f, const std::vector<int> &dims, bool perStep) const {
    int vec = vectorDim(maskOf(dims));
    if (vec < 0 || dims.size() < 2) return;
    std::vector<Var> order = {vars_[vec]};
    for (const Var &v : pureVars(dims))
      if (v.name() != vars_[vec].name()) order.push_back(v);
    if (perStep) order.push_back(t_);
    f.reorder_storage(order);
  }
  // Loop order for a stage over dims (+ an outer RVar): vector dimension innermost.
  void reorderLoops(Halide::Stage stage, const std::vector<int> &dims, std::optional<Halide::RVar> outer) const {
    int vec = vectorDim(maskOf(dims));
    std::vector<Halide::VarOrRVar> order;
    if (vec >= 0) order.push_back(vars_[vec]);
    for (const Var &v : pureVars(dims))
      if (vec < 0 || v.name() != vars_[vec].name()) order.push_back(v);
    if (outer) order.push_back(*outer);
    if (order.size() > 1) stage.reorder(order);
  }

  // ---- states ----
  Expr startIndex(const StateScan &s) const { return s.reverse ? steps() : Expr(-1); }
  Expr previous(const StateScan &s, Expr t) const { return s.reverse ? t + 1 : t - 1; }
  Expr before(const StateScan &s, Expr t) const { return s.func(args(s.dims, previous(s, t))); }
  Expr after(const StateScan &s, Expr t) const { return s.func(args(s.dims, t)); }

  StateScan &newState(std::map<std::string, StateScan> &states, const std::string &key, llvm::StringRef name,
                      mlir::ArrayAttr dims, bool reverse, BoundInput &start) {
    StateScan &s = states[key];
    s.name = name.str();
    s.dims = layoutOf(table_, dims);
    s.reverse = reverse;
    s.func = Func("scan_" + sanitize(key));
    s.start = start.param;
    return s;
  }

  // s(t) = a(t) * s(t-1) + b(t), scanned serially in the state's direction; the gate math of a and
  // b is inlined into the update.
  void defineScan(StateScan &s, Expr a, Expr b) {
    std::string base = sanitize(s.name);
    std::vector<Var> pure = pureVars(s.dims);
    std::vector<Var> withT = pure;
    withT.push_back(t_);
    Func A("a_" + base), B("b_" + base);
    A(withT) = a;
    B(withT) = b;
    s.func(withT) = Halide::undef<float>();
    std::vector<Expr> at(pure.begin(), pure.end());
    at.push_back(startIndex(s));
    s.func(at) = s.start(args(s.dims));
    Halide::RDom r(0, steps(), "r_" + base);
    Expr tr = s.reverse ? steps() - 1 - r.x : Expr(r.x);
    at.back() = tr;
    s.func(at) = A(at) * before(s, tr) + B(at);
    s.func.compute_root();
    storeVectorFirst(s.func, s.dims, true);
    int vec = vectorDim(maskOf(s.dims));
    vectorizeStage(s.func.update(0), vec);
    reorderLoops(s.func.update(1), s.dims, r.x);
    vectorizeStage(s.func.update(1), vec);
  }

  // ---- results ----
  void addStepOutput(llvm::StringRef name, mlir::ArrayAttr dims, bool bf16, Expr value) {
    PortLayout layout{name.str(), layoutOf(table_, dims), bf16, true};
    Func f("out_" + sanitize(name));
    std::vector<Var> lhs = pureVars(layout.dims);
    lhs.push_back(t_);
    f(lhs) = bf16 ? Halide::cast(Halide::BFloat(16), value) : value;
    if (!layout.dims.empty()) f.vectorize(lhs.front(), lanes(), Halide::TailStrategy::GuardWithIf);
    program_.outputs.push_back({layout, f});
  }

  void addFinal(const StateScan &s) {
    Func f("final_" + sanitize(s.name));
    std::vector<Var> lhs = pureVars(s.dims);
    f(lhs) = s.func(args(s.dims, s.reverse ? Expr(0) : steps() - 1));
    if (!s.dims.empty()) f.vectorize(lhs.front(), lanes(), Halide::TailStrategy::GuardWithIf);
    program_.finals.push_back({PortLayout{s.name, s.dims, false, false}, f});
  }

  // The chunk's sum over t of value, accumulated in vector-friendly storage and then written out
  // in the parameter's layout.
  void addAccum(llvm::StringRef name, mlir::ArrayAttr dims, Expr value) {
    PortLayout layout{name.str(), layoutOf(table_, dims), false, false};
    std::string base = sanitize(name);
    std::vector<Var> pure = pureVars(layout.dims);
    std::vector<Var> withT = pure;
    withT.push_back(t_);
    Func term("term_" + base), acc("acc_" + base), out("accum_" + base);
    term(withT) = value;
    acc(pure) = 0.0f;
    Halide::RDom r(0, steps(), "rt_" + base);
    std::vector<Expr> at(pure.begin(), pure.end());
    at.push_back(r.x);
    acc(pure) += term(at);
    acc.compute_root();
    storeVectorFirst(acc, layout.dims, false);
    int vec = vectorDim(maskOf(layout.dims));
    vectorizeStage(acc, vec);
    reorderLoops(acc.update(), layout.dims, r.x);
    vectorizeStage(acc.update(), vec);
    out(pure) = acc(pure);
    if (!pure.empty()) out.vectorize(pure.front(), lanes(), Halide::TailStrategy::GuardWithIf);
    program_.accums.push_back({layout, out});
  }

  void finish() {
    std::vector<Func> all;
    for (auto *list : {&program_.outputs, &program_.finals, &program_.accums})
      for (ProducedOutput &o : *list) all.push_back(o.func);
    program_.pipeline = Halide::Pipeline(all);
  }

 private:
  scan::DimTable table_;
  Var t_;
  std::vector<Var> vars_;
  std::vector<int> vectorOrder_;
  std::map<int, Expr> extents_;
  Expr steps_;
  Graph graph_;
  std::map<std::string, Func> staged_;
  ChunkProgram program_;
};

// ---------------------------------------------------------------------------------------------
// Turns graph nodes into Halide expressions over (dims..., t).
class Lowering {
 public:
  using Leaf = std::function<Expr(const std::string &)>;

  Lowering(Builder &b, Leaf leaf) : b_(b), leaf_(std::move(leaf)) {}

  Expr expr(int id) {
    auto it = exprs_.find(id);
    if (it != exprs_.end()) return it->second;
    const Node &n = b_.graph().node(id);
    Expr e = n.op ? (b_.graph().materialized(id) ? materialize(id) : compute(id)) : leaf_(n.leaf);
    exprs_[id] = e;
    return e;
  }

 private:
  // A node stored once per chunk (or once per call when it does not depend on time).
  Expr materialize(int id) {
    const Node &n = b_.graph().node(id);
    std::vector<int> dims = b_.dimsOf(n.dims);
    std::vector<Var> lhs = b_.pureVars(dims);
    if (n.perStep) lhs.push_back(b_.time());
    Func f("m" + std::to_string(id));
    f(lhs) = compute(id);
    f.compute_root();
    b_.storeVectorFirst(f, dims, n.perStep);
    b_.reorderLoops(f, dims, std::nullopt);
    b_.vectorizeStage(f, b_.vectorDim(n.dims));
    std::vector<Expr> call(lhs.begin(), lhs.end());
    return f(call);
  }

  Expr compute(int id) {
    namespace arith = mlir::arith;
    namespace math = mlir::math;
    const Node &n = b_.graph().node(id);
    auto x = [&](unsigned i) { return expr(n.operands[i]); };
    if (n.sigmoidOnly) return sigmoid(x(0));
    return llvm::TypeSwitch<mlir::Operation *, Expr>(n.op)
        .Case<arith::ConstantOp>([&](arith::ConstantOp c) -> Expr {
          if (auto f = llvm::dyn_cast<mlir::FloatAttr>(c.getValue())) return Expr(static_cast<float>(f.getValueAsDouble()));
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
        .Case<math::ExpOp>([&](auto) { return exp(x(0)); })
        .Case<math::LogOp>([&](auto) { return Halide::log(x(0)); })
        .Case<math::TanhOp>([&](auto) { return Halide::tanh(x(0)); })
        .Case<math::SqrtOp>([&](auto) { return Halide::sqrt(x(0)); })
        .Case<math::AbsFOp>([&](auto) { return Halide::abs(x(0)); })
        .Case<scan::SigmoidOp>([&](auto) { return sigmoid(x(0)); })
        .Case<scan::SoftplusOp>([&](auto) {
          Expr a = x(0);  // max(a, 0) + log(1 + exp(-|a|)): no overflow for large |a|
          return Halide::max(a, 0.0f) + Halide::log(1.0f + exp(-Halide::abs(a)));
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

  // A contraction (fused with its siblings, see Graph::fusedWith) as its own reduction,
  // vectorised along the data: across the summed dimension (with a horizontal add) when that is
  // the operands' vector dimension, else across the result's vector dimension.
  Expr contract(const Node &n, llvm::StringRef dimName) {
    int id = static_cast<int>(&n - &b_.graph().node(0));
    std::vector<int> group = b_.graph().fusedWith(id);
    int dim = b_.table().index(dimName);
    b_.program().summedDims.insert(dim);
    std::vector<int> dims = b_.dimsOf(n.dims);
    std::vector<Var> lhs = b_.pureVars(dims);
    if (n.perStep) lhs.push_back(b_.time());
    std::string name = "sum_" + dimName.str() + std::to_string(counter_++);
    Func r(name);
    Halide::RDom rd(0, b_.extent(dim), "rd_" + name);
    std::vector<Expr> zeros, terms;
    bool acrossSummed = true;
    for (int member : group) {
      const Node &operand = b_.graph().node(b_.graph().node(member).operands[0]);
      acrossSummed &= b_.vectorDim(operand.dims) == dim;
      zeros.push_back(0.0f);
      terms.push_back(Halide::Internal::substitute(b_.var(dim).name(), rd.x, expr(b_.graph().node(member).operands[0])));
    }
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
    b_.storeVectorFirst(r, dims, n.perStep);
    if (acrossSummed) {
      b_.vectorizeStage(r, b_.vectorDim(n.dims));
      r.update().atomic().vectorize(rd.x, b_.lanes());
    } else {
      b_.reorderLoops(r, dims, std::nullopt);
      b_.vectorizeStage(r, b_.vectorDim(n.dims));
      b_.reorderLoops(r.update(), dims, rd.x);
      b_.vectorizeStage(r.update(), b_.vectorDim(n.dims));
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

  static Expr sigmoid(Expr a) { return reciprocal(1.0f + exp(-a)); }

  // exp within f32's range, by Halide's polynomial (accurate to about 2^-18 relative).
  static Expr exp(Expr a) { return Halide::fast_exp(Halide::clamp(a, -87.0f, 88.0f)); }
  // 1/x from the hardware estimate and one Newton step (about 2^-22 relative).
  static Expr reciprocal(Expr x) {
    Expr r = Halide::fast_inverse(x);
    return r * (2.0f - x * r);
  }

  static Expr compare(mlir::arith::CmpFPredicate pred, Expr a, Expr b) {
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

  Builder &b_;
  Leaf leaf_;
  std::map<int, Expr> exprs_;
  int counter_ = 0;
};

void requireAffine(scan::RecurrenceOp rec) {
  if (!rec.getBodyBlock().getOps<scan::NextOp>().empty())
    throw std::logic_error("recurrence '" + rec.getSymName().str() + "' is not in affine form");
}

DimMask portMask(const Builder &b, mlir::ArrayAttr dims) { return b.table().mask(dims).value_or(0); }

scan::DimAnalysis analyze(scan::RecurrenceOp rec) {
  mlir::FailureOr<scan::DimAnalysis> dims = scan::DimAnalysis::compute(rec);
  if (mlir::failed(dims)) throw std::logic_error("recurrence '" + rec.getSymName().str() + "' does not verify");
  return std::move(*dims);
}

// Leaf names of a body: ports by name; states by role (the program's own, or recomputed forward).
Graph::LeafKey leafNames(const std::string &prevRole, const std::string &stateRole) {
  return [=](mlir::Operation *op) -> std::string {
    if (auto in = llvm::dyn_cast<scan::InputOp>(op)) return "in:" + in.getName().str();
    if (auto p = llvm::dyn_cast<scan::ParamOp>(op)) return "par:" + p.getName().str();
    if (auto prev = llvm::dyn_cast<scan::PrevOp>(op)) return prevRole + prev.getName().str();
    if (auto saved = llvm::dyn_cast<scan::SavedOp>(op)) return "fwdbefore:" + saved.getName().str();
    return stateRole + llvm::cast<scan::UpdateOp>(op).getName().str();
  };
}

// Resolves leaf names to loads of ports and state scans.
Lowering::Leaf leafExprs(Builder &b, scan::RecurrenceOp ports, std::map<std::string, StateScan> &own,
                         std::map<std::string, StateScan> *forward) {
  return [&b, ports, &own, forward](const std::string &leaf) mutable -> Expr {
    size_t colon = leaf.find(':');
    std::string role = leaf.substr(0, colon), name = leaf.substr(colon + 1);
    if (role == "in" || role == "par") {
      for (mlir::Operation &op : ports.getBodyBlock()) {
        if (auto in = llvm::dyn_cast<scan::InputOp>(op); in && role == "in" && in.getName() == name) return b.load(b.bindStep(in));
        if (auto p = llvm::dyn_cast<scan::ParamOp>(op); p && role == "par" && p.getName() == name) return b.load(b.bindParam(p));
      }
      throw std::logic_error("no port '" + name + "'");
    }
    if (role == "before") return b.before(own.at(name), b.time());
    if (role == "state") return b.after(own.at(name), b.time());
    if (role == "fwdbefore") return b.before(forward->at(name), b.time());
    return b.after(forward->at(name), b.time());  // fwdstate
  };
}

}  // namespace

ChunkProgram buildForwardProgram(scan::RecurrenceOp fwd) {
  requireAffine(fwd);
  Builder b(fwd, fwd);
  scan::DimAnalysis dims = analyze(fwd);
  Graph &g = b.graph();
  auto names = leafNames("before:", "state:");
  int root = 0;
  std::vector<std::pair<int, int>> updates;  // (a, b) per state
  for (auto up : fwd.getBodyBlock().getOps<scan::UpdateOp>()) {
    updates.push_back({g.number(up.getA(), dims, names), g.number(up.getB(), dims, names)});
    g.markRoot(updates.back().first, root, dims.of(up.getResult()), true);
    g.markRoot(updates.back().second, root++, dims.of(up.getResult()), true);
  }
  std::vector<int> outputs;
  for (auto out : fwd.getBodyBlock().getOps<scan::OutputOp>()) {
    outputs.push_back(g.number(out.getValue(), dims, names));
    g.markRoot(outputs.back(), root++, portMask(b, out.getDims()), false);
  }

  g.decide();
  for (auto in : fwd.getBodyBlock().getOps<scan::InputOp>()) b.bindStep(in);
  for (auto p : fwd.getBodyBlock().getOps<scan::ParamOp>()) b.bindParam(p);
  std::map<std::string, StateScan> states;
  for (auto up : fwd.getBodyBlock().getOps<scan::UpdateOp>())
    b.newState(states, up.getName().str(), up.getName(), up.getDims(), fwd.getReverse(),
               b.bind(b.program().initial, "start", up.getName(), up.getDims(), false, false));
  Lowering lower(b, leafExprs(b, fwd, states, nullptr));
  size_t i = 0;
  for (auto up : fwd.getBodyBlock().getOps<scan::UpdateOp>()) {
    b.defineScan(states.at(up.getName().str()), lower.expr(updates[i].first), lower.expr(updates[i].second));
    ++i;
  }
  i = 0;
  for (auto out : fwd.getBodyBlock().getOps<scan::OutputOp>())
    b.addStepOutput(out.getName(), out.getDims(), isBf16(out.getStorage()), lower.expr(outputs[i++]));
  for (auto up : fwd.getBodyBlock().getOps<scan::UpdateOp>()) b.addFinal(states.at(up.getName().str()));
  b.finish();
  return std::move(b.program());
}

ChunkProgram buildBackwardProgram(scan::RecurrenceOp fwd, scan::RecurrenceOp bwd) {
  requireAffine(fwd);
  requireAffine(bwd);
  Builder b(fwd, bwd);
  scan::DimAnalysis fwdDims = analyze(fwd), bwdDims = analyze(bwd);
  Graph &g = b.graph();
  // The forward body is numbered with its states as the recomputed forward states, so the
  // backward's copy of the gate math (which reads scan.saved) shares its nodes.
  auto fwdNames = leafNames("fwdbefore:", "fwdstate:"), bwdNames = leafNames("before:", "state:");
  int root = 0;
  std::vector<std::pair<int, int>> fwdUpdates, bwdUpdates;
  for (auto up : fwd.getBodyBlock().getOps<scan::UpdateOp>()) {
    fwdUpdates.push_back({g.number(up.getA(), fwdDims, fwdNames), g.number(up.getB(), fwdDims, fwdNames)});
    g.markRoot(fwdUpdates.back().first, root, fwdDims.of(up.getResult()), true);
    g.markRoot(fwdUpdates.back().second, root++, fwdDims.of(up.getResult()), true);
  }
  for (auto up : bwd.getBodyBlock().getOps<scan::UpdateOp>()) {
    bwdUpdates.push_back({g.number(up.getA(), bwdDims, bwdNames), g.number(up.getB(), bwdDims, bwdNames)});
    g.markRoot(bwdUpdates.back().first, root, bwdDims.of(up.getResult()), true);
    g.markRoot(bwdUpdates.back().second, root++, bwdDims.of(up.getResult()), true);
  }
  std::vector<int> outputs, accums;
  for (auto out : bwd.getBodyBlock().getOps<scan::OutputOp>()) {
    outputs.push_back(g.number(out.getValue(), bwdDims, bwdNames));
    g.markRoot(outputs.back(), root++, portMask(b, out.getDims()), false);
  }
  for (auto acc : bwd.getBodyBlock().getOps<scan::AccumOp>()) {
    accums.push_back(g.number(acc.getValue(), bwdDims, bwdNames));
    g.markRoot(accums.back(), root++, portMask(b, acc.getDims()), false);
  }

  g.decide();
  for (auto in : bwd.getBodyBlock().getOps<scan::InputOp>()) b.bindStep(in);
  for (auto p : bwd.getBodyBlock().getOps<scan::ParamOp>()) b.bindParam(p);
  std::map<std::string, StateScan> forward, adjoint;
  for (auto up : fwd.getBodyBlock().getOps<scan::UpdateOp>())
    b.newState(forward, up.getName().str(), up.getName(), up.getDims(), fwd.getReverse(),
               b.bind(b.program().checkpoints, "ckpt", up.getName(), up.getDims(), false, false));
  for (auto up : bwd.getBodyBlock().getOps<scan::UpdateOp>())
    b.newState(adjoint, up.getName().str(), up.getName(), up.getDims(), bwd.getReverse(),
               b.bind(b.program().initial, "start", up.getName(), up.getDims(), false, false));
  Lowering lower(b, leafExprs(b, bwd, adjoint, &forward));
  size_t i = 0;
  for (auto up : fwd.getBodyBlock().getOps<scan::UpdateOp>()) {
    b.defineScan(forward.at(up.getName().str()), lower.expr(fwdUpdates[i].first), lower.expr(fwdUpdates[i].second));
    ++i;
  }
  i = 0;
  for (auto up : bwd.getBodyBlock().getOps<scan::UpdateOp>()) {
    b.defineScan(adjoint.at(up.getName().str()), lower.expr(bwdUpdates[i].first), lower.expr(bwdUpdates[i].second));
    ++i;
  }
  i = 0;
  for (auto out : bwd.getBodyBlock().getOps<scan::OutputOp>())
    b.addStepOutput(out.getName(), out.getDims(), isBf16(out.getStorage()), lower.expr(outputs[i++]));
  i = 0;
  for (auto acc : bwd.getBodyBlock().getOps<scan::AccumOp>())
    b.addAccum(acc.getName(), acc.getDims(), lower.expr(accums[i++]));
  for (auto up : bwd.getBodyBlock().getOps<scan::UpdateOp>()) b.addFinal(adjoint.at(up.getName().str()));
  b.finish();
  return std::move(b.program());
}

std::string ChunkProgram::loweredStatement() {
  char path[] = "/tmp/scanforge-stmt-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) throw std::runtime_error("cannot create a temporary file for the Halide statement");
  close(fd);
  pipeline.compile_to_lowered_stmt(path, pipeline.infer_arguments(), Halide::Text, target);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  return text.str();
}

}  // namespace scanforge::cpu
