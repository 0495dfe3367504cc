#include "runtime/core/ops/Reduction.h"

#include "runtime/core/Dispatch.h"

namespace scanforge {

namespace {

// y = factor * sum(x); dx = factor * dy everywhere.
Variable scaledSum(const char *op, const Variable &x, bool divideByCount) {
  return applyOp(op, {x}, [=](const OpInputs &in) {
    const Tensor &X = in[0];
    int64_t n = X.numel();
    if (divideByCount && n == 0) throw RuntimeError(op, "the mean of an empty tensor " + X.describe() + " is undefined");
    double factor = divideByCount ? 1.0 / static_cast<double>(n) : 1.0;
    Tensor y = Tensor::empty({}, X.dtype());
    dispatchFloat(op, X, [&]<class T>() {
      const T *px = X.data<T>();
      double total = 0;
      for (int64_t i = 0; i < n; ++i) total += px[i];
      *y.data<T>() = static_cast<T>(total * factor);
    });
    Shape shape = X.shape();
    DType dtype = X.dtype();
    return OpOutputs{{y}, [=](const std::vector<Tensor> &g) {
                       return std::vector<Tensor>{Tensor::full(shape, g[0].item() * factor, dtype)};
                     }};
  })[0];
}

}  // namespace

Variable sum(const Variable &x) { return scaledSum("sum", x, false); }
Variable mean(const Variable &x) { return scaledSum("mean", x, true); }

}  // namespace scanforge
