#include "runtime/core/ops/Dropout.h"

#include "runtime/core/Dispatch.h"

namespace scanforge {

Variable dropout(const Variable &x, double p, bool training, Generator &gen) {
  const char *op = "dropout";
  if (!(p >= 0 && p < 1)) throw RuntimeError(op, "the drop probability must lie in [0, 1), got " + std::to_string(p));
  if (!training || p == 0) return x;
  return applyOp(op, {x}, [&gen, p, op](const OpInputs &in) {
    const Tensor &X = in[0];
    Tensor mask = Tensor::empty(X.shape(), X.dtype());
    Tensor Y = Tensor::empty(X.shape(), X.dtype());
    dispatchFloat(op, X, [&]<class T>() {
      T keep = static_cast<T>(1.0 / (1.0 - p));
      const T *px = X.data<T>();
      T *pm = mask.data<T>(), *py = Y.data<T>();
      for (int64_t i = 0, n = X.numel(); i < n; ++i) {
        pm[i] = gen.uniform() >= p ? keep : T(0);
        py[i] = px[i] * pm[i];
      }
    });
    BackwardFn backward = [=](const std::vector<Tensor> &g) -> std::vector<Tensor> {
      Tensor dx = Tensor::empty(X.shape(), X.dtype());
      dispatchFloat(op, X, [&]<class T>() {
        const T *pg = g[0].data<T>(), *pm = mask.data<T>();
        T *pd = dx.data<T>();
        for (int64_t i = 0, n = X.numel(); i < n; ++i) pd[i] = pg[i] * pm[i];
      });
      return {dx};
    };
    return OpOutputs{{Y}, backward};
  })[0];
}

}  // namespace scanforge
