// The seeded generator: a fixed stream per seed, restorable state, and sane distributions.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/core/Error.h"
#include "runtime/core/Random.h"

namespace scanforge::test {
namespace {

TEST(Random, StreamIsFixedBySeed) {
  // xoshiro256** seeded with splitmix64(42), from an independent Python implementation of both.
  Generator gen(42);
  EXPECT_EQ(gen.nextU64(), 0x15780b2e0c2ec716ull);
  EXPECT_EQ(gen.nextU64(), 0x6104d9866d113a7eull);
  EXPECT_EQ(gen.nextU64(), 0xae17533239e499a1ull);
}

TEST(Random, SameSeedSameNumbersOtherSeedOtherNumbers) {
  Generator a(7), b(7), c(8);
  for (int i = 0; i < 100; ++i) {
    double x = a.normal();
    EXPECT_EQ(x, b.normal());
    EXPECT_NE(x, c.normal());
  }
}

TEST(Random, SavedStateContinuesTheStream) {
  Generator gen(3);
  for (int i = 0; i < 10; ++i) gen.uniform();
  std::string state = gen.state();
  std::vector<double> expected;
  for (int i = 0; i < 20; ++i) expected.push_back(i % 2 ? gen.normal() : gen.uniform());
  Generator resumed(12345);
  resumed.setState(state);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(i % 2 ? resumed.normal() : resumed.uniform(), expected[static_cast<size_t>(i)]);
}

TEST(Random, MalformedStatesAreRejected) {
  Generator gen(1);
  std::string good = gen.state();
  for (std::string bad : {std::string("mt19937 1 2 3 4"), good.substr(0, good.size() - 1), good + " 00",
                          std::string("xoshiro256** 0000000000000000 0000000000000000 0000000000000000 0000000000000000"),
                          std::string("xoshiro256** 000000000000000g 0000000000000000 0000000000000000 0000000000000001")}) {
    EXPECT_THROW(gen.setState(bad), RuntimeError) << bad;
    EXPECT_EQ(gen.state(), good) << "a rejected state must leave the generator unchanged";
  }
}

// 100,000 draws: the standard error of a mean is ~0.003, so 0.02 bounds are > 6 sigma.
TEST(Random, UniformAndNormalMoments) {
  Generator gen(11);
  const int n = 100000;
  double su = 0, sn = 0, sn2 = 0, lo = 1, hi = 0;
  for (int i = 0; i < n; ++i) {
    double u = gen.uniform(), z = gen.normal();
    su += u;
    sn += z;
    sn2 += z * z;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  EXPECT_NEAR(su / n, 0.5, 0.02);
  EXPECT_GE(lo, 0.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_NEAR(sn / n, 0.0, 0.02);
  EXPECT_NEAR(sn2 / n, 1.0, 0.02);
}

TEST(Random, UniformIntCoversItsRangeEvenly) {
  Generator gen(5);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 30000; ++i) ++counts[gen.uniformInt(3)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);  // ~5 standard deviations
  EXPECT_THROW(gen.uniformInt(0), RuntimeError);
}

TEST(Random, FillsTensorsOfEveryFloatType) {
  for (DType dtype : {DType::F32, DType::F64, DType::BF16}) {
    Tensor t = Tensor::empty({1000}, dtype);
    Generator gen(2);
    fillUniform(t, -3, -1, gen);
    for (double v : t.toDoubles()) {
      EXPECT_GE(v, -3);
      EXPECT_LE(v, -1);  // bf16 rounding may reach the upper bound
    }
    fillNormal(t, 5, 0.1, gen);
    double mean = 0;
    for (double v : t.toDoubles()) mean += v / 1000;
    EXPECT_NEAR(mean, 5, 0.05);
  }
  Generator gen(2);
  EXPECT_THROW(fillNormal(Tensor::zeros({2}, DType::I64), 0, 1, gen), RuntimeError);
  EXPECT_THROW(fillUniform(Tensor::zeros({2}, DType::F32), 1, 1, gen), RuntimeError);
}

}  // namespace
}  // namespace scanforge::test
