// The vectorised f32 GELU kernels against float64 libm, over every float spacing of 1e-5 in
// [-14, 14] and the special values, and the f32 gelu op wired to them (forward and backward).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "runtime/core/Ops.h"
#include "runtime/core/ops/ActivationKernels.h"

namespace scanforge::test {
namespace {

double cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }
double density(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi); }

std::vector<float> grid() {
  std::vector<float> x;
  for (int64_t i = -1400000; i <= 1400000; ++i) x.push_back(static_cast<float>(i * 1e-5));
  return x;
}

// Relative errors: GELU's against its value; the slope Phi + x phi crosses zero (x = -0.75), so its
// error is taken against |Phi| + |x phi|. Below x = -8.485 (erfc(6) / 2 = 1e-17) Phi is 0.
TEST(ActivationKernels, GeluWithinHalfAMillionthOfFloat64) {
  std::vector<float> x = grid(), y(x.size()), slope(x.size()), ones(x.size(), 1.0f);
  kernels::geluForward(x.data(), y.data(), static_cast<int64_t>(x.size()));
  kernels::geluBackward(ones.data(), x.data(), slope.data(), static_cast<int64_t>(x.size()));
  double worstValue = 0, worstSlope = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double v = x[i];
    if (v < -8.485) {
      EXPECT_LE(std::fabs(y[i]), 1e-16 * std::fabs(v)) << "x = " << v;
      EXPECT_LE(std::fabs(slope[i]), 1e-15) << "x = " << v;
      continue;
    }
    double value = v * cdf(v), scale = std::fabs(cdf(v)) + std::fabs(v * density(v));
    if (value != 0) worstValue = std::max(worstValue, std::fabs(y[i] - value) / std::fabs(value));
    worstSlope = std::max(worstSlope, std::fabs(slope[i] - (cdf(v) + v * density(v))) / scale);
  }
  EXPECT_LT(worstValue, 5e-7);  // measured 4.4e-7 (3.7 ulp), at x = -1.86
  EXPECT_LT(worstSlope, 5e-7);
  EXPECT_GT(worstValue, 0.0);   // not libm's own values: the kernel ran
}

TEST(ActivationKernels, GeluSpecialValues) {
  constexpr float kInf = std::numeric_limits<float>::infinity(), kNaN = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {0.0f, -0.0f, 1e-40f, -1e-40f, kInf, -kInf, kNaN, 1e30f, -1e30f}, ones(x.size(), 1.0f);
  std::vector<float> y(x.size()), slope(x.size());
  kernels::geluForward(x.data(), y.data(), static_cast<int64_t>(x.size()));
  kernels::geluBackward(ones.data(), x.data(), slope.data(), static_cast<int64_t>(x.size()));
  std::vector<float> wantY = {0.0f, -0.0f, 5e-41f, -5e-41f, kInf, kNaN, kNaN, 1e30f, -0.0f};
  std::vector<float> wantSlope = {0.5f, 0.5f, 0.5f, 0.5f, 1.0f, 0.0f, kNaN, 1.0f, 0.0f};
  for (size_t i = 0; i < x.size(); ++i) {
    SCOPED_TRACE("x = " + std::to_string(x[i]));
    if (std::isnan(wantY[i])) EXPECT_TRUE(std::isnan(y[i])); else if (std::isinf(wantY[i])) EXPECT_EQ(y[i], wantY[i]); else EXPECT_NEAR(y[i], wantY[i], 3e-45f);
    if (std::isnan(wantSlope[i])) EXPECT_TRUE(std::isnan(slope[i])); else EXPECT_EQ(slope[i], wantSlope[i]);
  }
}

// Lengths around the vector width: the partial last vector, and nothing beyond n written.
TEST(ActivationKernels, GeluPartialVectors) {
  for (int64_t n : {1, 15, 16, 17, 33}) {
    std::vector<float> x(n), g(n), y(n + 1, 7.0f), dx(n + 1, 7.0f);
    for (int64_t i = 0; i < n; ++i) x[i] = 0.37f * static_cast<float>(i) - 3.0f, g[i] = 1.0f + 0.01f * static_cast<float>(i);
    kernels::geluForward(x.data(), y.data(), n);
    kernels::geluBackward(g.data(), x.data(), dx.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(y[i], x[i] * cdf(x[i]), 1e-6) << "n = " << n << ", i = " << i;
      EXPECT_NEAR(dx[i], g[i] * (cdf(x[i]) + x[i] * density(x[i])), 1e-6) << "n = " << n << ", i = " << i;
    }
    EXPECT_EQ(y[n], 7.0f);
    EXPECT_EQ(dx[n], 7.0f);
  }
}

// The f32 op runs the kernels, forward and backward: its values are theirs bit for bit (libm's
// erff would differ in the last bits), and as close to f64 as the kernels are.
TEST(ActivationKernels, GeluOpOnF32UsesThem) {
  std::vector<float> values = {-3.0f, -1.86f, -0.75f, 0.0f, 0.3f, 0.5f, 2.0f, 9.0f}, ones(values.size(), 1.0f);
  std::vector<float> kernelY(values.size()), kernelSlope(values.size());
  kernels::geluForward(values.data(), kernelY.data(), static_cast<int64_t>(values.size()));
  kernels::geluBackward(ones.data(), values.data(), kernelSlope.data(), static_cast<int64_t>(values.size()));
  Variable x(Tensor::fromData<float>({2, 4}, values), true);
  Variable y = gelu(x);
  backward(sum(y));
  std::vector<double> got = y.value().toDoubles(), slope = x.grad().toDoubles();
  for (size_t i = 0; i < values.size(); ++i) {
    double v = values[i];
    EXPECT_EQ(static_cast<float>(got[i]), kernelY[i]) << "x = " << v;
    EXPECT_EQ(static_cast<float>(slope[i]), kernelSlope[i]) << "x = " << v;
    EXPECT_NEAR(got[i], v * cdf(v), 5e-7 * std::fabs(v * cdf(v)) + 1e-30) << "x = " << v;
    EXPECT_NEAR(slope[i], cdf(v) + v * density(v), 5e-7) << "x = " << v;
  }
}

}  // namespace
}  // namespace scanforge::test
