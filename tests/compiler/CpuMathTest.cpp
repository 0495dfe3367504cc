// exp, log and softplus as the CPU backend computes them (through a compiled recurrence, so in
// the vectorised code users run) against float64 on random float32 arguments: at most a few ulp,
// and no systematic bias (the mean signed relative error, which compounds over long sequences).
// SCANFORGE_MATH_SAMPLES sets the number of arguments (default 10^6; the note on accuracy in
// docs/cpu.md used 10^8).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "compiler/api/CompiledModule.h"

namespace scanforge::test {
namespace {

struct ErrorStats {
  double maxUlps = 0, sumRelative = 0;
  size_t n = 0;
  void add(float got, double want) {
    double ulp = std::nextafter(std::fabs(static_cast<float>(want)), INFINITY) - std::fabs(static_cast<float>(want));
    maxUlps = std::max(maxUlps, std::fabs(got - want) / ulp);
    sumRelative += (got - want) / std::fabs(want);
    ++n;
  }
  double bias() const { return sumRelative / static_cast<double>(n); }
};

TEST(CpuMath, ExpLogAndSoftplusAreAccurateAndUnbiased) {
  const char *samplesEnv = std::getenv("SCANFORGE_MATH_SAMPLES");
  const int64_t samples = samplesEnv ? std::atoll(samplesEnv) : 1000000, d = 1000, T = (samples + d - 1) / d;
  CompiledModule module = compileModuleSource("math.scan", R"(
recurrence math(x[d], p[d]) -> y[d], z[d], w[d] {
  s = 0.5 * s + x
  y = exp(x) + 0 * s
  z = log(p)
  w = softplus(x)
}
)");
  Recurrence rec = module.recurrence();
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<float> exponent(-87.0f, 88.0f), logArgument(-80.0f, 80.0f);
  std::vector<float> x(T * d), p(T * d), y(T * d), z(T * d), w(T * d);
  for (int64_t i = 0; i < T * d; ++i) {
    x[i] = exponent(gen);
    p[i] = std::exp(logArgument(gen));  // log's arguments spread over 70 binades
  }
  std::vector<int64_t> shape = {1, T, d};
  rec.forward({{"x", {x.data(), shape}}, {"p", {p.data(), shape}}}, {}, {},
              {{"y", {y.data(), shape}}, {"z", {z.data(), shape}}, {"w", {w.data(), shape}}}, {}, nullptr);
  ErrorStats e, l, s;
  for (int64_t i = 0; i < T * d; ++i) {
    e.add(y[i], std::exp(static_cast<double>(x[i])));
    double lp = std::log(static_cast<double>(p[i]));
    if (std::fabs(lp) > 1e-3) l.add(z[i], lp);  // near log(1) = 0 a relative error is meaningless
    double xd = x[i];
    s.add(w[i], std::max(xd, 0.0) + std::log1p(std::exp(-std::fabs(xd))));
  }
  std::printf("[ math ] %zu arguments: exp max %.2f ulp, bias %.2e; log max %.2f ulp, bias %.2e; softplus max %.2f ulp, "
              "bias %.2e\n",
              e.n, e.maxUlps, e.bias(), l.maxUlps, l.bias(), s.maxUlps, s.bias());
  EXPECT_LE(e.maxUlps, 4.0);
  EXPECT_LE(l.maxUlps, 4.0);
  EXPECT_LE(s.maxUlps, 6.0);
  for (const ErrorStats *stats : {&e, &l, &s}) EXPECT_LE(std::fabs(stats->bias()), 1e-8);
}

// The NaN policy of the functions: NaN in, NaN out; log's edges.
TEST(CpuMath, SpecialArguments) {
  CompiledModule module = compileModuleSource("edges.scan", R"(
recurrence edges(x[d], p[d]) -> y[d], z[d] {
  s = 0.5 * s + 1
  y = exp(x) + 0 * s
  z = log(p)
}
)");
  Recurrence rec = module.recurrence();
  std::vector<float> x = {NAN, -INFINITY, INFINITY, -1000.0f, 1000.0f, 0.0f, 1e-40f, 1.0f};
  std::vector<float> p = {NAN, 0.0f, INFINITY, -1.0f, 1e-40f, 1.0f, 1.17549435e-38f, 3.4e38f};
  std::vector<float> y(8), z(8);
  std::vector<int64_t> shape = {1, 1, 8};
  rec.forward({{"x", {x.data(), shape}}, {"p", {p.data(), shape}}}, {}, {}, {{"y", {y.data(), shape}}, {"z", {z.data(), shape}}},
              {}, nullptr);
  EXPECT_TRUE(std::isnan(y[0])) << y[0];
  EXPECT_NEAR(y[1] / std::exp(-87.3365478515625), 1.0, 1e-6);  // clamped: the smallest normal result
  EXPECT_NEAR(y[2], 3.4e38f, 1e36f);               // clamped: finite
  EXPECT_EQ(y[5], 1.0f);
  EXPECT_EQ(y[6], 1.0f);
  EXPECT_EQ(y[7], std::exp(1.0f));
  EXPECT_TRUE(std::isnan(z[0]));
  EXPECT_EQ(z[1], -INFINITY);
  EXPECT_EQ(z[2], INFINITY);
  EXPECT_TRUE(std::isnan(z[3]));
  EXPECT_NEAR(z[4], std::log(1e-40), 1e-5);  // a subnormal argument
  EXPECT_EQ(z[5], 0.0f);
  EXPECT_NEAR(z[6], std::log(1.17549435e-38), 1e-5);
  EXPECT_NEAR(z[7], std::log(3.4e38), 1e-5);
}

}  // namespace
}  // namespace scanforge::test
