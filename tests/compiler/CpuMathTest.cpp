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
#include "compiler/mlir/Dialect/Scan/IR/Numerics.h"

namespace scanforge::test {
namespace {

struct ErrorStats {
  double maxUlps = 0, sumRelative = 0;
  float worst = 0;  // the argument of the largest error
  size_t n = 0;
  void add(float got, double want, float argument = 0) {
    double ulp = std::nextafter(std::fabs(static_cast<float>(want)), INFINITY) - std::fabs(static_cast<float>(want));
    if (std::fabs(got - want) / ulp > maxUlps) worst = argument;
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
recurrence math(x[d], p[d]) -> y[d], z[d], w[d], u[d], v[d] {
  s = 0.5 * s + x
  y = exp(x) + 0 * s
  z = log(p)
  w = softplus(x)
  u = sigmoid(x)
  v = sigmoid(-x)
}
)");
  Recurrence rec = module.recurrence();
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<float> exponent(-87.0f, 88.0f), logArgument(-80.0f, 80.0f);
  std::vector<float> x(T * d), p(T * d), y(T * d), z(T * d), w(T * d), u(T * d), v(T * d);
  for (int64_t i = 0; i < T * d; ++i) {
    x[i] = exponent(gen);
    p[i] = std::exp(logArgument(gen));  // log's arguments spread over 70 binades
  }
  std::vector<int64_t> shape = {1, T, d};
  rec.forward({{"x", {x.data(), shape}}, {"p", {p.data(), shape}}}, {}, {},
              {{"y", {y.data(), shape}}, {"z", {z.data(), shape}}, {"w", {w.data(), shape}}, {"u", {u.data(), shape}},
               {"v", {v.data(), shape}}},
              {}, nullptr);
  ErrorStats e, l, s, g;
  double tinySigmoidError = 0;  // where sigmoid is below the smallest normal float: absolute
  auto sigmoid = [&](float got, double x, ErrorStats &stats) {
    double want = 1.0 / (1.0 + std::exp(-x));
    if (want >= 1.17549435e-38) stats.add(got, want, static_cast<float>(x));
    else tinySigmoidError = std::max(tinySigmoidError, std::fabs(got - want));
  };
  for (int64_t i = 0; i < T * d; ++i) {
    e.add(y[i], std::exp(static_cast<double>(x[i])));
    double lp = std::log(static_cast<double>(p[i]));
    if (std::fabs(lp) > 1e-3) l.add(z[i], lp);  // near log(1) = 0 a relative error is meaningless
    double xd = x[i];
    s.add(w[i], std::max(xd, 0.0) + std::log1p(std::exp(-std::fabs(xd))));
    sigmoid(u[i], xd, g);
    sigmoid(v[i], -xd, g);
  }
  std::printf("[ math ] %zu arguments: exp max %.2f ulp, bias %.2e; log max %.2f ulp, bias %.2e; softplus max %.2f ulp, "
              "bias %.2e; sigmoid max %.2f ulp (at %g), bias %.2e\n",
              e.n, e.maxUlps, e.bias(), l.maxUlps, l.bias(), s.maxUlps, s.bias(), g.maxUlps, g.worst, g.bias());
  EXPECT_LE(e.maxUlps, 4.0);
  EXPECT_LE(l.maxUlps, 4.0);
  EXPECT_LE(s.maxUlps, 6.0);
  EXPECT_LE(g.maxUlps, 4.0);
  EXPECT_LE(tinySigmoidError, 1.17549435e-38);
  for (const ErrorStats *stats : {&e, &l, &s, &g}) EXPECT_LE(std::fabs(stats->bias()), 1e-8);
}

// minLSTM's normalised gates, sigmoid(softplus(a) - softplus(b)) and its complement, are one quotient
// (1 + e^a) / ((1 + e^a) + (1 + e^b)) without logarithms (compiler/halide/Math.cpp): within a few
// ulp of float64 and unbiased, with a and b from both tails (where softplus(a) - softplus(b) loses
// digits to cancellation) to near each other.
TEST(CpuMath, SigmoidOfSoftplusDifferenceIsOneAccurateQuotient) {
  const int64_t d = 1000, T = 1000;
  CompiledModule module = compileModuleSource("gates.scan", R"(
recurrence gates(a[d], b[d]) -> u[d], v[d] {
  r = softplus(a) - softplus(b)
  s = 0.5 * s + a
  u = sigmoid(r) + 0 * s
  v = sigmoid(-r)
}
)");
  Recurrence rec = module.recurrence();
  std::mt19937_64 gen(13);
  std::uniform_real_distribution<float> wide(-90.0f, 90.0f), near(-0.5f, 0.5f);
  std::vector<float> a(T * d), b(T * d), u(T * d), v(T * d);
  for (int64_t i = 0; i < T * d; ++i) {
    a[i] = wide(gen);
    b[i] = i % 2 ? wide(gen) : a[i] + near(gen);  // half of the pairs close together
  }
  std::vector<int64_t> shape = {1, T, d};
  rec.forward({{"a", {a.data(), shape}}, {"b", {b.data(), shape}}}, {}, {},
              {{"u", {u.data(), shape}}, {"v", {v.data(), shape}}}, {}, nullptr);
  ErrorStats g;
  // Where exp(-|d|) nears the smallest normal float (its lower clamp, Numerics.h), the quotient's
  // numerator does too, and a value below 2^-120 has an absolute error of up to two of them.
  const long double smallest = std::ldexp(1.0L, -120);
  double tinyError = 0;
  auto check = [&](float got, long double want, float argument) {
    if (want >= smallest) g.add(got, static_cast<double>(want), argument);
    else tinyError = std::max(tinyError, std::fabs(got - static_cast<double>(want)));
  };
  for (int64_t i = 0; i < T * d; ++i) {
    // (1 + e^a) / ((1 + e^a) + (1 + e^b)) in long double: no overflow below 90.
    long double pa = 1 + std::exp(static_cast<long double>(a[i])), pb = 1 + std::exp(static_cast<long double>(b[i]));
    check(u[i], pa / (pa + pb), a[i]);
    check(v[i], pb / (pa + pb), a[i]);
  }
  std::printf("[ math ] sigmoid(softplus(a) - softplus(b)), %zu values: max %.2f ulp (at a = %g), bias %.2e; "
              "below 2^-120: absolute error %.2g\n", g.n, g.maxUlps, g.worst, g.bias(), tinyError);
  EXPECT_LE(g.maxUlps, 4.0);
  EXPECT_LE(std::fabs(g.bias()), 1e-8);
  EXPECT_LE(tinyError, 2 * 1.17549435e-38);
}

// Decays close to 1 are exponentials of small negative numbers: a bias there compounds over
// every step of a long sequence (issue found at T = 10^5 with decay 1 - 1e-4).
TEST(CpuMath, ExpNearZeroIsUnbiased) {
  const int64_t d = 1000, T = 1000;
  CompiledModule module = compileModuleSource("near.scan", R"(
recurrence near(x[d]) -> y[d] {
  s = 0.5 * s + x
  y = exp(x) + 0 * s
}
)");
  Recurrence rec = module.recurrence();
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<float> small(-1e-3f, 0.0f);
  std::vector<float> x(T * d), y(T * d);
  for (float &v : x) v = small(gen);
  std::vector<int64_t> shape = {1, T, d};
  rec.forward({{"x", {x.data(), shape}}}, {}, {}, {{"y", {y.data(), shape}}}, {}, nullptr);
  ErrorStats e;
  for (int64_t i = 0; i < T * d; ++i) e.add(y[i], std::exp(static_cast<double>(x[i])));
  std::printf("[ math ] exp on [-1e-3, 0]: max %.2f ulp, bias %.2e\n", e.maxUlps, e.bias());
  EXPECT_LE(e.maxUlps, 1.0);
  EXPECT_LE(std::fabs(e.bias()), 5e-9);
}

// The NaN policy of the functions: NaN in, NaN out (of either sign); log's, sigmoid's and
// softplus's edges.
TEST(CpuMath, SpecialArguments) {
  CompiledModule module = compileModuleSource("edges.scan", R"(
recurrence edges(x[d], p[d]) -> y[d], z[d], u[d], v[d], w[d] {
  s = 0.5 * s + 1
  y = exp(x) + 0 * s
  z = log(p)
  u = sigmoid(x)
  v = sigmoid(-x)
  w = softplus(x)
}
)");
  Recurrence rec = module.recurrence();
  std::vector<float> x = {NAN, -INFINITY, INFINITY, -1000.0f, 1000.0f, 0.0f, 1e-40f, 1.0f, -NAN};
  std::vector<float> p = {NAN, 0.0f, INFINITY, -1.0f, 1e-40f, 1.0f, 1.17549435e-38f, 3.4e38f, 1.0f};
  std::vector<float> y(9), z(9), u(9), v(9), w(9);
  std::vector<int64_t> shape = {1, 1, 9};
  rec.forward({{"x", {x.data(), shape}}, {"p", {p.data(), shape}}}, {}, {},
              {{"y", {y.data(), shape}}, {"z", {z.data(), shape}}, {"u", {u.data(), shape}}, {"v", {v.data(), shape}},
               {"w", {w.data(), shape}}},
              {}, nullptr);
  for (int i : {0, 8}) {
    EXPECT_TRUE(std::isnan(y[i]) && std::isnan(u[i]) && std::isnan(v[i]) && std::isnan(w[i]))
        << i << ": " << y[i] << " " << u[i] << " " << v[i] << " " << w[i];
  }
  // sigmoid(-inf) and softplus(-inf): exp(-inf) clamped to exp(kExpArgMin), just above the smallest
  // normal float (Numerics.h).
  const double expFloor = std::exp(static_cast<double>(scan::kExpArgMin));
  EXPECT_GE(expFloor, 1.17549435e-38);
  EXPECT_LT(expFloor, 1.17549435e-38 * (1 + 1e-5));
  EXPECT_NEAR(u[1] / expFloor, 1.0, 1e-6);
  EXPECT_EQ(v[1], 1.0f);
  EXPECT_EQ(u[2], 1.0f);
  EXPECT_NEAR(v[2] / expFloor, 1.0, 1e-6);
  EXPECT_EQ(u[5], 0.5f);
  EXPECT_NEAR(w[1] / expFloor, 1.0, 1e-6);
  EXPECT_EQ(w[2], INFINITY);
  EXPECT_EQ(w[4], 1000.0f);
  EXPECT_NEAR(w[5], std::log(2.0), 1e-7);
  EXPECT_TRUE(std::isnan(y[0])) << y[0];
  EXPECT_NEAR(y[1] / expFloor, 1.0, 1e-6);  // clamped: the smallest result, normal
  // clamped: finite, k = 128 added to the exponent of e^r < 1 (Math.cpp)
  EXPECT_NEAR(y[2] / std::exp(static_cast<double>(scan::kExpArgMax)), 1.0, 1e-6);
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
