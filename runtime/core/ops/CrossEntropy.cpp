#include "runtime/core/ops/CrossEntropy.h"

#include <algorithm>
#include <cmath>

#include "runtime/core/Dispatch.h"

namespace scanforge {

Variable crossEntropy(const Variable &logits, const Tensor &targets, int64_t ignoreIndex) {
  const char *op = "crossEntropy";
  if (!targets.defined() || targets.dtype() != DType::I64)
    throw RuntimeError(op, "targets must be an i64 tensor, got " + targets.describe());
  Tensor tgt = targets.contiguous();
  return applyOp(op, {logits}, [=](const OpInputs &in) {
    const Tensor &Z = in[0];
    if (Z.dim() < 1) throw RuntimeError(op, "logits need a class dimension, got " + Z.describe());
    Shape rowsShape(Z.shape().begin(), Z.shape().end() - 1);
    if (tgt.shape() != rowsShape)
      throw RuntimeError(op, "targets must have shape " + shapeString(rowsShape) + " for logits " + Z.describe() +
                                 ", got " + tgt.describe());
    int64_t vocab = Z.shape().back(), rows = tgt.numel(), counted = 0;
    const int64_t *pt = tgt.data<int64_t>();
    for (int64_t r = 0; r < rows; ++r) {
      if (pt[r] == ignoreIndex) continue;
      if (pt[r] < 0 || pt[r] >= vocab)
        throw RuntimeError(op, "target " + std::to_string(pt[r]) + " at flat position " + std::to_string(r) +
                                   " is outside the " + std::to_string(vocab) + " classes (and is not the ignore index " +
                                   std::to_string(ignoreIndex) + ")");
      ++counted;
    }
    double scale = counted ? 1.0 / static_cast<double>(counted) : 0.0;
    Tensor loss = Tensor::empty({}, Z.dtype());
    dispatchFloat(op, Z, [&]<class T>() {
      const T *pz = Z.data<T>();
      double total = 0;
      for (int64_t r = 0; r < rows; ++r) {
        if (pt[r] == ignoreIndex) continue;
        const T *zr = pz + r * vocab;
        double mx = *std::max_element(zr, zr + vocab), s = 0;
        for (int64_t j = 0; j < vocab; ++j) s += std::exp(zr[j] - mx);
        total += mx + std::log(s) - zr[pt[r]];
      }
      *loss.data<T>() = static_cast<T>(total * scale);
    });
    BackwardFn backward = [=](const std::vector<Tensor> &g) -> std::vector<Tensor> {
      Tensor dz = Tensor::zeros(Z.shape(), Z.dtype());
      double factor = g[0].item() * scale;
      dispatchFloat(op, Z, [&]<class T>() {
        const T *pz = Z.data<T>();
        const int64_t *labels = tgt.data<int64_t>();
        T *pd = dz.data<T>();
        for (int64_t r = 0; r < rows; ++r) {
          if (labels[r] == ignoreIndex) continue;
          const T *zr = pz + r * vocab;
          T *dr = pd + r * vocab;
          double mx = *std::max_element(zr, zr + vocab), s = 0;
          for (int64_t j = 0; j < vocab; ++j) s += std::exp(zr[j] - mx);
          for (int64_t j = 0; j < vocab; ++j)
            dr[j] = static_cast<T>((std::exp(zr[j] - mx) / s - (j == labels[r] ? 1.0 : 0.0)) * factor);
        }
      });
      return {dz};
    };
    return OpOutputs{{loss}, backward};
  })[0];
}

}  // namespace scanforge
