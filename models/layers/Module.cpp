#include "models/layers/Module.h"

#include <cmath>

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

Norm::Norm(int64_t dim, const std::string &kind) : kind_(kind) {
  if (kind_ == "none") return;
  gamma_ = Variable(Tensor::full({dim}, 1.0, DType::F32), true);
  if (kind_ == "layernorm") beta_ = Variable(Tensor::zeros({dim}, DType::F32), true);
}

Variable Norm::operator()(const Variable &x) const {
  if (kind_ == "none") return x;
  return kind_ == "rmsnorm" ? rmsNorm(x, gamma_) : layerNorm(x, gamma_, beta_);
}

void Norm::collect(ModelParams &out, const std::string &prefix) const {
  if (gamma_.defined()) out.push_back({{prefix + ".weight", gamma_}, false});
  if (beta_.defined()) out.push_back({{prefix + ".bias", beta_}, false});
}

}  // namespace scanforge::models
