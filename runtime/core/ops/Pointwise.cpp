#include "runtime/core/ops/Pointwise.h"

#include <cmath>
#include <functional>
#include <numbers>
#include <optional>
#include <tuple>
#include <type_traits>

#include "runtime/core/Dispatch.h"
#include "runtime/core/ops/ActivationKernels.h"
#include "runtime/core/ops/OpChecks.h"

namespace scanforge {

namespace {

void requireSameOperands(const char *op, const Tensor &a, const Tensor &b) {
  detail::requireSameDType(op, "a", a, "b", b);
  if (a.shape() != b.shape())
    throw RuntimeError(op, "operands differ in shape: a is " + a.describe() + ", b is " + b.describe() +
                               " (element-wise ops do not broadcast; use addBias for a per-channel vector)");
}

// out[i] = f(in[0][i], in[1][i], ...) over same-shaped contiguous tensors of element type T.
template <class T, class F, class... Ts>
Tensor map(const Tensor &like, F f, const Ts &...inputs) {
  Tensor out = Tensor::empty(like.shape(), like.dtype());
  T *o = out.data<T>();
  int64_t n = like.numel();
  std::apply([&](const auto *...p) { for (int64_t i = 0; i < n; ++i) o[i] = f(p[i]...); },
             std::make_tuple(static_cast<const T *>(inputs.template data<T>())...));
  return out;
}

// y = f(a, b) with element-wise partial derivatives da(g, a, b) and db(g, a, b).
template <class F, class DA, class DB>
Variable binary(const char *op, const Variable &a, const Variable &b, F f, DA da, DB db) {
  return applyOp(op, {a, b}, [=](const OpInputs &in) {
    requireSameOperands(op, in[0], in[1]);
    Tensor y = dispatchFloat(op, in[0], [&]<class T>() { return map<T>(in[0], f, in[0], in[1]); });
    BackwardFn backward = [=](const std::vector<Tensor> &g) -> std::vector<Tensor> {
      return dispatchFloat(op, g[0], [&]<class T>() -> std::vector<Tensor> {
        std::vector<Tensor> grads(2);
        if (in.needsGrad[0]) grads[0] = map<T>(g[0], da, g[0], in[0], in[1]);
        if (in.needsGrad[1]) grads[1] = map<T>(g[0], db, g[0], in[0], in[1]);
        return grads;
      });
    };
    return OpOutputs{{y}, backward};
  })[0];
}

// Whole-tensor f32 kernels of an op (ActivationKernels.h): y = f(x), and dx = g * f'(x).
struct F32Kernels {
  void (*forward)(const float *x, float *y, int64_t n);
  void (*backward)(const float *g, const float *x, float *dx, int64_t n);
};

// y = f(x) with derivative df(x, y); f32 through `kernels` where the op has them.
template <class F, class DF>
Variable unary(const char *op, const Variable &x, F f, DF df, std::optional<F32Kernels> kernels = std::nullopt) {
  return applyOp(op, {x}, [=](const OpInputs &in) {
    Tensor y = dispatchFloat(op, in[0], [&]<class T>() {
      if constexpr (std::is_same_v<T, float>) {
        if (kernels) {
          Tensor out = Tensor::empty(in[0].shape(), in[0].dtype());
          kernels->forward(in[0].data<float>(), out.data<float>(), in[0].numel());
          return out;
        }
      }
      return map<T>(in[0], f, in[0]);
    });
    BackwardFn backward = [=](const std::vector<Tensor> &g) -> std::vector<Tensor> {
      return {dispatchFloat(op, g[0], [&]<class T>() {
        if constexpr (std::is_same_v<T, float>) {
          if (kernels) {
            Tensor dx = Tensor::empty(g[0].shape(), g[0].dtype());
            kernels->backward(g[0].data<float>(), in[0].data<float>(), dx.data<float>(), g[0].numel());
            return dx;
          }
        }
        return map<T>(g[0], [&](T gi, T xi, T yi) { return gi * df(xi, yi); }, g[0], in[0], y);
      })};
    };
    return OpOutputs{{y}, backward};
  })[0];
}

template <class T>
T sigmoidOf(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

}  // namespace

Variable add(const Variable &a, const Variable &b) {
  const char *op = "add";
  return applyOp(op, {a, b}, [=](const OpInputs &in) {
    requireSameOperands(op, in[0], in[1]);
    Tensor y = dispatchFloat(op, in[0], [&]<class T>() { return map<T>(in[0], std::plus<T>(), in[0], in[1]); });
    // The gradient passes through unchanged to both operands.
    return OpOutputs{{y}, [](const std::vector<Tensor> &g) { return std::vector<Tensor>{g[0], g[0]}; }};
  })[0];
}

Variable sub(const Variable &a, const Variable &b) {
  return binary(
      "sub", a, b, [](auto x, auto y) { return x - y; }, [](auto g, auto, auto) { return g; },
      [](auto g, auto, auto) { return -g; });
}

Variable mul(const Variable &a, const Variable &b) {
  return binary(
      "mul", a, b, [](auto x, auto y) { return x * y; }, [](auto g, auto, auto y) { return g * y; },
      [](auto g, auto x, auto) { return g * x; });
}

Variable scale(const Variable &x, double factor) {
  return unary(
      "scale", x, [factor](auto v) { return static_cast<decltype(v)>(factor) * v; },
      [factor](auto v, auto) { return static_cast<decltype(v)>(factor); });
}

Variable addBias(const Variable &x, const Variable &bias) {
  const char *op = "addBias";
  return applyOp(op, {x, bias}, [=](const OpInputs &in) {
    int64_t n = detail::lastDim(op, "input", in[0]);
    detail::requireParam(op, "bias", in[1], {n}, in[0]);
    int64_t rows = n ? in[0].numel() / n : 0;
    Tensor y = Tensor::empty(in[0].shape(), in[0].dtype());
    dispatchFloat(op, in[0], [&]<class T>() {
      const T *px = in[0].data<T>(), *pb = in[1].data<T>();
      T *py = y.data<T>();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < n; ++j) py[r * n + j] = px[r * n + j] + pb[j];
    });
    BackwardFn backward = [=](const std::vector<Tensor> &g) -> std::vector<Tensor> {
      Tensor dbias;
      if (in.needsGrad[1]) {
        dbias = Tensor::zeros({n}, g[0].dtype());
        dispatchFloat(op, g[0], [&]<class T>() {
          const T *pg = g[0].data<T>();
          T *pd = dbias.data<T>();
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < n; ++j) pd[j] += pg[r * n + j];
        });
      }
      return {g[0], dbias};
    };
    return OpOutputs{{y}, backward};
  })[0];
}

