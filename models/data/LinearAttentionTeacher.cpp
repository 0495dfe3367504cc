#include "models/data/LinearAttentionTeacher.h"

#include <cmath>
#include <string>
#include <vector>

#include "runtime/core/Error.h"

namespace scanforge::tasks {

LinearAttentionTeacher::LinearAttentionTeacher(const LinearAttentionTeacherConfig &config, Generator &gen)
    : config_(config) {
  double weightStd = config.weightStd.value_or(config.dim > 0 ? 1.0 / std::sqrt(static_cast<double>(config.dim)) : 0.0);
  if (config.dim < 1 || config.steps < 1 || !(weightStd >= 0))
    throw RuntimeError("LinearAttentionTeacher", "needs dim >= 1, steps >= 1 and weightStd >= 0, got " +
                                                     std::to_string(config.dim) + ", " + std::to_string(config.steps) +
                                                     ", " + std::to_string(weightStd));
  for (Tensor *w : {&wq_, &wk_, &wv_}) {
    *w = Tensor::empty({config.dim, config.dim}, DType::F64);
    fillNormal(*w, 0, weightStd, gen);
  }
}

SequenceBatch LinearAttentionTeacher::sample(int64_t batch, Generator &gen, DType dtype) const {
  if (batch < 1) throw RuntimeError("LinearAttentionTeacher::sample", "needs batch >= 1, got " + std::to_string(batch));
  Tensor x = Tensor::empty({batch, config_.steps, config_.dim}, dtype);
  fillNormal(x, 0, 1, gen);
  return {x, apply(x)};
}

Tensor LinearAttentionTeacher::apply(const Tensor &inputs) const {
  const char *op = "LinearAttentionTeacher::apply";
  int64_t d = config_.dim;
  if (inputs.dim() != 3 || inputs.size(2) != d)
    throw RuntimeError(op, "inputs must be [B, T, " + std::to_string(d) + "], got " + inputs.describe());
  if (inputs.dtype() != DType::F32 && inputs.dtype() != DType::F64)
    throw RuntimeError(op, "inputs must be f32 or f64, got " + inputs.describe());
  int64_t batch = inputs.size(0), steps = inputs.size(1);
  Tensor x64 = inputs.to(DType::F64).contiguous();
  Tensor y = Tensor::empty(inputs.shape(), DType::F64);
  const double *x = x64.data<double>(), *wq = wq_.data<double>(), *wk = wk_.data<double>(), *wv = wv_.data<double>();
  double *out = y.data<double>();
  auto project = [d](const double *w, const double *v, std::vector<double> &into) {
    for (int64_t i = 0; i < d; ++i) {
      double s = 0;
      for (int64_t j = 0; j < d; ++j) s += w[i * d + j] * v[j];
      into[static_cast<size_t>(i)] = s;
    }
  };
  size_t n = static_cast<size_t>(d);
  std::vector<double> q(n), k(n), v(n), state(n * n);
  for (int64_t b = 0; b < batch; ++b) {
    std::fill(state.begin(), state.end(), 0.0);
    for (int64_t t = 0; t < steps; ++t) {
      const double *xt = x + (b * steps + t) * d;
      project(wq, xt, q);
      project(wk, xt, k);
      project(wv, xt, v);
      for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) state[i * n + j] += v[i] * k[j];
      for (size_t i = 0; i < n; ++i) {
        double s = 0;
        for (size_t j = 0; j < n; ++j) s += state[i * n + j] * q[j];
        out[(b * steps + t) * d + static_cast<int64_t>(i)] = s;
      }
    }
  }
  return y.to(inputs.dtype());
}

}  // namespace scanforge::tasks
