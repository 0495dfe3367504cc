// Saturation and non-finite inputs, per model, on the CPU backend against the float64 reference:
// pre-activations of +-100 and +-1e4, and inputs holding +inf, -inf and NaN. Wherever the
// sequential float64 math is finite and within float32's range, the backend's outputs, final
// states and gradients are finite; where a NaN input made it NaN, they are NaN (propagated). Where
// float64 overflows to +-inf the backend may saturate instead (exp clamps its argument,
// docs/dsl.md), and beyond float32's range float32 overflows, so those elements are not compared;
// where infinite inputs meet (inf - inf, 0 * inf) float64's NaN may be the backend's +-inf:
// non-finite either way, which is what is checked there.
#include <cfloat>
#include <cmath>

#include "compiler/mlir/Dialect/Scan/IR/Numerics.h"
#include "tests/compiler/CpuBuffers.h"

namespace scanforge::test {
namespace {

struct Scenario {
  std::string name;
  double scale;                // every input times this
  std::vector<double> specials;  // written over the first elements of every input
};

const std::vector<Scenario> &scenarios() {
  static const std::vector<Scenario> all = {
      {"pm100", 100.0, {}}, {"pm1e4", 1e4, {}}, {"inf", 1.0, {INFINITY, -INFINITY}}, {"nan", 1.0, {NAN}}};
  return all;
}

struct Counts {
  size_t compared = 0, nan = 0;
};

// Element by element: finite where the reference is finite, NaN where it is NaN.
void checkFiniteness(const std::string &what, const Tensor &got, const Tensor &want, bool nanInputs, Counts &counts) {
  for (size_t i = 0; i < want.data.size(); ++i) {
    double w = want.data[i], g = got.data[i];
    if (std::fabs(w) > FLT_MAX) continue;  // infinite, or beyond float32's range: overflows in any f32 math
    ++counts.compared;
    if (std::isnan(w)) {
      ++counts.nan;
      if (nanInputs) {
        EXPECT_TRUE(std::isnan(g)) << what << "[" << i << "]: the reference is NaN, the backend " << g;
      } else {
        EXPECT_FALSE(std::isfinite(g)) << what << "[" << i << "]: the reference is NaN, the backend " << g;
      }
    } else {
      EXPECT_TRUE(std::isfinite(g)) << what << "[" << i << "]: the reference is " << w << ", the backend " << g;
    }
  }
}

class Saturation : public ::testing::TestWithParam<std::string> {};

TEST_P(Saturation, FiniteWhereFloat64IsFiniteAndNaNOnlyWhereItIsNaN) {
  const std::string model = GetParam();
  std::string source = readModel(model);
  auto ref = compileReference(source, model + ".scan");
  ASSERT_TRUE(ref);
  Recurrence rec = compileSource(model + ".scan", source);
  const Sizes sizes{2, 9, {{"d", 5}, {"n", 3}, {"k", 3}, {"e", 2}}};
  for (const Scenario &scenario : scenarios()) {
    SCOPED_TRACE(model + " " + scenario.name);
    Problem p = randomProblem(ref->forward, sizes, /*withInitial=*/true, 17);
    for (auto &[name, t] : p.in.inputs) {
      for (double &v : t.data) v *= scenario.scale;
      for (size_t i = 0; i < scenario.specials.size() && i < t.data.size(); ++i) t.data[i] = scenario.specials[i];
    }
    reference::RunResult want = reference::run(ref->forward, p.in);
    reference::Gradients wantGrads = backwardGradients(ref->forward, ref->backward, p);

    Buffers buf = runForwardBackward(rec, p);

    Counts counts;
    bool nanInputs = scenario.name == "nan";
    for (auto &[name, t] : want.outputs) checkFiniteness("output " + name, buf.tensor("out." + name), t, nanInputs, counts);
    for (auto &[name, t] : want.finals) checkFiniteness("final " + name, buf.tensor("final." + name), t, nanInputs, counts);
    for (auto &[name, t] : wantGrads.inputs) checkFiniteness("input grad " + name, buf.tensor("dx." + name), t, nanInputs, counts);
    for (auto &[name, t] : wantGrads.params) checkFiniteness("param grad " + name, buf.tensor("dp." + name), t, nanInputs, counts);
    for (auto &[name, t] : wantGrads.initial)
      checkFiniteness("initial-state grad " + name, buf.tensor("dh0." + name), t, nanInputs, counts);
    EXPECT_GT(counts.compared, 0u);
    if (nanInputs) {
      EXPECT_GT(counts.nan, 0u) << "a NaN input reached nothing";
    }
    std::printf("[ saturation ] %s %s: %zu elements compared, %zu NaN in float64\n", model.c_str(),
                scenario.name.c_str(), counts.compared, counts.nan);
  }
}

// The derivatives of saturating gates keep their relative accuracy where the gate saturates: the
// CPU backward against the float64 reference backward, element by element, at pre-activations
// from -60 to 60 (1 - sigmoid(x) in float32 is 0 from x = 17 on; 1 - tanh(x)^2 from |x| = 9).
TEST(SaturatedGates, DerivativesKeepTheirRelativeAccuracy) {
  const std::string source = R"(recurrence sat(x[d], u[d]) -> y[d] {
  h = 0.5 * h + sigmoid(x) + tanh(u)
  y = h
}
)";
  auto ref = compileReference(source, "sat.scan");
  ASSERT_TRUE(ref);
  Recurrence rec = compileSource("sat.scan", source);
  const std::vector<double> at = {-60, -30, -17, -10, -5, -1, 0.5, 1, 5, 9, 10, 12, 15, 17, 20, 25, 30, 40, 60};
  const Sizes sizes{1, 3, {{"d", static_cast<int64_t>(at.size())}}};
  Problem p = randomProblem(ref->forward, sizes, /*withInitial=*/false, 5);
  for (const char *port : {"x", "u"}) {
    std::vector<double> &v = p.in.inputs.at(port).data;
    for (size_t i = 0; i < v.size(); ++i) v[i] = at[i % at.size()];
  }
  reference::Gradients want = backwardGradients(ref->forward, ref->backward, p);
  Buffers buf = runForwardBackward(rec, p);
  for (const char *port : {"x", "u"}) {
    Tensor got = buf.tensor(std::string("dx.") + port);
    const Tensor &exact = want.inputs.at(port);
    for (size_t i = 0; i < exact.data.size(); ++i) {
      double w = exact.data[i], g = got.data[i];
      if (std::fabs(w) < FLT_MIN) continue;  // below float32's normal range
      EXPECT_LE(std::fabs(g - w), 1e-5 * std::fabs(w)) << port << ".grad at " << port << " = " << at[i % at.size()]
                                                        << ": " << g << ", float64 " << w;
    }
  }
}

