#include "compiler/mlir/Target/Reference/Interpreter.h"

#include <cmath>
#include <sstream>

#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"
#include "llvm/ADT/TypeSwitch.h"

namespace scanforge::reference {

Tensor::Tensor(std::vector<int64_t> s) : shape(std::move(s)), data(count(shape), 0.0) {}

size_t Tensor::count(const std::vector<int64_t> &shape) {
  size_t n = 1;
  for (int64_t s : shape) n *= static_cast<size_t>(s);
  return n;
}

namespace {

using scan::DimMask;
using mlir::Value;

std::string shapeText(const std::vector<int64_t> &shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  return os.str() + "]";
}

// A value at one step: dense over the dimensions in `mask`, in increasing dimension index
// (the last one fastest).
struct Field {
  DimMask mask = 0;
  std::vector<double> data;
};

double sigmoid(double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }
double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

class Interpreter {
 public:
  Interpreter(scan::RecurrenceOp rec, const RunInputs &in) : rec_(rec), in_(in), dims_(rec) {}

  RunResult run(bool keepStates) {
    if (mlir::failed(scan::DimAnalysis::compute(rec_))) throw std::logic_error("the recurrence does not verify");
    bindSizes();
    allocateResults(keepStates);
    for (int64_t b = 0; b < batch_; ++b) {
      initStates(b);
      for (int64_t i = 0; i < steps_; ++i) {
        int64_t t = rec_.getReverse() ? steps_ - 1 - i : i;
        step(b, t, keepStates);
      }
      for (auto &[name, field] : states_) writeLayout(result_.finals[name], b * count(stateLayout_[name]), field,
                                                      stateLayout_[name]);
    }
    return std::move(result_);
  }

 private:
  // ---- sizes ----
  void bindSizes() {
    sizes_.assign(dims_.size(), -1);
    for (mlir::Operation &op : rec_.getBodyBlock()) {
      if (auto in = llvm::dyn_cast<scan::InputOp>(op)) bindTensor(in.getName(), in.getDims(), require(in_.inputs, in.getName(), "input"), 2);
      if (auto p = llvm::dyn_cast<scan::ParamOp>(op)) bindTensor(p.getName(), p.getDims(), require(in_.params, p.getName(), "parameter"), 0);
    }
    for (size_t d = 0; d < sizes_.size(); ++d)
      if (sizes_[d] < 0)
        throw ShapeError("dimension '" + dims_.name(static_cast<int>(d)).str() + "' of recurrence '" +
                         rec_.getSymName().str() + "' is not the dimension of any input or parameter");
    if (batch_ < 0) throw ShapeError("recurrence '" + rec_.getSymName().str() + "' has no inputs, so B and T are unknown");
  }

  static const Tensor &require(const TensorMap &map, llvm::StringRef name, const char *kind) {
    auto it = map.find(name.str());
    if (it == map.end()) throw ShapeError(std::string("missing ") + kind + " '" + name.str() + "'");
    return it->second;
  }

  void bindTensor(llvm::StringRef name, mlir::ArrayAttr dims, const Tensor &t, size_t lead) {
    llvm::SmallVector<int> order = scan::layoutOrder(dims_, dims);
    if (t.shape.size() != lead + order.size())
      throw ShapeError("'" + name.str() + "' has shape " + shapeText(t.shape) + " but needs " +
                       std::to_string(lead + order.size()) + " dimensions");
    if (lead == 2) {
      bindSize(batch_, t.shape[0], "B", name);
      bindSize(steps_, t.shape[1], "T", name);
    }
    for (size_t i = 0; i < order.size(); ++i) bindSize(sizes_[order[i]], t.shape[lead + i], dims_.name(order[i]).str(), name);
  }

  static void bindSize(int64_t &slot, int64_t size, const std::string &dim, llvm::StringRef tensor) {
    if (size <= 0) throw ShapeError("'" + tensor.str() + "' has size " + std::to_string(size) + " in dimension " + dim);
    if (slot >= 0 && slot != size)
      throw ShapeError("'" + tensor.str() + "' has " + dim + " = " + std::to_string(size) + ", but another tensor has " +
                       dim + " = " + std::to_string(slot));
    slot = size;
  }

