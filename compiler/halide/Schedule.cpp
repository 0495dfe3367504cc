#include "compiler/halide/Schedule.h"

#include <cpuid.h>

#include <algorithm>

namespace scanforge::cpu {

using Halide::Expr;
using Halide::Func;
using Halide::ImageParam;
using Halide::Var;
using scan::DimMask;

namespace {

DimMask maskOf(const std::vector<int> &dims) {
  DimMask m = 0;
  for (int d : dims) m |= 1u << d;
  return m;
}

std::vector<int> layoutOf(const scan::Port &port) { return std::vector<int>(port.layout.begin(), port.layout.end()); }

}  // namespace

std::string sanitize(llvm::StringRef name) {
  std::string out;
  for (char c : name) out += c == '_' ? "__" : c == '.' ? "_d" : std::string(1, c);
  return out;
}

static Halide::Target hostTarget();

Schedule::Schedule(const scan::Ports &forward, scan::RecurrenceOp rec) : table_(rec), t_("t") {
  for (size_t d = 0; d < table_.size(); ++d) {
    program_.dimNames.push_back(table_.name(static_cast<int>(d)).str());
    vars_.push_back(Var("v_" + table_.name(static_cast<int>(d)).str()));
  }
  // Vector dimension preference: the dimensions of the forward outputs first (they are the
  // channels the per-step inputs and outputs are laid out along), then the rest.
  for (const scan::Port &out : forward.outputs())
    for (int d : out.layout)
      if (std::find(vectorOrder_.begin(), vectorOrder_.end(), d) == vectorOrder_.end()) vectorOrder_.push_back(d);
  for (int d = 0; d < static_cast<int>(table_.size()); ++d)
    if (std::find(vectorOrder_.begin(), vectorOrder_.end(), d) == vectorOrder_.end()) vectorOrder_.push_back(d);
  program_.target = hostTarget();
}

// Halide 14 marks any host with AVX512-BF16 and VNNI (AMD Zen 4 too) as Sapphire Rapids, and LLVM
// then emits AVX512-FP16 instructions (vmovw for bf16 ports) that such a host lacks: SIGILL.
// Keep the feature only where CPUID says AVX512-FP16 exists (leaf 7, EDX bit 23). Found by scan-fuzz.
static Halide::Target hostTarget() {
  Halide::Target target = Halide::get_jit_target_from_environment().with_feature(Halide::Target::NoAsserts);
  unsigned a = 0, b = 0, c = 0, d = 0;
  bool fp16 = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d & (1u << 23));
  if (!fp16 && target.has_feature(Halide::Target::AVX512_SapphireRapids))
    target = target.without_feature(Halide::Target::AVX512_SapphireRapids);
  return target;
}

// ---- ports ----

BoundInput &Schedule::bind(std::vector<BoundInput> &list, const std::string &role, const scan::Port &port,
                           bool perStep) {
  for (BoundInput &b : list)
    if (b.layout.name == port.name) return b;
  PortLayout layout{port.name, layoutOf(port), port.bf16, perStep};
  int rank = static_cast<int>(layout.dims.size()) + (perStep ? 1 : 0);
  ImageParam param(port.bf16 ? Halide::BFloat(16) : Halide::Float(32), rank, role + "_" + sanitize(port.name));
  if (rank > 0) param.dim(0).set_stride(1);  // dense innermost dimension: vector loads
  list.push_back({layout, param});
  BoundInput &bound = list.back();
  for (size_t i = 0; i < layout.dims.size(); ++i)
    extents_.emplace(layout.dims[i], bound.param.dim(static_cast<int>(layout.dims.size() - 1 - i)).extent());
  if (perStep && !steps_.defined()) steps_ = bound.param.dim(rank - 1).extent();
  return bound;
}

Expr Schedule::load(const BoundInput &in) {
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

std::vector<int> Schedule::dimsOf(DimMask mask) const {
  std::vector<int> dims;
  for (int d = 0; d < static_cast<int>(table_.size()); ++d)
    if (mask & (1u << d)) dims.push_back(d);
  return dims;
}

std::vector<Expr> Schedule::args(const std::vector<int> &dims) const {
  std::vector<Expr> out;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) out.push_back(vars_[*it]);
  return out;
}

