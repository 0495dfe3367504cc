// In-context linear regression (paper 001, section 5 and appendix C). Each sequence is its own task
// W* in R^{dy x dx}, W*_ij ~ N(0, weightVariance) (1/3 in training, 2/3 for the paper's validation).
// The sequence shows T observations (x_t, W* x_t), x_t entries ~ U(-sqrt 3, sqrt 3) (unit
// variance), then the query (x_{T+1}, 0); the model must output y_{T+1} = W* x_{T+1}.
#pragma once

#include <cstdint>

#include "models/data/SequenceBatch.h"
#include "runtime/core/Random.h"

namespace scanforge::tasks {

struct InContextRegressionConfig {
  int64_t inputDim = 3;      // dx
  int64_t outputDim = 3;     // dy
  int64_t observations = 12;  // T
  double weightVariance = 1.0 / 3;
};

// inputs [batch, T + 1, dx + dy] (row t < T is (x_t, W* x_t), row T is (x_{T+1}, 0)); targets
// [batch, dy] = W* x_{T+1}. dtype f32 or f64.
SequenceBatch sampleInContextRegression(const InContextRegressionConfig &config, int64_t batch, Generator &gen,
                                        DType dtype = DType::F32);

// The baseline the paper compares trained RNNs to: one gradient-descent step from W = 0 on the
// observations, yhat = lr * sum_t y_t x_t^T x_{T+1}, for inputs laid out as above; [batch, dy].
Tensor oneStepGradientDescent(const Tensor &inputs, const InContextRegressionConfig &config, double lr);

// Its optimal learning rate for unit-variance uniform x: 1 / (T + dx - 1/5) (paper 001, eq. 43).
double optimalGradientDescentRate(const InContextRegressionConfig &config);

}  // namespace scanforge::tasks
