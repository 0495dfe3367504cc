#include "runtime/core/ops/CausalConv.h"

#include <algorithm>

#include "runtime/core/Dispatch.h"
#include "runtime/core/ops/OpChecks.h"

namespace scanforge {

namespace {

// The weight as [K, C], so that the inner loops over channels read it contiguously.
template <class T>
std::vector<T> tapsByChannel(const T *w, int64_t c, int64_t k) {
  std::vector<T> taps(static_cast<size_t>(k * c));
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t j = 0; j < k; ++j) taps[static_cast<size_t>(j * c + ch)] = w[ch * k + j];
  return taps;
}

}  // namespace

Variable causalConv1d(const Variable &x, const Variable &weight, const Variable &bias) {
  const char *op = "causalConv1d";
  std::vector<Variable> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return applyOp(op, inputs, [=](const OpInputs &in) {
    const Tensor &X = in[0], &W = in[1];
    if (X.dim() != 3) throw RuntimeError(op, "input must be [B, T, C], got " + X.describe());
    int64_t b = X.size(0), t = X.size(1), c = X.size(2);
    detail::requireSameDType(op, "weight", W, "the input", X);
    if (W.dim() != 2 || W.size(0) != c || W.size(1) < 1)
      throw RuntimeError(op, "weight must be [C, K] with C = " + std::to_string(c) + " channels of the input " +
                                 X.describe() + " and K >= 1 taps, got " + W.describe());
    int64_t k = W.size(1);
    bool hasBias = in.size() == 3;
    if (hasBias) detail::requireParam(op, "bias", in[2], {c}, X);
    Tensor Y = Tensor::empty(X.shape(), X.dtype());
    dispatchFloat(op, X, [&]<class T>() {
      const T *px = X.data<T>();
      T *py = Y.data<T>();
      std::vector<T> taps = tapsByChannel(W.data<T>(), c, k);
      for (int64_t bt = 0; bt < b * t; ++bt) {
        int64_t step = bt % t;
        T *yr = py + bt * c;
        if (hasBias) std::copy_n(in[2].data<T>(), c, yr);
        else std::fill_n(yr, c, T(0));
        for (int64_t j = std::max<int64_t>(0, k - 1 - step); j < k; ++j) {
          const T *xr = px + (bt - (k - 1) + j) * c, *wj = taps.data() + j * c;
          for (int64_t ch = 0; ch < c; ++ch) yr[ch] += wj[ch] * xr[ch];
        }
      }
    });
    BackwardFn backward = [=](const std::vector<Tensor> &g) -> std::vector<Tensor> {
      std::vector<Tensor> grads(in.size());
      dispatchFloat(op, g[0], [&]<class T>() {
        const T *px = X.data<T>(), *pg = g[0].data<T>();
        std::vector<T> taps = tapsByChannel(W.data<T>(), c, k);
        std::vector<T> dtaps(static_cast<size_t>(k * c), T(0)), dbias(static_cast<size_t>(c), T(0));
        T *pdx = nullptr;
        if (in.needsGrad[0]) {
          grads[0] = Tensor::zeros(X.shape(), X.dtype());
          pdx = grads[0].data<T>();
        }
        // Output step bt received x[bt - (k-1) + j] through tap j: send its gradient back along the
        // same edges.
        for (int64_t bt = 0; bt < b * t; ++bt) {
          int64_t step = bt % t;
          const T *gr = pg + bt * c;
          for (int64_t ch = 0; ch < c; ++ch) dbias[static_cast<size_t>(ch)] += gr[ch];
          for (int64_t j = std::max<int64_t>(0, k - 1 - step); j < k; ++j) {
            int64_t src = bt - (k - 1) + j;
            const T *xr = px + src * c, *wj = taps.data() + j * c;
            T *dwj = dtaps.data() + j * c;
            for (int64_t ch = 0; ch < c; ++ch) dwj[ch] += gr[ch] * xr[ch];
            if (pdx)
              for (int64_t ch = 0; ch < c; ++ch) pdx[src * c + ch] += gr[ch] * wj[ch];
          }
        }
        if (in.needsGrad[1]) {
          grads[1] = Tensor::empty(W.shape(), W.dtype());
          T *pdw = grads[1].data<T>();
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t j = 0; j < k; ++j) pdw[ch * k + j] = dtaps[static_cast<size_t>(j * c + ch)];
        }
        if (hasBias && in.needsGrad[2]) grads[2] = Tensor::fromData<T>({c}, dbias);
      });
      return grads;
    };
    return OpOutputs{{Y}, backward};
  })[0];
}

}  // namespace scanforge
