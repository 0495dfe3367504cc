// Forward values of the ops against hand-computed results, and their errors. (Backward passes are
// checked against finite differences in OpsGradientTest.)
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/core/Error.h"
#include "runtime/core/Ops.h"
#include "tests/runtime/ErrorOf.h"

namespace scanforge::test {
namespace {

Variable var(const Shape &shape, std::initializer_list<double> values) {
  return Variable(Tensor::fromData<double>(shape, values));
}

void expectValues(const Variable &v, const std::vector<double> &expected, double tol = 1e-12) {
  std::vector<double> got = v.value().toDoubles();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "element " << i;
}

// Runs `f` and returns the RuntimeError's message (failing the test if nothing is thrown).
TEST(OpsForward, Activations) {
  Variable x = var({4}, {-1, 0, 1, 2});
  expectValues(sigmoid(x), {0.2689414213699951, 0.5, 0.7310585786300049, 0.8807970779778823});
  expectValues(tanh(x), {-0.7615941559557649, 0, 0.7615941559557649, 0.9640275800758169});
  expectValues(silu(x), {-0.2689414213699951, 0, 0.7310585786300049, 1.7615941559557646});
  // The exact (erf) GELU, as torch.nn.functional.gelu(x) with approximate='none'.
  expectValues(gelu(x), {-0.15865525393145707, 0, 0.8413447460685429, 1.9544997361036416});
}

TEST(OpsForward, ArithmeticAndBias) {
  Variable a = var({2, 2}, {1, 2, 3, 4}), b = var({2, 2}, {0.5, -1, 2, 8});
  expectValues(add(a, b), {1.5, 1, 5, 12});
  expectValues(sub(a, b), {0.5, 3, 1, -4});
  expectValues(mul(a, b), {0.5, -2, 6, 32});
  expectValues(scale(a, -2), {-2, -4, -6, -8});
  expectValues(addBias(a, var({2}, {10, 20})), {11, 22, 13, 24});
}

TEST(OpsForward, LinearIsXTimesWeightTransposedPlusBias) {
  Variable x = var({2, 2}, {1, 2, 3, 4});
  Variable w = var({3, 2}, {1, 0, 0, 1, 1, 1});
  expectValues(linear(x, w, var({3}, {0.5, -1, 0})), {1.5, 1, 3, 3.5, 3, 7});
  expectValues(linear(x, w), {1, 2, 3, 3, 4, 7});
  expectValues(matmul(x, var({2, 3}, {1, 0, 2, 0, 1, 3})), {1, 2, 8, 3, 4, 18});
}

TEST(OpsForward, LinearFlattensLeadingDimensions) {
  Variable y = linear(var({2, 1, 2}, {1, 2, 3, 4}), var({1, 2}, {1, 1}));
  EXPECT_EQ(y.shape(), (Shape{2, 1, 1}));
  expectValues(y, {3, 7});
}

TEST(OpsForward, Norms) {
  Variable x = var({1, 3}, {1, 2, 3});
  double s = std::sqrt(1.5);  // (x - 2) / sqrt(2/3)
  expectValues(layerNorm(x, var({3}, {1, 1, 1}), var({3}, {0, 0, 0}), 1e-300), {-s, 0, s});
  expectValues(layerNorm(x, var({3}, {2, 2, 2}), var({3}, {1, 1, 1}), 1e-300), {1 - 2 * s, 1, 1 + 2 * s});
  double rms = std::sqrt((9.0 + 16.0) / 2);
  expectValues(rmsNorm(var({1, 2}, {3, 4}), var({2}, {1, 2}), 1e-300), {3 / rms, 8 / rms});
}

TEST(OpsForward, CausalConvUsesOnlyThePast) {
  // y_t = 0.4 x_t + 0.3 x_{t-1} + 0.2 x_{t-2} + 0.1 x_{t-3} + 1
  Variable w = var({1, 4}, {0.1, 0.2, 0.3, 0.4}), b = var({1}, {1});
  expectValues(causalConv1d(var({1, 5, 1}, {1, 2, 3, 4, 5}), w, b), {1.4, 2.1, 3.0, 4.0, 5.0});
  // Changing x_3 leaves y_0 .. y_2 alone.
  expectValues(causalConv1d(var({1, 5, 1}, {1, 2, 3, 40, 5}), w, b), {1.4, 2.1, 3.0, 18.4, 15.8});
}

TEST(OpsForward, CausalConvChannelsAndBatchesAreIndependent) {
  // Two channels with different taps, two batch rows that must not leak into each other.
  Variable x = var({2, 2, 2}, {1, 10, 2, 20, 3, 30, 4, 40});
  Variable w = var({2, 2}, {1, 0, 0, 1});  // channel 0: y = x_{t-1}; channel 1: y = x_t
  expectValues(causalConv1d(x, w), {0, 10, 1, 20, 0, 30, 3, 40});
}

TEST(OpsForward, EmbeddingGathersRows) {
  Variable table = var({3, 2}, {0, 1, 10, 11, 20, 21});
  Variable y = embedding(Tensor::fromData<int64_t>({2, 2}, {2, 0, 1, 2}), table);
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  expectValues(y, {20, 21, 0, 1, 10, 11, 20, 21});
  std::string message = errorOf([&] { embedding(Tensor::fromData<int64_t>({2}, {1, 3}), table); });
  EXPECT_NE(message.find("id 3 at flat position 1"), std::string::npos) << message;
  EXPECT_NE(message.find("3 rows"), std::string::npos) << message;
}

TEST(OpsForward, DropoutScalesKeptValuesAndIsIdentityAtEvaluation) {
  Variable x(Tensor::full({10000}, 2.0, DType::F32));
  Generator gen(1);
  EXPECT_EQ(dropout(x, 0.5, false, gen).value().data<float>(), x.value().data<float>());
  EXPECT_EQ(dropout(x, 0.0, true, gen).value().data<float>(), x.value().data<float>());
  EXPECT_EQ(gen.state(), Generator(1).state()) << "evaluation must not draw random numbers";

  std::vector<double> y = dropout(x, 0.25, true, gen).value().toDoubles();
  int64_t zeros = 0;
  for (double v : y) {
    if (v == 0) ++zeros;
    else EXPECT_FLOAT_EQ(v, 2.0 / 0.75);
  }
  EXPECT_NEAR(static_cast<double>(zeros) / 10000, 0.25, 0.02);  // 4.6 standard deviations
  Generator a(9), b(9);
  EXPECT_EQ(dropout(x, 0.25, true, a).value().toDoubles(), dropout(x, 0.25, true, b).value().toDoubles());
  EXPECT_NE(errorOf([&] { dropout(x, 1.0, true, gen); }).find("[0, 1)"), std::string::npos);
}

TEST(OpsForward, CrossEntropyAveragesOverTargetsThatAreNotIgnored) {
  Variable logits = var({3, 3}, {0, 0, 0, 1, 2, 3, 5, 5, 5});
  // Row 0: log 3. Row 1: logsumexp(1, 2, 3) - 1. Row 2: ignored.
  double row1 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 1;
  Variable loss = crossEntropy(logits, Tensor::fromData<int64_t>({3}, {1, 0, kIgnoreIndex}));
  EXPECT_NEAR(loss.item(), (std::log(3.0) + row1) / 2, 1e-12);
  Variable none = crossEntropy(logits, Tensor::fromData<int64_t>({3}, {-1, -1, -1}), -1);
  EXPECT_EQ(none.item(), 0.0);
  std::string message = errorOf([&] { crossEntropy(logits, Tensor::fromData<int64_t>({3}, {0, 7, 1})); });
  EXPECT_NE(message.find("target 7 at flat position 1"), std::string::npos) << message;
  message = errorOf([&] { crossEntropy(logits, Tensor::fromData<int64_t>({2}, {0, 1})); });
  EXPECT_NE(message.find("targets must have shape [3]"), std::string::npos) << message;
}

TEST(OpsForward, CrossEntropyIsStableForLargeLogits) {
  Variable logits = var({1, 2}, {1000, 0});
  EXPECT_NEAR(crossEntropy(logits, Tensor::fromData<int64_t>({1}, {1})).item(), 1000, 1e-9);
}

TEST(OpsForward, Reductions) {
  Variable x = var({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(sum(x).shape(), Shape{});
  EXPECT_EQ(sum(x).item(), 21);
  EXPECT_EQ(mean(x).item(), 3.5);
}

TEST(OpsForward, SplitSliceConcatReshape) {
  Variable x = var({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<Variable> pieces = split(x, {1, 2});
  expectValues(pieces[0], {1, 4});
  expectValues(pieces[1], {2, 3, 5, 6});
  expectValues(slice(x, 1, 1), {2, 5});
  expectValues(concat({pieces[1], pieces[0]}), {2, 3, 1, 5, 6, 4});
  EXPECT_EQ(reshape(x, {3, 2}).shape(), (Shape{3, 2}));
  EXPECT_NE(errorOf([&] { split(x, {1, 1}); }).find("do not add up"), std::string::npos);
  EXPECT_NE(errorOf([&] { slice(x, 2, 2); }).find("[2, 4)"), std::string::npos);
  EXPECT_NE(errorOf([&] { concat({x, var({3, 1}, {1, 2, 3})}); }).find("all dimensions but the last"), std::string::npos);
}

TEST(OpsForward, ErrorsNameTheOpAndTheShapes) {
  Variable a = var({2, 3}, {1, 2, 3, 4, 5, 6}), b = var({3, 2}, {1, 2, 3, 4, 5, 6});
  std::string message = errorOf([&] { add(a, b); });
  EXPECT_EQ(message.rfind("add: ", 0), 0u) << message;
  EXPECT_NE(message.find("f64 [2, 3]"), std::string::npos) << message;
  EXPECT_NE(message.find("f64 [3, 2]"), std::string::npos) << message;

  message = errorOf([&] { linear(a, var({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})); });
  EXPECT_EQ(message.rfind("linear: weight must be [N, 3]", 0), 0u) << message;

  message = errorOf([&] { mul(a, Variable(a.value().to(DType::F32))); });
  EXPECT_NE(message.find("convert one with .to()"), std::string::npos) << message;

  message = errorOf([&] { sigmoid(Variable(a.value().to(DType::BF16))); });
  EXPECT_NE(message.find("bf16 is a storage type"), std::string::npos) << message;

  message = errorOf([&] { layerNorm(a, var({2}, {1, 1}), var({3}, {0, 0, 0})); });
  EXPECT_NE(message.find("gamma must have shape [3]"), std::string::npos) << message;

  message = errorOf([&] { causalConv1d(a, var({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})); });
  EXPECT_NE(message.find("input must be [B, T, C]"), std::string::npos) << message;
}

}  // namespace
}  // namespace scanforge::test