Variable sigmoid(const Variable &x) {
  return unary(
      "sigmoid", x, [](auto v) { return sigmoidOf(v); }, [](auto, auto y) { return y * (1 - y); });
}

Variable tanh(const Variable &x) {
  return unary(
      "tanh", x, [](auto v) { return std::tanh(v); }, [](auto, auto y) { return 1 - y * y; });
}

Variable silu(const Variable &x) {
  return unary(
      "silu", x, [](auto v) { return v * sigmoidOf(v); },
      [](auto v, auto) {
        auto s = sigmoidOf(v);
        return s * (1 + v * (1 - s));
      });
}

// f32 through the vectorised kernels (libm's erff one element at a time took a third of a training
// step's main thread); f64 through libm.
Variable gelu(const Variable &x) {
  return unary(
      "gelu", x,
      [](auto v) {
        using T = decltype(v);
        return T(0.5) * v * (1 + std::erf(v * T(std::numbers::sqrt2 / 2)));
      },
      [](auto v, auto) {
        using T = decltype(v);
        T cdf = T(0.5) * (1 + std::erf(v * T(std::numbers::sqrt2 / 2)));
        T pdf = std::exp(T(-0.5) * v * v) * T(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
        return cdf + v * pdf;
      },
      F32Kernels{kernels::geluForward, kernels::geluBackward});
}

}  // namespace scanforge
