// The generated backward recurrence (run by the float64 reference interpreter) agrees with central
// finite differences of the forward, for every model, both directions, with and without an
// initial state, on odd shapes (T=1, T=37, D=1, N=3). Bound: relative error <= 1e-6 per tensor.
#include "tests/compiler/ModelHarness.h"

namespace scanforge::test {
namespace {

class GradientCheck : public ::testing::TestWithParam<ModelCase> {};

// Central difference of the loss in every element of `target`, which lives inside `in`.
Tensor numericGradient(scan::RecurrenceOp fwd, const Problem &p, const reference::RunInputs &in, Tensor &target) {
  Tensor grad(target.shape);
  for (size_t i = 0; i < target.data.size(); ++i) {
    double x = target.data[i];
    double h = 1e-6 * std::max(1.0, std::fabs(x));
    target.data[i] = x + h;
    double plus = loss(fwd, p, in);
    target.data[i] = x - h;
    double minus = loss(fwd, p, in);
    target.data[i] = x;
    grad.data[i] = (plus - minus) / (2 * h);
  }
  return grad;
}

// Compares one gradient tensor; remembers whether it was non-zero, so that every gradient is
// checked against a non-trivial value at least once (e.g. a decay's gradient is 0 at T=1, h0=0).
void expectClose(const Tensor &analytic, const Tensor &numeric, const std::string &what,
                 std::map<std::string, bool> &nonzero) {
  double norm = 0;
  for (double v : numeric.data) norm += v * v;
  nonzero[what] = nonzero[what] || norm > 0;
  EXPECT_LE(relativeError(analytic, numeric), 1e-6) << what;
}

void expectAllNonzero(const std::map<std::string, bool> &nonzero) {
  for (auto &[what, seen] : nonzero)
    EXPECT_TRUE(seen) << what << ": its gradient was zero in every case, so the check proved nothing";
}

void checkAll(scan::RecurrenceOp fwd, scan::RecurrenceOp bwd, const Problem &p, bool withInitial,
              std::map<std::string, bool> &nonzero) {
  reference::Gradients g = backwardGradients(fwd, bwd, p);
  reference::RunInputs in = p.in;
  for (auto &[name, t] : in.inputs) expectClose(g.inputs.at(name), numericGradient(fwd, p, in, t), "input " + name, nonzero);
  for (auto &[name, t] : in.params)
    expectClose(g.params.at(name), numericGradient(fwd, p, in, t), "parameter " + name, nonzero);
  if (withInitial)
    for (auto &[name, t] : in.initial)
      expectClose(g.initial.at(name), numericGradient(fwd, p, in, t), "initial state " + name, nonzero);
}

TEST_P(GradientCheck, BackwardMatchesFiniteDifferences) {
  const ModelCase &c = GetParam();
  auto compiled = compileReference(caseSource(c), c.model + ".scan");
  ASSERT_TRUE(compiled);
  const std::vector<Sizes> shapes = {
      {2, 1, {{"d", 3}, {"n", 3}, {"k", 3}, {"e", 2}}},
      {1, 37, {{"d", 2}, {"n", 3}, {"k", 3}, {"e", 2}}},
      {2, 5, {{"d", 1}, {"n", 3}, {"k", 1}, {"e", 1}}},
  };
  uint32_t seed = 1;
  std::map<std::string, bool> nonzero;
  for (const Sizes &sizes : shapes) {
    SCOPED_TRACE(describe(sizes));
    Problem p = randomProblem(compiled->forward, sizes, c.withInitial, seed++);
    checkAll(compiled->forward, compiled->backward, p, c.withInitial, nonzero);
  }
  expectAllNonzero(nonzero);
}

INSTANTIATE_TEST_SUITE_P(Models, GradientCheck, ::testing::ValuesIn(allModelCases()), caseName);

// A recurrence exercising every differentiable builtin, two states, a contraction, a parameter
// broadcast and an output that reads the previous state.
TEST(GradientCheckBuiltins, EveryFunctionDifferentiates) {
  const char *source = R"(
recurrence kitchen(a[d], x[d], c[n]; w[d, n]) -> y[d], h[d] {
  early = tanh(h) * x              # reads h_{t-1}
  e = exp(0.3 * a) + log(abs(x) + 1) + sqrt(abs(a) + 0.5) + silu(a) + relu(x) + softplus(x)
  h = sigmoid(a) * h + g(x) * where(a > x, min(a, x), max(a, x)) / (2 + abs(x))
  s[d, n] = 0.5 * s + w * c * e
  y = sum(n: s * c) + early + -h
}
)";
  auto compiled = compileReference(source, "kitchen.scan");
  ASSERT_TRUE(compiled);
  Sizes sizes{2, 6, {{"d", 3}, {"n", 2}}};
  Problem p = randomProblem(compiled->forward, sizes, /*withInitial=*/true, 7);
  std::map<std::string, bool> nonzero;
  checkAll(compiled->forward, compiled->backward, p, /*withInitial=*/true, nonzero);
  expectAllNonzero(nonzero);
}

}  // namespace
}  // namespace scanforge::test
