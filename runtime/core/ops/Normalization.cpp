#include "runtime/core/ops/Normalization.h"

#include <cmath>
#include <memory>

#include "runtime/core/Dispatch.h"
#include "runtime/core/ops/OpChecks.h"

namespace scanforge {

namespace {

// Both norms compute xhat = (x - shift) * rstd per row and y = gamma * xhat (+ beta). LayerNorm
// centres (shift = mean), RMSNorm does not (shift = 0). Their backward differs only in whether the
// mean of the incoming gradient is subtracted:
//   dx = rstd * (dxhat - [centred] mean(dxhat) - xhat * mean(dxhat * xhat)),  dxhat = dy * gamma.
Variable normalize(const char *op, const Variable &x, const Variable &gamma, const Variable &beta, double eps,
                   bool centred) {
  if (!(eps > 0)) throw RuntimeError(op, "eps must be positive, got " + std::to_string(eps));
  std::vector<Variable> inputs{x, gamma};
  bool hasBeta = beta.defined();
  if (hasBeta) inputs.push_back(beta);
  return applyOp(op, inputs, [=](const OpInputs &in) {
    const Tensor &X = in[0];
    int64_t d = detail::lastDim(op, "input", X);
    detail::requireParam(op, "gamma", in[1], {d}, X);
    if (hasBeta) detail::requireParam(op, "beta", in[2], {d}, X);
    int64_t rows = d ? X.numel() / d : 0;
    auto shift = std::make_shared<std::vector<double>>(rows, 0.0);
    auto rstd = std::make_shared<std::vector<double>>(rows);
    Tensor Y = Tensor::empty(X.shape(), X.dtype());
    dispatchFloat(op, X, [&]<class T>() {
      const T *px = X.data<T>(), *pg = in[1].data<T>(), *pb = hasBeta ? in[2].data<T>() : nullptr;
      T *py = Y.data<T>();
      for (int64_t r = 0; r < rows; ++r) {
        const T *xr = px + r * d;
        double mean = 0;
        if (centred) {
          for (int64_t j = 0; j < d; ++j) mean += xr[j];
          mean /= static_cast<double>(d);
        }
        double sq = 0;
        for (int64_t j = 0; j < d; ++j) sq += (xr[j] - mean) * (xr[j] - mean);
        double s = 1.0 / std::sqrt(sq / static_cast<double>(d) + eps);
        (*shift)[static_cast<size_t>(r)] = mean;
        (*rstd)[static_cast<size_t>(r)] = s;
        for (int64_t j = 0; j < d; ++j) {
          double y = pg[j] * (xr[j] - mean) * s;
          py[r * d + j] = static_cast<T>(pb ? y + pb[j] : y);
        }
      }
    });
    BackwardFn backward = [=](const std::vector<Tensor> &g) -> std::vector<Tensor> {
      std::vector<Tensor> grads(in.size());
      dispatchFloat(op, g[0], [&]<class T>() {
        const T *px = X.data<T>(), *pgam = in[1].data<T>(), *pdy = g[0].data<T>();
        std::vector<double> dgamma(static_cast<size_t>(d), 0.0), dbeta(static_cast<size_t>(d), 0.0);
        std::vector<double> xhat(static_cast<size_t>(d)), dxhat(static_cast<size_t>(d));
        T *pdx = nullptr;
        if (in.needsGrad[0]) {
          grads[0] = Tensor::empty(X.shape(), X.dtype());
          pdx = grads[0].data<T>();
        }
        for (int64_t r = 0; r < rows; ++r) {
          double mean = (*shift)[static_cast<size_t>(r)], s = (*rstd)[static_cast<size_t>(r)];
          double sumDxhat = 0, sumDxhatXhat = 0;
          for (int64_t j = 0; j < d; ++j) {
            size_t u = static_cast<size_t>(j);
            double dy = pdy[r * d + j];
            xhat[u] = (px[r * d + j] - mean) * s;
            dxhat[u] = dy * pgam[j];
            dgamma[u] += dy * xhat[u];
            dbeta[u] += dy;
            sumDxhat += dxhat[u];
            sumDxhatXhat += dxhat[u] * xhat[u];
          }
          if (!pdx) continue;
          double meanDxhat = centred ? sumDxhat / static_cast<double>(d) : 0.0;
          double meanDxhatXhat = sumDxhatXhat / static_cast<double>(d);
          for (int64_t j = 0; j < d; ++j) {
            size_t u = static_cast<size_t>(j);
            pdx[r * d + j] = static_cast<T>(s * (dxhat[u] - meanDxhat - xhat[u] * meanDxhatXhat));
          }
        }
        auto fromDoubles = [&](const std::vector<double> &v) {
          Tensor t = Tensor::empty({d}, X.dtype());
          T *p = t.data<T>();
          for (int64_t j = 0; j < d; ++j) p[j] = static_cast<T>(v[static_cast<size_t>(j)]);
          return t;
        };
        if (in.needsGrad[1]) grads[1] = fromDoubles(dgamma);
        if (hasBeta && in.needsGrad[2]) grads[2] = fromDoubles(dbeta);
      });
      return grads;
    };
    return OpOutputs{{Y}, backward};
  })[0];
}

}  // namespace

Variable layerNorm(const Variable &x, const Variable &gamma, const Variable &beta, double eps) {
  if (!beta.defined()) throw RuntimeError("layerNorm", "beta is undefined (use rmsNorm for a norm without a shift)");
  return normalize("layerNorm", x, gamma, beta, eps, true);
}

Variable rmsNorm(const Variable &x, const Variable &gamma, double eps) {
  return normalize("rmsNorm", x, gamma, Variable(), eps, false);
}

}  // namespace scanforge