  size_t count(llvm::ArrayRef<int> order) const {
    size_t n = 1;
    for (int d : order) n *= static_cast<size_t>(sizes_[d]);
    return n;
  }
  size_t count(DimMask mask) const {
    size_t n = 1;
    for (size_t d = 0; d < sizes_.size(); ++d)
      if (mask & (1u << d)) n *= static_cast<size_t>(sizes_[d]);
    return n;
  }
  std::vector<int64_t> shapeOf(llvm::ArrayRef<int> order, std::vector<int64_t> lead) const {
    for (int d : order) lead.push_back(sizes_[d]);
    return lead;
  }

  void allocateResults(bool keepStates) {
    for (mlir::Operation &op : rec_.getBodyBlock()) {
      if (auto out = llvm::dyn_cast<scan::OutputOp>(op))
        result_.outputs[out.getName().str()] = Tensor(shapeOf(scan::layoutOrder(dims_, out.getDims()), {batch_, steps_}));
      if (auto acc = llvm::dyn_cast<scan::AccumOp>(op))
        result_.accums[acc.getName().str()] = Tensor(shapeOf(scan::layoutOrder(dims_, acc.getDims()), {}));
      if (auto prev = llvm::dyn_cast<scan::PrevOp>(op)) declareState(prev.getName(), prev.getDims(), keepStates);
      if (llvm::isa<scan::NextOp, scan::UpdateOp>(op)) {
        auto state = llvm::cast<scan::PortOpInterface>(op);
        declareState(state.getName(), state.getDims(), keepStates);
      }
      if (auto saved = llvm::dyn_cast<scan::SavedOp>(op)) {
        auto order = scan::layoutOrder(dims_, saved.getDims());
        checkShape(require(in_.saved, saved.getName(), "saved forward state"), shapeOf(order, {batch_, steps_}),
                   saved.getName());
        auto init = in_.savedInitial.find(saved.getName().str());
        if (init != in_.savedInitial.end()) checkShape(init->second, shapeOf(order, {batch_}), saved.getName());
      }
    }
    for (auto &[name, tensor] : in_.initial)
      if (!stateLayout_.count(name)) throw ShapeError("initial value given for '" + name + "', which is not a state");
  }

  void declareState(llvm::StringRef name, mlir::ArrayAttr dims, bool keepStates) {
    if (stateLayout_.count(name.str())) return;
    auto order = scan::layoutOrder(dims_, dims);
    stateLayout_[name.str()] = order;
    stateMask_[name.str()] = dims_.mask(dims).value_or(0);
    result_.finals[name.str()] = Tensor(shapeOf(order, {batch_}));
    if (keepStates) result_.states[name.str()] = Tensor(shapeOf(order, {batch_, steps_}));
    auto init = in_.initial.find(name.str());
    if (init != in_.initial.end()) checkShape(init->second, shapeOf(order, {batch_}), name);
  }

  static void checkShape(const Tensor &t, const std::vector<int64_t> &want, llvm::StringRef name) {
    if (t.shape != want)
      throw ShapeError("'" + name.str() + "' has shape " + shapeText(t.shape) + " but needs " + shapeText(want));
  }

  // ---- layouts: a tensor slice in declared dimension order <-> a field in canonical order ----
  Field readLayout(const Tensor &t, size_t base, llvm::ArrayRef<int> order) const {
    Field f;
    for (int d : order) f.mask |= 1u << d;
    f.data.resize(count(f.mask));
    forEachIndex(f.mask, [&](const std::vector<int64_t> &idx, size_t fieldOffset) {
      f.data[fieldOffset] = t.data[base + layoutOffset(idx, order)];
    });
    return f;
  }