std::vector<Expr> Schedule::args(const std::vector<int> &dims, Expr t) const {
  std::vector<Expr> out = args(dims);
  out.push_back(t);
  return out;
}

std::vector<Var> Schedule::pureVars(const std::vector<int> &dims) const {
  std::vector<Var> out;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) out.push_back(vars_[*it]);
  return out;
}

int Schedule::vectorDim(DimMask mask) const {
  for (int d : vectorOrder_)
    if (mask & (1u << d)) return d;
  return -1;
}

Expr Schedule::steps() const {
  if (!steps_.defined()) throw std::logic_error("a recurrence without per-step inputs cannot be lowered");
  return steps_;
}

void Schedule::vectorizeStage(Halide::Stage stage, int vectorDim) const {
  if (vectorDim >= 0) stage.vectorize(vars_[vectorDim], kLanesPerIteration, Halide::TailStrategy::GuardWithIf);
}

void Schedule::storeVectorFirst(Func f, const std::vector<int> &dims, bool perStep) const {
  int vec = vectorDim(maskOf(dims));
  if (vec < 0 || dims.size() < 2) return;
  std::vector<Var> order = {vars_[vec]};
  for (const Var &v : pureVars(dims))
    if (v.name() != vars_[vec].name()) order.push_back(v);
  if (perStep) order.push_back(t_);
  f.reorder_storage(order);
}

void Schedule::reorderLoops(Halide::Stage stage, const std::vector<int> &dims, std::optional<Halide::RVar> outer) const {
  int vec = vectorDim(maskOf(dims));
  std::vector<Halide::VarOrRVar> order;
  if (vec >= 0) order.push_back(vars_[vec]);
  for (const Var &v : pureVars(dims))
    if (vec < 0 || v.name() != vars_[vec].name()) order.push_back(v);
  if (outer) order.push_back(*outer);
  if (order.size() > 1) stage.reorder(order);
}

// ---- states ----

Expr Schedule::element(const Func &f, const std::vector<Expr> &args, int i) {
  Halide::FuncRef ref = f(args);
  return f.outputs() > 1 ? Expr(ref[i]) : Expr(ref);
}

// s.values, not s.func.outputs(): a scan may be read before it is defined.
Expr Schedule::value(const StateScan &s, Expr t) const {
  Halide::FuncRef ref = s.func(args(s.dims, t));
  return s.values > 1 ? Expr(ref[0]) : Expr(ref);
}

Expr Schedule::before(const StateScan &s, Expr t) const {
  if (!s.output) return value(s, previous(s, t));
  // No slot before the first step: the start value there, and an index Halide's bounds keep inside.
  Expr inside = s.reverse ? Halide::min(previous(s, t), steps() - 1) : Halide::max(previous(s, t), 0);
  return Halide::select(t == firstStep(s), s.start(args(s.dims)), value(s, inside));
}
Expr Schedule::after(const StateScan &s, Expr t) const { return value(s, t); }
Expr Schedule::carried(const StateScan &s, int index, Expr t) const { return s.func(args(s.dims, t))[index]; }

StateScan &Schedule::newState(std::map<std::string, StateScan> &states, const scan::Port &state, bool reverse,
                              BoundInput &start, const std::string &intoOutput) {
  StateScan &s = states[state.name];
  s.name = state.name;
  s.dims = layoutOf(state);
  s.reverse = reverse;
  s.output = !intoOutput.empty();
  s.func = Func(s.output ? "out_" + sanitize(intoOutput) : "scan_" + sanitize(state.name));
  s.start = start.param;
  return s;
}

bool Schedule::canScanInto(const scan::Port &state, const scan::Port &out) const {
  std::vector<int> dims = layoutOf(state);
  return !out.bf16 && layoutOf(out) == dims && (dims.empty() || vectorDim(maskOf(dims)) == dims.back());
}

