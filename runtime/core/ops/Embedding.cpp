#include "runtime/core/ops/Embedding.h"

#include <algorithm>

#include "runtime/core/Dispatch.h"

namespace scanforge {

Variable embedding(const Tensor &ids, const Variable &table) {
  const char *op = "embedding";
  if (!ids.defined() || ids.dtype() != DType::I64) throw RuntimeError(op, "ids must be an i64 tensor, got " + ids.describe());
  Tensor idx = ids.contiguous();
  return applyOp(op, {table}, [=](const OpInputs &in) {
    const Tensor &W = in[0];
    if (W.dim() != 2) throw RuntimeError(op, "table must be [V, D], got " + W.describe());
    int64_t vocab = W.size(0), d = W.size(1), n = idx.numel();
    const int64_t *pid = idx.data<int64_t>();
    for (int64_t i = 0; i < n; ++i)
      if (pid[i] < 0 || pid[i] >= vocab)
        throw RuntimeError(op, "id " + std::to_string(pid[i]) + " at flat position " + std::to_string(i) + " of ids " +
                                   idx.describe() + " is outside the table's " + std::to_string(vocab) + " rows");
    Shape outShape = idx.shape();
    outShape.push_back(d);
    Tensor Y = Tensor::empty(outShape, W.dtype());
    dispatchFloat(op, W, [&]<class T>() {
      const T *pw = W.data<T>();
      T *py = Y.data<T>();
      for (int64_t i = 0; i < n; ++i) std::copy_n(pw + pid[i] * d, d, py + i * d);
    });
    BackwardFn backward = [=](const std::vector<Tensor> &g) -> std::vector<Tensor> {
      Tensor dW = Tensor::zeros(W.shape(), W.dtype());
      dispatchFloat(op, W, [&]<class T>() {
        const T *pg = g[0].data<T>();
        const int64_t *rowIds = idx.data<int64_t>();
        T *pd = dW.data<T>();
        for (int64_t i = 0; i < n; ++i) {
          T *row = pd + rowIds[i] * d;
          for (int64_t j = 0; j < d; ++j) row[j] += pg[i * d + j];
        }
      });
      return {dW};
    };
    return OpOutputs{{Y}, backward};
  })[0];
}

}  // namespace scanforge