  void writeLayout(Tensor &t, size_t base, const Field &value, llvm::ArrayRef<int> order, bool add = false) const {
    DimMask mask = 0;
    for (int d : order) mask |= 1u << d;
    Field wide = broadcast(value, mask);
    forEachIndex(mask, [&](const std::vector<int64_t> &idx, size_t fieldOffset) {
      double &slot = t.data[base + layoutOffset(idx, order)];
      slot = add ? slot + wide.data[fieldOffset] : wide.data[fieldOffset];
    });
  }

  size_t layoutOffset(const std::vector<int64_t> &idx, llvm::ArrayRef<int> order) const {
    size_t off = 0;
    for (int d : order) off = off * sizes_[d] + idx[d];
    return off;
  }

  // Calls f(index per dimension, offset in a field of `mask`) for every element, last dim fastest.
  template <typename F>
  void forEachIndex(DimMask mask, F &&f) const {
    std::vector<int64_t> idx(sizes_.size(), 0);
    std::vector<int> dims;
    for (size_t d = 0; d < sizes_.size(); ++d)
      if (mask & (1u << d)) dims.push_back(static_cast<int>(d));
    size_t total = count(mask);
    for (size_t off = 0; off < total; ++off) {
      f(idx, off);
      for (int k = static_cast<int>(dims.size()) - 1; k >= 0; --k) {
        if (++idx[dims[k]] < sizes_[dims[k]]) break;
        idx[dims[k]] = 0;
      }
    }
  }

  size_t fieldOffset(const Field &f, const std::vector<int64_t> &idx) const {
    size_t off = 0;
    for (size_t d = 0; d < sizes_.size(); ++d)
      if (f.mask & (1u << d)) off = off * sizes_[d] + idx[d];
    return off;
  }

  Field broadcast(const Field &f, DimMask mask) const {
    if (f.mask == mask) return f;
    Field out{mask, std::vector<double>(count(mask))};
    forEachIndex(mask, [&](const std::vector<int64_t> &idx, size_t off) { out.data[off] = f.data[fieldOffset(f, idx)]; });
    return out;
  }

  template <typename F>
  Field map(llvm::ArrayRef<const Field *> args, F &&f) const {
    DimMask mask = 0;
    for (const Field *a : args) mask |= a->mask;
    Field out{mask, std::vector<double>(count(mask))};
    double vals[3] = {0, 0, 0};
    forEachIndex(mask, [&](const std::vector<int64_t> &idx, size_t off) {
      for (size_t i = 0; i < args.size(); ++i) vals[i] = args[i]->data[fieldOffset(*args[i], idx)];
      out.data[off] = f(vals);
    });
    return out;
  }

  // ---- execution ----
  void initStates(int64_t b) {
    states_.clear();
    for (auto &[name, order] : stateLayout_) {
      auto init = in_.initial.find(name);
      states_[name] = init != in_.initial.end() ? readLayout(init->second, b * count(order), order)
                                                : Field{stateMask_[name], std::vector<double>(count(stateMask_[name]), 0.0)};
    }
  }

  const Field &get(Value v) const { return values_.at(v.getAsOpaquePointer()); }
  void set(Value v, Field f) { values_[v.getAsOpaquePointer()] = std::move(f); }

  void step(int64_t b, int64_t t, bool keepStates) {
    values_.clear();
    for (mlir::Operation &op : rec_.getBodyBlock()) execute(op, b, t);
    for (auto &[name, field] : states_)
      if (keepStates)
        writeLayout(result_.states[name], (b * steps_ + t) * count(stateLayout_[name]), field, stateLayout_[name]);
  }

