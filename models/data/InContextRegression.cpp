#include "models/data/InContextRegression.h"

#include <cmath>
#include <string>
#include <vector>

#include "runtime/core/Error.h"

namespace scanforge::tasks {

namespace {

void validate(const InContextRegressionConfig &c, const char *op) {
  if (c.inputDim < 1 || c.outputDim < 1 || c.observations < 1 || !(c.weightVariance >= 0))
    throw RuntimeError(op, "needs inputDim, outputDim, observations >= 1 and weightVariance >= 0, got " +
                               std::to_string(c.inputDim) + ", " + std::to_string(c.outputDim) + ", " +
                               std::to_string(c.observations) + ", " + std::to_string(c.weightVariance));
}

}  // namespace

SequenceBatch sampleInContextRegression(const InContextRegressionConfig &config, int64_t batch, Generator &gen,
                                        DType dtype) {
  const char *op = "sampleInContextRegression";
  validate(config, op);
  if (batch < 1) throw RuntimeError(op, "needs batch >= 1, got " + std::to_string(batch));
  if (dtype != DType::F32 && dtype != DType::F64) throw RuntimeError(op, "makes f32 or f64 data, not " + std::string(nameOf(dtype)));
  int64_t dx = config.inputDim, dy = config.outputDim, steps = config.observations + 1, width = dx + dy;
  Tensor inputs = Tensor::zeros({batch, steps, width}, DType::F64);
  Tensor targets = Tensor::empty({batch, dy}, DType::F64);
  double *in = inputs.data<double>(), *out = targets.data<double>();
  double wStd = std::sqrt(config.weightVariance), xBound = std::sqrt(3.0);
  std::vector<double> w(static_cast<size_t>(dy * dx));
  for (int64_t b = 0; b < batch; ++b) {
    for (double &v : w) v = gen.normal(0, wStd);
    for (int64_t t = 0; t < steps; ++t) {
      double *row = in + (b * steps + t) * width;
      for (int64_t i = 0; i < dx; ++i) row[i] = gen.uniform(-xBound, xBound);
      bool query = t == steps - 1;
      double *y = query ? out + b * dy : row + dx;  // the query's y is the target, its input slot stays 0
      for (int64_t o = 0; o < dy; ++o) {
        double s = 0;
        for (int64_t i = 0; i < dx; ++i) s += w[static_cast<size_t>(o * dx + i)] * row[i];
        y[o] = s;
      }
    }
  }
  return {inputs.to(dtype), targets.to(dtype)};
}

Tensor oneStepGradientDescent(const Tensor &inputs, const InContextRegressionConfig &config, double lr) {
  const char *op = "oneStepGradientDescent";
  validate(config, op);
  int64_t dx = config.inputDim, dy = config.outputDim, steps = config.observations + 1, width = dx + dy;
  if (inputs.dim() != 3 || inputs.size(1) != steps || inputs.size(2) != width)
    throw RuntimeError(op, "inputs must be [B, " + std::to_string(steps) + ", " + std::to_string(width) + "], got " +
                               inputs.describe());
  int64_t batch = inputs.size(0);
  Tensor data = inputs.to(DType::F64).contiguous();
  const double *in = data.data<double>();
  Tensor pred = Tensor::zeros({batch, dy}, DType::F64);
  double *p = pred.data<double>();
  for (int64_t b = 0; b < batch; ++b) {
    const double *query = in + (b * steps + steps - 1) * width;
    for (int64_t t = 0; t + 1 < steps; ++t) {
      const double *row = in + (b * steps + t) * width;
      double dot = 0;  // x_t^T x_{T+1}
      for (int64_t i = 0; i < dx; ++i) dot += row[i] * query[i];
      for (int64_t o = 0; o < dy; ++o) p[b * dy + o] += lr * row[dx + o] * dot;
    }
  }
  return pred.to(inputs.dtype());
}

double optimalGradientDescentRate(const InContextRegressionConfig &config) {
  validate(config, "optimalGradientDescentRate");
  return 1.0 / (static_cast<double>(config.observations) + static_cast<double>(config.inputDim) - 0.2);
}

}  // namespace scanforge::tasks