// Literals keep their place in the arithmetic: Halide's simplifier treats floats as reals and, left
// alone, rewrites 0.5 * h + e * 1e-30 as (e + h * 5e29) * 1e-30, whose sum overflows from the
// second step on. With exp clamped at kExpArgMax (exp = 3.4e38), h stays near 3.4e8 * (2 - 0.5^t).
TEST(SaturatedGates, LiteralsAreNotRefactoredIntoAnOverflow) {
  const std::string source = R"(recurrence exp_clamp(x[d]) -> h[d] {
  h = 0.5 * h + exp(x) * 1e-30
}
)";
  Recurrence rec = compileSource("exp_clamp.scan", source);
  const int64_t T = 9, D = 37;
  std::vector<float> x(T * D, 100.0f), h(T * D, -1.0f), start(D, 0.0f), final(D);
  TensorViews inputs{{"x", {x.data(), {1, T, D}, ElemType::F32}}};
  TensorViews initial{{"h", {start.data(), {1, D}, ElemType::F32}}};
  TensorViews outputs{{"h", {h.data(), {1, T, D}, ElemType::F32}}};
  TensorViews finals{{"h", {final.data(), {1, D}, ElemType::F32}}};
  rec.forward(inputs, {}, initial, outputs, finals, nullptr);
  const double term = std::exp(static_cast<double>(scan::kExpArgMax)) * static_cast<double>(1e-30f);
  double want = 0.0;
  for (int64_t t = 0; t < T; ++t) {
    want = 0.5 * want + term;
    for (int64_t d = 0; d < D; ++d)
      EXPECT_NEAR(h[t * D + d], want, 1e-5 * want) << "h at t = " << t << ", d = " << d;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Saturation, ::testing::ValuesIn(allModels()),
                         [](const ::testing::TestParamInfo<std::string> &info) { return info.param; });

}  // namespace
}  // namespace scanforge::test
