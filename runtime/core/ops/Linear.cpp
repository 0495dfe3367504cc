#include "runtime/core/ops/Linear.h"

#include "runtime/core/Dispatch.h"
#include "runtime/core/ops/Gemm.h"
#include "runtime/core/ops/OpChecks.h"

namespace scanforge {

using detail::gemm;

Variable matmul(const Variable &a, const Variable &b) {
  const char *op = "matmul";
  return applyOp(op, {a, b}, [=](const OpInputs &in) {
    const Tensor &A = in[0], &B = in[1];
    detail::requireSameDType(op, "a", A, "b", B);
    if (A.dim() != 2 || B.dim() != 2 || A.size(1) != B.size(0))
      throw RuntimeError(op, "needs a [M, K] and b [K, N], got a " + A.describe() + " and b " + B.describe());
    int64_t m = A.size(0), k = A.size(1), n = B.size(1);
    Tensor C = Tensor::empty({m, n}, A.dtype());
    dispatchFloat(op, A, [&]<class T>() { gemm<T>(false, false, m, n, k, A.data<T>(), B.data<T>(), T(0), C.data<T>()); });
    BackwardFn backward = [=](const std::vector<Tensor> &g) -> std::vector<Tensor> {
      std::vector<Tensor> grads(2);
      dispatchFloat(op, g[0], [&]<class T>() {
        if (in.needsGrad[0]) {  // dA = dC B^T
          grads[0] = Tensor::empty({m, k}, A.dtype());
          gemm<T>(false, true, m, k, n, g[0].data<T>(), B.data<T>(), T(0), grads[0].data<T>());
        }
        if (in.needsGrad[1]) {  // dB = A^T dC
          grads[1] = Tensor::empty({k, n}, A.dtype());
          gemm<T>(true, false, k, n, m, A.data<T>(), g[0].data<T>(), T(0), grads[1].data<T>());
        }
      });
      return grads;
    };
    return OpOutputs{{C}, backward};
  })[0];
}

Variable linear(const Variable &x, const Variable &weight, const Variable &bias) {
  const char *op = "linear";
  std::vector<Variable> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return applyOp(op, inputs, [=](const OpInputs &in) {
    const Tensor &X = in[0], &W = in[1];
    int64_t k = detail::lastDim(op, "input", X);
    detail::requireSameDType(op, "weight", W, "the input", X);
    if (W.dim() != 2 || W.size(1) != k)
      throw RuntimeError(op, "weight must be [N, " + std::to_string(k) + "] (out, in) for the input " + X.describe() +
                                 ", got " + W.describe());
    int64_t n = W.size(0), m = k ? X.numel() / k : 0;
    bool hasBias = in.size() == 3;
    if (hasBias) detail::requireParam(op, "bias", in[2], {n}, X);
    Shape outShape = X.shape();
    outShape.back() = n;
    Tensor Y = Tensor::empty(outShape, X.dtype());
    dispatchFloat(op, X, [&]<class T>() {
      T *py = Y.data<T>();
      if (hasBias) {  // start from the bias in every row and let the GEMM add x W^T
        const T *pb = in[2].data<T>();
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < n; ++j) py[r * n + j] = pb[j];
      }
      gemm<T>(false, true, m, n, k, X.data<T>(), W.data<T>(), hasBias ? T(1) : T(0), py);
    });
    BackwardFn backward = [=](const std::vector<Tensor> &g) -> std::vector<Tensor> {
      std::vector<Tensor> grads(in.size());
      dispatchFloat(op, g[0], [&]<class T>() {
        const T *pg = g[0].data<T>();
        if (in.needsGrad[0]) {  // dX = dY W
          grads[0] = Tensor::empty(X.shape(), X.dtype());
          gemm<T>(false, false, m, k, n, pg, W.data<T>(), T(0), grads[0].data<T>());
        }
        if (in.needsGrad[1]) {  // dW = dY^T X
          grads[1] = Tensor::empty(W.shape(), W.dtype());
          gemm<T>(true, false, n, k, m, pg, X.data<T>(), T(0), grads[1].data<T>());
        }
        if (hasBias && in.needsGrad[2]) {  // db = column sums of dY
          grads[2] = Tensor::zeros({n}, X.dtype());
          T *pd = grads[2].data<T>();
          for (int64_t r = 0; r < m; ++r)
            for (int64_t j = 0; j < n; ++j) pd[j] += pg[r * n + j];
        }
      });
      return grads;
    };
    return OpOutputs{{Y}, backward};
  })[0];
}

}  // namespace scanforge
