// AdamW, gradient clipping, the learning-rate schedule and gradient accumulation.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "runtime/core/AdamW.h"
#include "runtime/core/Error.h"
#include "runtime/core/GradClip.h"
#include "runtime/core/LrSchedule.h"
#include "runtime/core/Ops.h"
#include "tests/runtime/GradCheck.h"

namespace scanforge::test {
namespace {

Variable scalarParam(double value) { return Variable(Tensor::full({1}, value, DType::F64), true); }

TEST(AdamW, TwoStepsMatchTheHandComputedUpdate) {
  // lr 0.1, betas (0.9, 0.999), eps 1e-8. x decays (weight decay 0.1), y does not (0).
  Variable x = scalarParam(1.0), y = scalarParam(-2.0);
  AdamW opt({{{{"x", x}}, 0.1}, {{{"y", y}}, 0.0}}, {0.1, 0.9, 0.999, 1e-8});

  // Step 1, g_x = 0.5: x = 1 * (1 - 0.1 * 0.1) = 0.99; m = 0.05, v = 0.00025; bias corrections
  // 0.1 and 0.001, so m_hat = 0.5 and sqrt(v_hat) = 0.5; x = 0.99 - 0.1 * 0.5 / (0.5 + 1e-8).
  // g_y = 1: y = -2 - 0.1 * 1 / (1 + 1e-8).
  x.setGrad(Tensor::full({1}, 0.5, DType::F64));
  y.setGrad(Tensor::full({1}, 1.0, DType::F64));
  opt.step();
  EXPECT_NEAR(x.item(), 0.99 - 0.1 * 0.5 / (0.5 + 1e-8), 1e-15);
  EXPECT_NEAR(x.item(), 0.890000002, 1e-15);
  EXPECT_NEAR(y.item(), -2.099999999, 1e-15);

  // Step 2, g_x = -0.25: x *= 0.99; m = 0.9 * 0.05 - 0.1 * 0.25 = 0.02;
  // v = 0.999 * 0.00025 + 0.001 * 0.0625 = 0.00031225; corrections 0.19 and 0.001999:
  // x = 0.88110000198 - 0.1 * (0.02 / 0.19) / (sqrt(0.00031225 / 0.001999) + 1e-8).
  // g_y = 3: m = 0.39, v = 0.009999: y = -2.099999999 - 0.1 * (0.39 / 0.19) / (sqrt(0.009999 / 0.001999) + 1e-8).
  x.setGrad(Tensor::full({1}, -0.25, DType::F64));
  y.setGrad(Tensor::full({1}, 3.0, DType::F64));
  opt.step();
  double x2 = 0.890000002 * 0.99 - 0.1 * (0.02 / 0.19) / (std::sqrt(0.00031225 / 0.001999) + 1e-8);
  double y2 = -2.099999999 - 0.1 * (0.39 / 0.19) / (std::sqrt(0.009999 / 0.001999) + 1e-8);
  EXPECT_NEAR(x.item(), x2, 1e-12);
  EXPECT_NEAR(y.item(), y2, 1e-12);
  // The same numbers from torch.optim.AdamW (PyTorch 1.13, float64).
  EXPECT_NEAR(x.item(), 0.8544662986878463, 1e-12);
  EXPECT_NEAR(y.item(), -2.1917781104876677, 1e-12);
}

TEST(AdamW, ParametersWithoutGradientsAreSkipped) {
  Variable x = scalarParam(1.0), y = scalarParam(1.0);
  AdamW opt({{{{"x", x}, {"y", y}}, 0.5}});
  x.setGrad(Tensor::full({1}, 1.0, DType::F64));
  opt.step();
  EXPECT_EQ(y.item(), 1.0) << "no gradient: no decay, no update";
  Checkpoint state;
  opt.saveState(state);
  EXPECT_EQ(state.metadata.at("adamw.x.step"), "1");
  EXPECT_EQ(state.metadata.at("adamw.y.step"), "0");
  opt.zeroGrad();
  EXPECT_FALSE(x.grad().defined());
}

TEST(AdamW, RejectsBadConfigurations) {
  Variable x = scalarParam(1.0);
  EXPECT_THROW(AdamW({{{{"x", x}, {"x", scalarParam(2)}}}}), RuntimeError);  // duplicate names
  EXPECT_THROW(AdamW({{{{"x", Variable(Tensor::zeros({1}, DType::F64))}}}}), RuntimeError);  // no gradients
  EXPECT_THROW(AdamW({{{{"x", x}}, -1.0}}), RuntimeError);
  EXPECT_THROW(AdamW({{{{"x", x}}}}, {0.1, 1.0}), RuntimeError);
  EXPECT_THROW(AdamW({{{{"x", x}}}}, {-0.1}), RuntimeError);
}

TEST(ClipGradNorm, ScalesToTheMaximumAndReturnsTheNorm) {
  Variable a(Tensor::zeros({2}, DType::F64), true), b(Tensor::zeros({1}, DType::F32), true);
  a.setGrad(Tensor::fromData<double>({2}, {3, 0}));
  b.setGrad(Tensor::fromData<float>({1}, {4}));
  std::vector<Parameter> params{{"a", a}, {"b", b}, {"unused", Variable(Tensor::zeros({1}, DType::F64), true)}};
  EXPECT_DOUBLE_EQ(clipGradNorm(params, 10), 5);
  EXPECT_EQ(a.grad().toDoubles(), (std::vector<double>{3, 0})) << "below the maximum: unchanged";
  EXPECT_DOUBLE_EQ(clipGradNorm(params, 1), 5);
  double factor = 1 / (5 + 1e-6);
  EXPECT_DOUBLE_EQ(a.grad().toDoubles()[0], 3 * factor);
  EXPECT_FLOAT_EQ(static_cast<float>(b.grad().toDoubles()[0]), static_cast<float>(4 * factor));
  EXPECT_THROW(clipGradNorm(params, 0), RuntimeError);
}

TEST(WarmupCosineSchedule, KeySteps) {
  WarmupCosineSchedule schedule(1e-3, 1e-5, 10, 110);
  EXPECT_DOUBLE_EQ(schedule.at(0), 1e-4);   // the first step already learns
  EXPECT_DOUBLE_EQ(schedule.at(4), 5e-4);
  EXPECT_DOUBLE_EQ(schedule.at(9), 1e-3);   // the end of warm-up reaches the peak
  EXPECT_DOUBLE_EQ(schedule.at(10), 1e-3);  // the cosine starts at the peak
  EXPECT_DOUBLE_EQ(schedule.at(60), (1e-3 + 1e-5) / 2);  // half way
  EXPECT_DOUBLE_EQ(schedule.at(35), 1e-5 + (1e-3 - 1e-5) * (1 + std::cos(std::numbers::pi / 4)) / 2);
  EXPECT_DOUBLE_EQ(schedule.at(110), 1e-5);
  EXPECT_DOUBLE_EQ(schedule.at(5000), 1e-5);
  EXPECT_DOUBLE_EQ(WarmupCosineSchedule(1, 0, 0, 4).at(0), 1);  // no warm-up
  EXPECT_THROW(WarmupCosineSchedule(1e-3, 1e-2, 10, 100), RuntimeError);
  EXPECT_THROW(WarmupCosineSchedule(1e-3, 0, 10, 5), RuntimeError);
  EXPECT_THROW(schedule.at(-1), RuntimeError);
}

// Two half batches, each loss scaled by 1/2, accumulate the gradient of the whole batch.
TEST(GradientAccumulation, HalfBatchesAddUpToTheFullBatch) {
  Generator gen(4);
  Variable w(randomTensor({5, 3}, DType::F64, gen), true);
  Tensor x = randomTensor({4, 3}, DType::F64, gen);
  Tensor targets = Tensor::fromData<int64_t>({4}, {0, 4, 2, 2});
  backward(crossEntropy(linear(Variable(x), w), targets));
  std::vector<double> full = w.grad().toDoubles();
  w.zeroGrad();
  for (int64_t half = 0; half < 2; ++half) {
    Variable logits = linear(Variable(x.slice(0, 2 * half, 2)), w);
    backward(scale(crossEntropy(logits, targets.slice(0, 2 * half, 2)), 0.5));
  }
  std::vector<double> accumulated = w.grad().toDoubles();
  for (size_t i = 0; i < full.size(); ++i) EXPECT_NEAR(accumulated[i], full[i], 1e-14);
}

}  // namespace
}  // namespace scanforge::test
