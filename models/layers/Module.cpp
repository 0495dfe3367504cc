#include "models/layers/Module.h"

#include <cmath>

#include "runtime/core/Error.h"
#include "runtime/core/Ops.h"

namespace scanforge::models {

Variable uniformParam(const Shape &shape, double bound, Generator &gen) {
  Tensor t = Tensor::empty(shape, DType::F32);
  fillUniform(t, -bound, bound, gen);
  return Variable(t, true);
}

LinearLayer::LinearLayer(int64_t in, int64_t out, bool bias, Generator &gen) : in_(in) {
  double bound = 1.0 / std::sqrt(static_cast<double>(in));
  weight_ = uniformParam({out, in}, bound, gen);
  if (bias) bias_ = uniformParam({out}, bound, gen);
}

Variable LinearLayer::operator()(const Variable &x) const { return linear(x, weight_, bias_); }

void LinearLayer::collect(ModelParams &out, const std::string &prefix) const {
  out.push_back({{prefix + ".weight", weight_}, true});
  if (bias_.defined()) out.push_back({{prefix + ".bias", bias_}, false});
}

Norm::Norm(int64_t dim, const std::string &kind) {
  if (kind == "none") return;
  if (kind != "layernorm" && kind != "rmsnorm")
    throw RuntimeError("model.norm", "unknown normalisation '" + kind + "' (layernorm, rmsnorm or none)");
  kind_ = kind == "layernorm" ? Kind::Layer : Kind::Rms;
  gamma_ = Variable(Tensor::full({dim}, 1.0, DType::F32), true);
  if (kind_ == Kind::Layer) beta_ = Variable(Tensor::zeros({dim}, DType::F32), true);
}

Variable Norm::operator()(const Variable &x) const {
  switch (kind_) {
    case Kind::None: return x;
    case Kind::Rms: return rmsNorm(x, gamma_);
    case Kind::Layer: break;
  }
  return layerNorm(x, gamma_, beta_);
}

void Norm::collect(ModelParams &out, const std::string &prefix) const {
  if (gamma_.defined()) out.push_back({{prefix + ".weight", gamma_}, false});
  if (beta_.defined()) out.push_back({{prefix + ".bias", beta_}, false});
}

}  // namespace scanforge::models
