#include "models/layers/RecurrentLayer.h"

#include <numeric>

#include "models/layers/Init.h"
#include "runtime/core/Error.h"
#include "runtime/core/Ops.h"

namespace scanforge::models {
namespace {

Shape dimsOf(const Port &port, const std::map<std::string, int64_t> &sizes) {
  Shape shape;
  for (const std::string &d : port.dims) shape.push_back(sizes.at(d));
  return shape;
}

int64_t count(const Shape &shape) { return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>()); }

}  // namespace

RecurrentLayer::RecurrentLayer(const ScanOp &scan, const config::ModelConfig &config, bool gateBiases, Generator &gen)
    : scan_(scan) {
  const Signature &sig = scan_.signature();
  for (const auto *ports : {&sig.inputs, &sig.params, &sig.states, &sig.outputs})
    for (const Port &p : *ports)
      for (const std::string &d : p.dims) {
        if (d == "d") sizes_[d] = config.expansion * config.embed;
        else if (config.dims.count(d)) sizes_[d] = config.dims.at(d);
        else
          throw RuntimeError("recurrence '" + sig.name + "'", "dimension '" + d +
                             "' has no size; set model.dims." + d + " in the configuration");
      }
  int64_t total = 0;
  for (const Port &p : sig.inputs) {
    if (p.type != ElemType::F32)
      throw RuntimeError("recurrence '" + sig.name + "'", "input '" + p.name + "' is bf16; the CPU trainer uses f32 ports");
    inputShapes_.push_back(dimsOf(p, sizes_));
    inputSizes_.push_back(count(inputShapes_.back()));
    total += inputSizes_.back();
  }
  int64_t outputs = 0;
  for (const Port &p : sig.outputs) outputs += count(dimsOf(p, sizes_));
  in_ = LinearLayer(config.embed, total, true, gen);
  if (config.outputGating > 0) {
    gateM_ = LinearLayer(outputs, config.outputGating, true, gen);
    gateX_ = LinearLayer(outputs, config.outputGating, true, gen);
  }
  out_ = LinearLayer(gateM_ ? config.outputGating : outputs, config.embed, true, gen);

  // Gate biases: the in-projection's bias rows that feed the named input port.
  int64_t offset = 0;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    auto spec = config.gateBias.find(sig.inputs[i].name);
    if (gateBiases && spec != config.gateBias.end())
      initGateBias(in_.bias().value().slice(0, offset, inputSizes_[i]), spec->second, config.embed,
                   "model.gate_bias." + sig.inputs[i].name, gen);
    offset += inputSizes_[i];
  }
  for (const auto &[port, spec] : config.gateBias) {
    bool known = std::any_of(sig.inputs.begin(), sig.inputs.end(), [&](const Port &p) { return p.name == port; });
    if (!known) throw RuntimeError("model.gate_bias." + port, "'" + sig.name + "' has no input named '" + port + "'");
  }
  // The recurrence's own parameters, in signature order (lru_gamma reads nu_log, initialised first).
  std::map<std::string, Tensor> done;
  for (const Port &p : sig.params) {
    Tensor value = Tensor::empty(dimsOf(p, sizes_), DType::F32);
    auto spec = config.params.find(p.name);
    config::InitSpec init = spec != config.params.end() ? spec->second : defaultParameterInit(p.name);
    const Tensor *related = done.count("nu_log") ? &done.at("nu_log") : nullptr;
    initParameter(value, init, "model.params." + p.name, gen, related);
    done[p.name] = value;
    params_.push_back(Variable(value, true));
  }
  for (const auto &[name, spec] : config.params) {
    bool known = std::any_of(sig.params.begin(), sig.params.end(), [&](const Port &p) { return p.name == name; });
    if (!known) throw RuntimeError("model.params." + name, "'" + sig.name + "' has no parameter named '" + name + "'");
  }
}

std::vector<Variable> RecurrentLayer::streams(const Variable &x) const {
  std::vector<Variable> pieces = split(in_(x), inputSizes_);
  int64_t B = x.shape()[0], T = x.shape()[1];
  for (size_t i = 0; i < pieces.size(); ++i)
    if (inputShapes_[i].size() != 1) {
      Shape shape = {B, T};
      shape.insert(shape.end(), inputShapes_[i].begin(), inputShapes_[i].end());
      pieces[i] = reshape(pieces[i], shape);
    }
  return pieces;
}

Variable RecurrentLayer::project(const std::vector<Variable> &outputs) const {
  std::vector<Variable> flat;
  for (const Variable &o : outputs) flat.push_back(reshape(o, {o.shape()[0], o.shape()[1], -1}));
  Variable y = flat.size() == 1 ? flat.front() : concat(flat);
  return out_(gateM_ ? mul((*gateM_)(y), (*gateX_)(y)) : y);
}

Variable RecurrentLayer::forward(const Variable &x) { return project(scan_(streams(x), params_)); }

void RecurrentLayer::collect(ModelParams &out, const std::string &prefix) const {
  in_.collect(out, prefix + ".in_proj");
  const Signature &sig = scan_.signature();
  for (size_t i = 0; i < params_.size(); ++i) out.push_back({{prefix + ".scan." + sig.params[i].name, params_[i]}, false});
  if (gateM_) {
    gateM_->collect(out, prefix + ".out_gate_m");
    gateX_->collect(out, prefix + ".out_gate_x");
  }
  out_.collect(out, prefix + ".out_proj");
}

void RecurrentLayer::resetStream(int64_t batch) {
  states_.clear();
  for (const Port &s : scan_.signature().states) {
    Shape shape = {batch};
    Shape dims = dimsOf(s, sizes_);
    shape.insert(shape.end(), dims.begin(), dims.end());
    states_.push_back(Tensor::zeros(shape, DType::F32));
  }
}

Tensor RecurrentLayer::stream(const Tensor &x) {
  NoGradGuard noGrad;
  std::vector<Tensor> inputs, params;
  for (const Variable &v : streams(Variable(x))) inputs.push_back(v.value().contiguous());
  for (const Variable &p : params_) params.push_back(p.value());
  std::vector<Tensor> outputs = scan_.stream(inputs, params, states_);
  std::vector<Variable> wrapped;
  for (const Tensor &t : outputs) wrapped.push_back(Variable(t));
  return project(wrapped).value();
}

}  // namespace scanforge::models
