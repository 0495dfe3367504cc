// Every op's backward against central finite differences in float64, and every op's float32
// forward and backward against its float64 result.
#include <gtest/gtest.h>

#include "runtime/core/Ops.h"
#include "tests/runtime/GradCheck.h"

namespace scanforge::test {
namespace {

struct OpCase {
  std::string name;
  std::vector<Shape> inputShapes;
  OpFn fn;
};

std::ostream &operator<<(std::ostream &os, const OpCase &c) { return os << c.name; }

// Ids and targets fixed across evaluations (repeats included, so that scatter-add is exercised).
Tensor ids() { return Tensor::fromData<int64_t>({2, 3}, {4, 0, 4, 6, 2, 4}); }
Tensor targets() { return Tensor::fromData<int64_t>({2, 3}, {1, kIgnoreIndex, 4, 0, 3, kIgnoreIndex}); }

// A small language-model block: a diamond-shaped tape (the residual stream is read twice) through
// most ops at once.
Variable block(const std::vector<Variable> &v) {
  Generator gen(5);
  Variable x = embedding(ids(), v[0]);                          // [2, 3, 4]
  Variable h = layerNorm(x, v[1], v[2]);
  h = gelu(linear(h, v[3], v[4]));                              // [2, 3, 6]
  std::vector<Variable> gates = split(h, {2, 4});
  h = mul(sigmoid(gates[0]), slice(gates[1], 1, 2));           // [2, 3, 2]
  h = add(x, linear(causalConv1d(h, v[5]), v[6]));              // residual, [2, 3, 4]
  h = dropout(rmsNorm(h, v[7]), 0.25, true, gen);
  return crossEntropy(linear(h, v[8]), targets());              // logits [2, 3, 5]
}

const std::vector<OpCase> &cases() {
  static const std::vector<OpCase> all = {
      {"add", {{2, 3, 4}, {2, 3, 4}}, [](const auto &v) { return add(v[0], v[1]); }},
      {"sub", {{2, 3, 4}, {2, 3, 4}}, [](const auto &v) { return sub(v[0], v[1]); }},
      {"mul", {{2, 3, 4}, {2, 3, 4}}, [](const auto &v) { return mul(v[0], v[1]); }},
      {"scale", {{3, 5}}, [](const auto &v) { return scale(v[0], -1.7); }},
      {"addBias", {{2, 3, 5}, {5}}, [](const auto &v) { return addBias(v[0], v[1]); }},
      {"sigmoid", {{4, 7}}, [](const auto &v) { return sigmoid(v[0]); }},
      {"tanh", {{4, 7}}, [](const auto &v) { return tanh(v[0]); }},
      {"silu", {{4, 7}}, [](const auto &v) { return silu(v[0]); }},
      {"gelu", {{4, 7}}, [](const auto &v) { return gelu(v[0]); }},
      {"matmul", {{3, 4}, {4, 5}}, [](const auto &v) { return matmul(v[0], v[1]); }},
      {"linear", {{2, 3, 4}, {5, 4}, {5}}, [](const auto &v) { return linear(v[0], v[1], v[2]); }},
      {"linearNoBias", {{3, 4}, {2, 4}}, [](const auto &v) { return linear(v[0], v[1]); }},
      {"layerNorm", {{3, 6}, {6}, {6}}, [](const auto &v) { return layerNorm(v[0], v[1], v[2]); }},
      {"rmsNorm", {{3, 6}, {6}}, [](const auto &v) { return rmsNorm(v[0], v[1]); }},
      {"causalConv1d", {{2, 6, 3}, {3, 4}, {3}}, [](const auto &v) { return causalConv1d(v[0], v[1], v[2]); }},
      {"causalConv1dShorterThanKernel", {{2, 2, 3}, {3, 4}}, [](const auto &v) { return causalConv1d(v[0], v[1]); }},
      {"embedding", {{7, 3}}, [](const auto &v) { return embedding(ids(), v[0]); }},
      {"dropout", {{4, 5}},
       [](const auto &v) {
         Generator gen(7);  // the same mask at every evaluation
         return dropout(v[0], 0.3, true, gen);
       }},
      {"reshape", {{2, 6}}, [](const auto &v) { return reshape(v[0], {3, -1}); }},
      {"slice", {{2, 3, 7}}, [](const auto &v) { return slice(v[0], 2, 3); }},
      {"splitPermuted", {{2, 7}},
       [](const auto &v) {
         std::vector<Variable> p = split(v[0], {2, 4, 1});
         return concat({p[2], p[0], p[1]});
       }},
      {"splitWithUnusedPiece", {{2, 7}}, [](const auto &v) { return split(v[0], {3, 4})[1]; }},
      {"concat", {{2, 3}, {2, 1}, {2, 4}}, [](const auto &v) { return concat({v[0], v[1], v[2]}); }},
      {"sum", {{3, 4}}, [](const auto &v) { return sum(v[0]); }},
      {"mean", {{3, 4}}, [](const auto &v) { return mean(v[0]); }},
      {"crossEntropy", {{2, 3, 5}}, [](const auto &v) { return crossEntropy(v[0], targets()); }},
      {"variableUsedTwice", {{3, 4}}, [](const auto &v) { return mul(v[0], tanh(v[0])); }},
      {"languageModelBlock", {{7, 4}, {4}, {4}, {6, 4}, {6}, {2, 4}, {4, 2}, {4}, {5, 4}}, block},
  };
  return all;
}

std::vector<Tensor> inputsFor(const OpCase &c, DType dtype) {
  Generator gen(2024);
  std::vector<Tensor> inputs;
  for (const Shape &shape : c.inputShapes) inputs.push_back(randomTensor(shape, dtype, gen));
  return inputs;
}

class OpGradient : public testing::TestWithParam<OpCase> {};

TEST_P(OpGradient, MatchesCentralDifferencesInFloat64) {
  expectGradientsMatchFiniteDifferences(GetParam().fn, inputsFor(GetParam(), DType::F64));
}

// Float32 accumulates rounding errors of ~1e-7 per operation; 1e-4 relative (plus 1e-5 absolute)
// bounds them for these sizes while catching a float32 path that computes something else.
TEST_P(OpGradient, Float32AgreesWithFloat64) {
  auto run = [&](DType dtype) {
    std::vector<Variable> vars;
    for (const Tensor &t : inputsFor(GetParam(), DType::F64)) vars.emplace_back(t.to(dtype), true);
    Variable out = GetParam().fn(vars);
    Generator gen(3);
    backward(out, randomTensor(out.shape(), dtype, gen));
    std::vector<std::vector<double>> results{out.value().toDoubles()};
    for (const Variable &v : vars) results.push_back(v.grad().toDoubles());
    return results;
  };
  std::vector<std::vector<double>> f64 = run(DType::F64), f32 = run(DType::F32);
  for (size_t k = 0; k < f64.size(); ++k)
    for (size_t i = 0; i < f64[k].size(); ++i)
      EXPECT_NEAR(f32[k][i], f64[k][i], 1e-5 + 1e-4 * std::abs(f64[k][i]))
          << (k == 0 ? "output" : "gradient of input " + std::to_string(k - 1)) << " element " << i;
}

INSTANTIATE_TEST_SUITE_P(Ops, OpGradient, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<OpCase> &info) { return info.param.name; });

}  // namespace
}  // namespace scanforge::test
