#include "runtime/core/GradClip.h"

#include <cmath>

#include "runtime/core/Dispatch.h"

namespace scanforge {

double clipGradNorm(const std::vector<Parameter> &params, double maxNorm) {
  const char *op = "clipGradNorm";
  if (!(maxNorm > 0)) throw RuntimeError(op, "maxNorm must be positive, got " + std::to_string(maxNorm));
  double squares = 0;
  for (const Parameter &p : params) {
    const Tensor &g = p.variable.grad();
    if (!g.defined()) continue;
    dispatchFloat(op, g, [&]<class T>() {
      const T *pg = g.data<T>();
      for (int64_t i = 0, n = g.numel(); i < n; ++i) squares += static_cast<double>(pg[i]) * pg[i];
    });
  }
  double norm = std::sqrt(squares);
  if (!std::isfinite(norm) || norm <= maxNorm) return norm;
  double factor = maxNorm / (norm + 1e-6);
  for (const Parameter &p : params) {
    const Tensor &g = p.variable.grad();
    if (!g.defined()) continue;
    dispatchFloat(op, g, [&]<class T>() {
      T *pg = g.data<T>();
      for (int64_t i = 0, n = g.numel(); i < n; ++i) pg[i] = static_cast<T>(pg[i] * factor);
    });
  }
  return norm;
}

}  // namespace scanforge