void Schedule::defineScan(StateScan &s, Expr a, Expr b, const std::vector<Func> &carried) {
  int carriedValues = 0;
  for (const Func &c : carried) carriedValues += c.outputs();
  if (carriedValues != s.values - 1 || (s.output && !carried.empty()))
    throw std::logic_error("state '" + s.name + "': carried values do not match its scan");
  std::string base = sanitize(s.name);
  std::vector<Var> pure = pureVars(s.dims);
  std::vector<Var> withT = pure;
  withT.push_back(t_);
  Func A("a_" + base), B("b_" + base);
  A(withT) = a;
  B(withT) = b;
  if (s.values > 1)
    s.func(withT) = Halide::Tuple(std::vector<Expr>(s.values, Halide::undef<float>()));
  else
    s.func(withT) = Halide::undef<float>();
  std::vector<Expr> at(pure.begin(), pure.end());
  int vec = vectorDim(maskOf(s.dims));
  if (s.output) {  // the first step from the start value, then the others from their predecessor
    at.push_back(firstStep(s));
    s.func(at) = A(at) * s.start(args(s.dims)) + B(at);
    if (s.reverse && vec >= 0) {
      vectorizeStage(s.func.update(0), vec);
      defineDownwards(s, A, B);
      return;
    }
    Halide::RDom r(1, steps() - 1, "r_" + base);
    Expr tr = s.reverse ? steps() - 1 - r.x : Expr(r.x);
    at.back() = previous(s, tr);
    Expr prev = s.func(at);
    at.back() = tr;
    s.func(at) = A(at) * prev + B(at);
    vectorizeStage(s.func.update(0), vec);
    reorderLoops(s.func.update(1), s.dims, r.x);
    vectorizeStage(s.func.update(1), vec);
    return;
  }
  // The slot before the first step holds the start value and nothing else; step t holds the
  // state and the carried values of t.
  auto define = [&](Expr state, std::vector<Expr> more) {
    if (more.empty()) {
      s.func(at) = state;
    } else {
      more.insert(more.begin(), state);
      s.func(at) = Halide::Tuple(more);
    }
  };
  at.push_back(startIndex(s));
  define(s.start(args(s.dims)), std::vector<Expr>(carriedValues, Halide::undef<float>()));
  if (s.reverse && carried.empty() && vec >= 0) {
    defineDownwards(s, A, B);
    s.func.compute_root();
    storeVectorFirst(s.func, s.dims, true);
    vectorizeStage(s.func.update(0), vec);
    return;
  }
  Halide::RDom r(0, steps(), "r_" + base);
  Expr tr = s.reverse ? steps() - 1 - r.x : Expr(r.x);
  at.back() = tr;
  std::vector<Expr> carriedAt;
  for (Func c : carried)
    for (int i = 0; i < c.outputs(); ++i) carriedAt.push_back(element(c, at, i));
  define(A(at) * before(s, tr) + B(at), carriedAt);
  s.func.compute_root();
  storeVectorFirst(s.func, s.dims, true);
  vectorizeStage(s.func.update(0), vec);
  reorderLoops(s.func.update(1), s.dims, r.x);
  vectorizeStage(s.func.update(1), vec);
  for (Func c : carried) {
    if (vec < 0) {
      c.compute_at(s.func, r.x);
    } else {
      c.compute_at(s.func, vars_[vec]);
      vectorizeStage(c, vec);
    }
  }
}

