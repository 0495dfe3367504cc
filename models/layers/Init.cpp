#include "models/layers/Init.h"

#include <cmath>
#include <functional>

#include "runtime/core/Error.h"

namespace scanforge::models {
namespace {

double arg(const config::InitSpec &spec, const char *name, double fallback) {
  auto it = spec.args.find(name);
  return it == spec.args.end() ? fallback : it->second;
}

void fill(const Tensor &t, const std::function<double(int64_t)> &value) {
  float *p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(value(i));
}

}  // namespace

config::InitSpec defaultParameterInit(const std::string &name) {
  if (name == "A") return {"s4d_real", {}};
  if (name == "D") return {"ones", {}};
  if (name == "lambda") return {"uniform", {{"low", 0.9}, {"high", 0.999}}};
  if (name == "nu_log") return {"lru_nu", {{"r_min", 0.9}, {"r_max", 0.999}}};
  if (name == "gamma_log") return {"lru_gamma", {}};
  return {"zeros", {}};
}

void initParameter(const Tensor &value, const config::InitSpec &spec, const std::string &what, Generator &gen,
                   const Tensor *related) {
  const std::string &k = spec.kind;
  if (k == "zeros") return fill(value, [](int64_t) { return 0.0; });
  if (k == "ones") return fill(value, [](int64_t) { return 1.0; });
  if (k == "constant") return fill(value, [&](int64_t) { return arg(spec, "value", 0.0); });
  if (k == "uniform") return fillUniform(value, arg(spec, "low", -1.0), arg(spec, "high", 1.0), gen);
  if (k == "normal") return fillNormal(value, 0.0, arg(spec, "std", 0.02), gen);
  if (k == "s4d_real") {  // A[..., n] = -(n + 1): the S4D-real initialisation Mamba uses
    if (value.dim() < 1) throw RuntimeError(what, "s4d_real needs a parameter with a state dimension");
    int64_t n = value.shape().back();
    return fill(value, [&](int64_t i) { return -static_cast<double>(i % n + 1); });
  }
  if (k == "lru_nu") {  // |lambda| = exp(-exp(nu_log)) uniform on the ring r_min <= |lambda| <= r_max
    double rmin = arg(spec, "r_min", 0.9), rmax = arg(spec, "r_max", 0.999);
    if (!(0 < rmin && rmin <= rmax && rmax < 1)) throw RuntimeError(what, "lru_nu needs 0 < r_min <= r_max < 1");
    return fill(value, [&](int64_t) {
      double u = gen.uniform();
      return std::log(-0.5 * std::log(u * (rmax * rmax - rmin * rmin) + rmin * rmin));
    });
  }
  if (k == "lru_gamma") {  // gamma = sqrt(1 - |lambda|^2), normalising the input of each channel
    if (!related || related->numel() != value.numel())
      throw RuntimeError(what, "lru_gamma needs the layer's nu_log parameter (of the same shape) initialised first");
    const float *nu = related->data<float>();
    return fill(value, [&](int64_t i) { return 0.5 * std::log(1.0 - std::exp(-2.0 * std::exp(double(nu[i])))); });
  }
  throw RuntimeError(what, "'" + k + "' is a gate-bias initialiser, not a parameter initialiser");
}

void initGateBias(const Tensor &bias, const config::InitSpec &spec, int64_t fanIn, const std::string &what,
                  Generator &gen) {
  int64_t width = bias.numel();
  double sign = arg(spec, "sign", 1.0);
  // u ~ U[1/width, 1 - 1/width] keeps logit(u) finite (paper 002, after Gu et al. 2020).
  auto u = [&] {
    double lo = width > 2 ? 1.0 / width : 0.25, hi = 1.0 - lo;
    return gen.uniform(lo, hi);
  };
  const std::string &k = spec.kind;
  if (k == "standard") {
    double bound = 1.0 / std::sqrt(static_cast<double>(fanIn)), offset = arg(spec, "offset", 0.0);
    return fill(bias, [&](int64_t) { return gen.uniform(-bound, bound) + offset; });
  }
  if (k == "chrono") {
    double tmax = arg(spec, "t_max", 0.0);
    if (tmax <= 2) throw RuntimeError(what, "chrono needs t_max > 2 (the longest dependency, in steps)");
    return fill(bias, [&](int64_t) { return sign * std::log(gen.uniform(1.0, tmax - 1.0)); });
  }
  if (k == "ugi") return fill(bias, [&](int64_t) {
    double x = u();
    return sign * std::log(x / (1.0 - x));
  });
  if (k == "gumbel") {
    double alpha = arg(spec, "alpha", 0.0), tau = arg(spec, "tau", 0.5);
    if (tau <= 0) throw RuntimeError(what, "gumbel needs tau > 0");
    return fill(bias, [&](int64_t) {
      double x = u();
      return sign * (alpha + std::log(x) - std::log(1.0 - x)) / tau;
    });
  }
  initParameter(bias, spec, what, gen);  // the plain initialisers apply to biases too
}

}  // namespace scanforge::models