  void execute(mlir::Operation &op, int64_t b, int64_t t) {
    using namespace mlir;
    auto unary = [&](auto f) { set(op.getResult(0), map({&get(op.getOperand(0))}, [&](double *v) { return f(v[0]); })); };
    auto binary = [&](auto f) {
      set(op.getResult(0), map({&get(op.getOperand(0)), &get(op.getOperand(1))}, [&](double *v) { return f(v[0], v[1]); }));
    };
    llvm::TypeSwitch<Operation *>(&op)
        .Case<scan::InputOp>([&](auto in) {
          auto order = scan::layoutOrder(dims_, in.getDims());
          set(in.getResult(), readLayout(in_.inputs.at(in.getName().str()), (b * steps_ + t) * count(order), order));
        })
        .Case<scan::ParamOp>([&](auto p) {
          set(p.getResult(), readLayout(in_.params.at(p.getName().str()), 0, scan::layoutOrder(dims_, p.getDims())));
        })
        .Case<scan::PrevOp>([&](auto prev) { set(prev.getResult(), states_.at(prev.getName().str())); })
        .Case<scan::SavedOp>([&](auto saved) { set(saved.getResult(), savedBefore(saved, b, t)); })
        .Case<scan::NextOp>([&](auto next) {
          Field f = broadcast(get(next.getValue()), stateMask_[next.getName().str()]);
          states_[next.getName().str()] = f;
          set(next.getResult(), std::move(f));
        })
        .Case<scan::UpdateOp>([&](auto up) {
          const Field &prev = states_.at(up.getName().str());
          Field f = broadcast(map({&get(up.getA()), &prev, &get(up.getB())}, [](double *v) { return v[0] * v[1] + v[2]; }),
                              stateMask_[up.getName().str()]);
          states_[up.getName().str()] = f;
          set(up.getResult(), std::move(f));
        })
        .Case<scan::OutputOp>([&](auto out) {
          auto order = scan::layoutOrder(dims_, out.getDims());
          writeLayout(result_.outputs[out.getName().str()], (b * steps_ + t) * count(order), get(out.getValue()), order);
        })
        .Case<scan::AccumOp>([&](auto acc) {
          writeLayout(result_.accums[acc.getName().str()], 0, get(acc.getValue()), scan::layoutOrder(dims_, acc.getDims()),
                      /*add=*/true);
        })
        .Case<scan::SumOp>([&](auto sum) {
          const Field &x = get(sum.getOperand());
          int dim = dims_.index(sum.getDim());
          Field out{x.mask & ~(1u << dim), {}};
          out.data.assign(count(out.mask), 0.0);
          forEachIndex(x.mask, [&](const std::vector<int64_t> &idx, size_t off) {
            out.data[fieldOffset(out, idx)] += x.data[off];
          });
          set(sum.getResult(), std::move(out));
        })
        .Case<arith::ConstantOp>([&](auto c) {
          double v = 0;
          if (auto f = llvm::dyn_cast<FloatAttr>(c.getValue())) v = f.getValueAsDouble();
          else if (auto i = llvm::dyn_cast<IntegerAttr>(c.getValue())) v = i.getValue().getBoolValue() ? 1.0 : 0.0;
          else throw std::logic_error("unsupported constant in the reference interpreter");
          set(c.getResult(), Field{0, {v}});
        })
        .Case<arith::AddFOp>([&](auto) { binary([](double x, double y) { return x + y; }); })
        .Case<arith::SubFOp>([&](auto) { binary([](double x, double y) { return x - y; }); })
        .Case<arith::MulFOp>([&](auto) { binary([](double x, double y) { return x * y; }); })
        .Case<arith::DivFOp>([&](auto) { binary([](double x, double y) { return x / y; }); })
        .Case<arith::MaximumFOp>([&](auto) { binary([](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); }); })
        .Case<arith::MinimumFOp>([&](auto) { binary([](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y); }); })
        .Case<arith::NegFOp>([&](auto) { unary([](double x) { return -x; }); })
        .Case<arith::AndIOp>([&](auto) { binary([](double x, double y) { return (x != 0 && y != 0) ? 1.0 : 0.0; }); })
        .Case<arith::OrIOp>([&](auto) { binary([](double x, double y) { return (x != 0 || y != 0) ? 1.0 : 0.0; }); })
        .Case<arith::XOrIOp>([&](auto) { binary([](double x, double y) { return ((x != 0) != (y != 0)) ? 1.0 : 0.0; }); })
        .Case<arith::CmpFOp>([&](arith::CmpFOp cmp) {
          arith::CmpFPredicate pred = cmp.getPredicate();
          binary([pred](double x, double y) { return compare(pred, x, y) ? 1.0 : 0.0; });
        })
        .Case<arith::SelectOp>([&](auto) {
          set(op.getResult(0), map({&get(op.getOperand(0)), &get(op.getOperand(1)), &get(op.getOperand(2))},
                                   [](double *v) { return v[0] != 0 ? v[1] : v[2]; }));
        })
        .Case<math::ExpOp>([&](auto) { unary([](double x) { return std::exp(x); }); })
        .Case<math::LogOp>([&](auto) { unary([](double x) { return std::log(x); }); })
        .Case<math::TanhOp>([&](auto) { unary([](double x) { return std::tanh(x); }); })
        .Case<math::SqrtOp>([&](auto) { unary([](double x) { return std::sqrt(x); }); })
        .Case<math::AbsFOp>([&](auto) { unary([](double x) { return std::fabs(x); }); })
        .Case<scan::SigmoidOp>([&](auto) { unary(sigmoid); })
        .Case<scan::SoftplusOp>([&](auto) { unary(softplus); })
        .Case<scan::GOp>([&](auto) { unary([](double x) { return x >= 0 ? x + 0.5 : sigmoid(x); }); })
        .Default([&](Operation *other) {
          throw std::logic_error("the reference interpreter does not know '" + other->getName().getStringRef().str() + "'");
        });
  }