// A reverse scan that carries nothing walks its steps' values from the top down as it walks the
// steps down: the update's indices run over an RDom from each dimension's last element (the vector
// dimension innermost, in vectors of kLanesPerIteration loaded dense and reversed). Halide loops
// over pure dimensions upwards only, and rows read upwards while the rows go down stream from
// memory at a third of the rate of one order throughout (docs/cpu.md, "Reverse scans"). Carried
// values computed per block of such a walk made the LRU's backward 9-10 % slower, so scans that
// carry keep the ascending loops. Vectorising the RVar needs allow_race_conditions(): the lanes of a
// vector write distinct indices of step t and read only step t + 1, so there is no race for
// Halide to guard against.
void Schedule::defineDownwards(StateScan &s, Func A, Func B) {
  int vec = vectorDim(maskOf(s.dims));
  // Every step, or every one but the first, which a scan into an output peels off.
  Expr count = s.output ? steps() - 1 : steps();
  // RDom dimensions: the vector one innermost, then the others, then time, each from its top.
  std::vector<int> order = {vec};
  for (int d : s.dims)
    if (d != vec) order.push_back(d);
  std::vector<Halide::Range> ranges;
  for (int d : order) ranges.push_back({0, extent(d)});
  ranges.push_back({0, count});
  Halide::RDom r(ranges, "r_" + sanitize(s.name));
  std::map<int, Expr> index;
  for (size_t k = 0; k < order.size(); ++k) index[order[k]] = extent(order[k]) - 1 - r[static_cast<int>(k)];
  Expr tr = count - 1 - r[static_cast<int>(order.size())];
  std::vector<Expr> at, prev;
  for (auto it = s.dims.rbegin(); it != s.dims.rend(); ++it) at.push_back(index.at(*it));
  prev = at;
  at.push_back(tr);
  prev.push_back(previous(s, tr));
  s.func(at) = A(at) * element(s.func, prev, 0) + B(at);
  Halide::RVar blocks("blocks"), lanes("lanes");
  s.func.update(1)
      .allow_race_conditions()
      .split(r[0], blocks, lanes, kLanesPerIteration, Halide::TailStrategy::GuardWithIf)
      .vectorize(lanes);
}

// ---- results ----

void Schedule::addStepOutput(const scan::Port &out, Expr value, DimMask partialOver) {
  PortLayout layout{out.name, layoutOf(out), out.bf16, true};
  Func f("out_" + sanitize(out.name));
  std::vector<Var> lhs = pureVars(layout.dims);
  lhs.push_back(t_);
  f(lhs) = out.bf16 ? Halide::cast(Halide::BFloat(16), value) : value;
  if (!layout.dims.empty()) f.vectorize(lhs.front(), kLanesPerIteration, Halide::TailStrategy::GuardWithIf);
  program_.outputs.push_back({layout, f, partialOver});
  // Per-step outputs over the same dimensions share one loop nest: what they read in common (a
  // backward's adjoint, gates, inputs, output gradients) is loaded once per step, not per output.
  auto [first, fresh] = stepOutputLoops_.emplace(layout.dims, f);
  if (!fresh) f.compute_with(first->second, lhs.front());
}

void Schedule::addStateOutput(const scan::Port &out, const StateScan &s, DimMask partialOver) {
  program_.outputs.push_back({PortLayout{out.name, layoutOf(out), false, true}, s.func, partialOver});
}

void Schedule::addFinal(const StateScan &s) {
  Func f("final_" + sanitize(s.name));
  std::vector<Var> lhs = pureVars(s.dims);
  f(lhs) = value(s, s.reverse ? Expr(0) : steps() - 1);
  // Along the scan's vector dimension, which its storage holds contiguous: where the state's
  // layout has another dimension innermost (the selective SSM's s[d, n]), the loads stay whole
  // vectors and the stores take the stride, instead of gathering a short innermost dimension (n =
  // 16 of 32 lanes: every vector a predicated tail, scalarised, at every chunk).
  reorderLoops(f, s.dims, std::nullopt);
  vectorizeStage(f, vectorDim(maskOf(s.dims)));
  program_.finals.push_back({PortLayout{s.name, s.dims, false, false}, f});
}

void Schedule::addAccum(const scan::Port &gradient, Expr value) {
  PortLayout layout{gradient.name, layoutOf(gradient), false, false};
  std::string base = sanitize(gradient.name);
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
  reorderLoops(out, layout.dims, std::nullopt);  // along acc's contiguous dimension, as addFinal
  vectorizeStage(out, vec);
  program_.accums.push_back({layout, out});
}

void Schedule::finish() {
  std::vector<Func> all;
  for (auto *list : {&program_.outputs, &program_.finals, &program_.accums})
    for (ProducedOutput &o : *list) all.push_back(o.func);
  program_.pipeline = Halide::Pipeline(all);
}

}  // namespace scanforge::cpu
