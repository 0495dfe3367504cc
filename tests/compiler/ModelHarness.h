// Random inputs for any recurrence, derived from its forward IR: each port's shape follows its
// dims, with per-port value ranges where a model needs them (stable decays, positive scales).
#pragma once

#include <map>

#include "tests/compiler/CompilerTestUtil.h"

namespace scanforge::test {

struct Sizes {
  int64_t B, T;
  std::map<std::string, int64_t> dims;  // dimension name -> size
};

// Every model of models/, in each direction, with and without initial states: the cases each
// backend test runs.
struct ModelCase {
  std::string model;
  bool reverse;
  bool withInitial;
};

inline const std::vector<std::string> &allModels() {
  static const std::vector<std::string> models = {"mingru",   "minlstm",  "selective_ssm", "glu_rnn",
                                                  "linear_attention", "mingated", "lru"};
  return models;
}

inline std::vector<ModelCase> allModelCases() {
  std::vector<ModelCase> cases;
  for (const std::string &model : allModels())
    for (bool reverse : {false, true})
      for (bool withInitial : {false, true}) cases.push_back({model, reverse, withInitial});
  return cases;
}

inline std::string caseName(const ::testing::TestParamInfo<ModelCase> &info) {
  return info.param.model + (info.param.reverse ? "_reverse" : "_forward") + (info.param.withInitial ? "_h0" : "");
}

inline void PrintTo(const ModelCase &c, std::ostream *os) {
  *os << c.model << (c.reverse ? " reverse" : "") << (c.withInitial ? " h0" : "");
}

// The case's source: the model, reversed when the case asks.
inline std::string caseSource(const ModelCase &c) {
  std::string source = readModel(c.model);
  return c.reverse ? reversed(source) : source;
}

inline std::string describe(const Sizes &s) {
  std::string out = "B=" + std::to_string(s.B) + " T=" + std::to_string(s.T);
  for (auto &[d, n] : s.dims) out += " " + d + "=" + std::to_string(n);
  return out;
}

// Value ranges for ports that must stay in a sensible domain; everything else is in [-1, 1].
inline std::pair<double, double> rangeFor(const std::string &port) {
  static const std::map<std::string, std::pair<double, double>> ranges = {
      {"A", {-1.5, -0.2}},         // selective_ssm: decaying state
      {"lambda", {0.3, 0.99}},     // glu_rnn decay
      {"nu_log", {-1.0, 0.5}},     // lru
      {"gamma_log", {-1.0, 0.3}},  // lru
      {"scale", {0.5, 2.0}},       // tests: a divisor kept away from zero
  };
  auto it = ranges.find(port);
  return it == ranges.end() ? std::make_pair(-1.0, 1.0) : it->second;
}

inline std::vector<int64_t> shapeOf(mlir::ArrayAttr dims, const Sizes &sizes, std::vector<int64_t> lead) {
  for (mlir::Attribute d : dims) lead.push_back(sizes.dims.at(llvm::cast<mlir::StringAttr>(d).str()));
  return lead;
}

struct Problem {
  reference::RunInputs in;
  TensorMap outputWeights;  // dL/dy for each output
  TensorMap finalWeights;   // dL/ds_T for each state
};

// Random inputs, parameters and (optionally) initial states for `fwd`, and random loss weights.
inline Problem randomProblem(scan::RecurrenceOp fwd, const Sizes &sizes, bool withInitial, uint32_t seed) {
  Random rng(seed);
  Problem p;
  for (mlir::Operation &op : fwd.getBodyBlock()) {
    if (auto in = llvm::dyn_cast<scan::InputOp>(op)) {
      auto [lo, hi] = rangeFor(in.getName().str());
      p.in.inputs[in.getName().str()] = rng.tensor(shapeOf(in.getDims(), sizes, {sizes.B, sizes.T}), lo, hi);
    } else if (auto par = llvm::dyn_cast<scan::ParamOp>(op)) {
      auto [lo, hi] = rangeFor(par.getName().str());
      p.in.params[par.getName().str()] = rng.tensor(shapeOf(par.getDims(), sizes, {}), lo, hi);
    } else if (auto up = llvm::dyn_cast<scan::UpdateOp>(op)) {
      if (withInitial) p.in.initial[up.getName().str()] = rng.tensor(shapeOf(up.getDims(), sizes, {sizes.B}));
      p.finalWeights[up.getName().str()] = rng.tensor(shapeOf(up.getDims(), sizes, {sizes.B}));
    } else if (auto out = llvm::dyn_cast<scan::OutputOp>(op)) {
      p.outputWeights[out.getName().str()] = rng.tensor(shapeOf(out.getDims(), sizes, {sizes.B, sizes.T}));
    }
  }
  return p;
}

inline double dot(const Tensor &a, const Tensor &b) {
  double s = 0;
  for (size_t i = 0; i < a.data.size(); ++i) s += a.data[i] * b.data[i];
  return s;
}

// L = sum(w_y * y) + sum(w_s * s_T): every output and final state reaches the loss.
inline double loss(scan::RecurrenceOp fwd, const Problem &p, const reference::RunInputs &in) {
  reference::RunResult r = reference::run(fwd, in);
  double l = 0;
  for (auto &[name, w] : p.outputWeights) l += dot(w, r.outputs.at(name));
  for (auto &[name, w] : p.finalWeights) l += dot(w, r.finals.at(name));
  return l;
}

// The analytic gradients from the generated backward recurrence.
inline reference::Gradients backwardGradients(scan::RecurrenceOp fwd, scan::RecurrenceOp bwd, const Problem &p) {
  reference::RunResult f = reference::run(fwd, p.in, /*keepStates=*/true);
  return reference::runBackward(bwd, p.in, f, {p.outputWeights, p.finalWeights});
}

}  // namespace scanforge::test