  static bool compare(mlir::arith::CmpFPredicate pred, double x, double y) {
    using P = mlir::arith::CmpFPredicate;
    bool unordered = std::isnan(x) || std::isnan(y);
    switch (pred) {
      case P::OEQ: return !unordered && x == y;
      case P::ONE: return !unordered && x != y;
      case P::OLT: return !unordered && x < y;
      case P::OLE: return !unordered && x <= y;
      case P::OGT: return !unordered && x > y;
      case P::OGE: return !unordered && x >= y;
      case P::UEQ: return unordered || x == y;
      case P::UNE: return unordered || x != y;
      case P::ULT: return unordered || x < y;
      case P::ULE: return unordered || x <= y;
      case P::UGT: return unordered || x > y;
      case P::UGE: return unordered || x >= y;
      case P::ORD: return !unordered;
      case P::UNO: return unordered;
      case P::AlwaysTrue: return true;
      case P::AlwaysFalse: return false;
    }
    return false;
  }

  // The forward state before the forward step that corresponds to backward step t.
  Field savedBefore(scan::SavedOp saved, int64_t b, int64_t t) {
    auto order = scan::layoutOrder(dims_, saved.getDims());
    bool forwardRan = rec_.getReverse();  // the backward of a forward scan runs reversed
    int64_t prev = forwardRan ? t - 1 : t + 1;
    if (prev >= 0 && prev < steps_)
      return readLayout(in_.saved.at(saved.getName().str()), (b * steps_ + prev) * count(order), order);
    auto init = in_.savedInitial.find(saved.getName().str());
    if (init != in_.savedInitial.end()) return readLayout(init->second, b * count(order), order);
    DimMask mask = dims_.mask(saved.getDims()).value_or(0);
    return Field{mask, std::vector<double>(count(mask), 0.0)};
  }

  scan::RecurrenceOp rec_;
  const RunInputs &in_;
  scan::DimTable dims_;
  std::vector<int64_t> sizes_;
  int64_t batch_ = -1, steps_ = -1;
  std::map<std::string, llvm::SmallVector<int>> stateLayout_;
  std::map<std::string, DimMask> stateMask_;
  std::map<std::string, Field> states_;
  std::map<const void *, Field> values_;
  RunResult result_;
};

}  // namespace

RunResult run(scan::RecurrenceOp rec, const RunInputs &in, bool keepStates) { return Interpreter(rec, in).run(keepStates); }

}  // namespace scanforge::reference
