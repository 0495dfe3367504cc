// The reference interpreter's forward pass against direct, hand-written C++ loops of the same math,
// for every model in models/, both directions, with and without an initial state.
#include <functional>

#include "tests/compiler/ModelHarness.h"

namespace scanforge::test {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double softplus(double x) { return std::log1p(std::exp(x)); }
double g(double x) { return x >= 0 ? x + 0.5 : sigmoid(x); }

// Reads and writes [B, T, X...] tensors by (b, t, flat inner index).
struct Seq {
  const Tensor &t;
  double operator()(int64_t b, int64_t s, int64_t i) const {
    int64_t inner = static_cast<int64_t>(t.data.size()) / (t.shape[0] * t.shape[1]);
    return t.data[(b * t.shape[1] + s) * inner + i];
  }
};

using HandLoop = std::function<void(const reference::RunInputs &, int64_t B, int64_t T, bool reverse,
                                    reference::RunResult &)>;

// Runs `step(b, t, state)` over time in the given direction, starting from the initial state.
template <typename Step>
void scanTime(const reference::RunInputs &in, const std::string &state, size_t size, int64_t B, int64_t T,
              bool reverse, reference::RunResult &out, Step step) {
  Tensor final({B, static_cast<int64_t>(size)});
  for (int64_t b = 0; b < B; ++b) {
    std::vector<double> s(size, 0.0);
    if (in.initial.count(state))
      for (size_t i = 0; i < size; ++i) s[i] = in.initial.at(state).data[b * size + i];
    for (int64_t i = 0; i < T; ++i) step(b, reverse ? T - 1 - i : i, s);
    std::copy(s.begin(), s.end(), final.data.begin() + b * size);
  }
  final.shape = out.finals.at(state).shape;
  out.finals[state] = final;
}

std::map<std::string, HandLoop> handLoops() {
  std::map<std::string, HandLoop> loops;
  loops["mingru"] = [](const reference::RunInputs &in, int64_t B, int64_t T, bool rev, reference::RunResult &out) {
    Seq k{in.inputs.at("k")}, u{in.inputs.at("u")};
    Tensor &h = out.outputs["h"];
    int64_t D = h.shape[2];
    scanTime(in, "h", D, B, T, rev, out, [&](int64_t b, int64_t t, std::vector<double> &s) {
      for (int64_t d = 0; d < D; ++d) {
        double z = sigmoid(k(b, t, d));
        s[d] = (1 - z) * s[d] + z * g(u(b, t, d));
        h.data[(b * T + t) * D + d] = s[d];
      }
    });
  };
  loops["minlstm"] = [](const reference::RunInputs &in, int64_t B, int64_t T, bool rev, reference::RunResult &out) {
    Seq f{in.inputs.at("f")}, i{in.inputs.at("i")}, u{in.inputs.at("u")};
    Tensor &h = out.outputs["h"];
    int64_t D = h.shape[2];
    scanTime(in, "h", D, B, T, rev, out, [&](int64_t b, int64_t t, std::vector<double> &s) {
      for (int64_t d = 0; d < D; ++d) {
        double fs = sigmoid(f(b, t, d)), is = sigmoid(i(b, t, d));
        s[d] = fs / (fs + is) * s[d] + is / (fs + is) * g(u(b, t, d));
        h.data[(b * T + t) * D + d] = s[d];
      }
    });
  };
  loops["selective_ssm"] = [](const reference::RunInputs &in, int64_t B, int64_t T, bool rev, reference::RunResult &out) {
    Seq x{in.inputs.at("x")}, dt{in.inputs.at("dt")}, Bn{in.inputs.at("B")}, C{in.inputs.at("C")};
    const Tensor &A = in.params.at("A"), &Dp = in.params.at("D");
    Tensor &y = out.outputs["y"];
    int64_t D = A.shape[0], N = A.shape[1];
    scanTime(in, "s", D * N, B, T, rev, out, [&](int64_t b, int64_t t, std::vector<double> &s) {
      for (int64_t d = 0; d < D; ++d) {
        double delta = softplus(dt(b, t, d)), acc = 0;
        for (int64_t n = 0; n < N; ++n) {
          double &sdn = s[d * N + n];
          sdn = std::exp(delta * A.data[d * N + n]) * sdn + delta * Bn(b, t, n) * x(b, t, d);
          acc += C(b, t, n) * sdn;
        }
        y.data[(b * T + t) * D + d] = acc + Dp.data[d] * x(b, t, d);
      }
    });
  };
  loops["glu_rnn"] = [](const reference::RunInputs &in, int64_t B, int64_t T, bool rev, reference::RunResult &out) {
    Seq m{in.inputs.at("m")}, v{in.inputs.at("v")};
    const Tensor &lambda = in.params.at("lambda");
    Tensor &h = out.outputs["h"];
    int64_t D = h.shape[2];
    scanTime(in, "h", D, B, T, rev, out, [&](int64_t b, int64_t t, std::vector<double> &s) {
      for (int64_t d = 0; d < D; ++d) {
        s[d] = lambda.data[d] * s[d] + m(b, t, d) * v(b, t, d);
        h.data[(b * T + t) * D + d] = s[d];
      }
    });
  };
  loops["linear_attention"] = [](const reference::RunInputs &in, int64_t B, int64_t T, bool rev,
                                 reference::RunResult &out) {
    Seq q{in.inputs.at("q")}, key{in.inputs.at("key")}, v{in.inputs.at("v")};
    Tensor &y = out.outputs["y"];
    int64_t E = y.shape[2], K = in.inputs.at("q").shape[2];
    scanTime(in, "S", E * K, B, T, rev, out, [&](int64_t b, int64_t t, std::vector<double> &S) {
      for (int64_t e = 0; e < E; ++e) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          S[e * K + k] += v(b, t, e) * key(b, t, k);
          acc += S[e * K + k] * q(b, t, k);
        }
        y.data[(b * T + t) * E + e] = acc;
      }
    });
  };
  loops["mingated"] = [](const reference::RunInputs &in, int64_t B, int64_t T, bool rev, reference::RunResult &out) {
    Seq k{in.inputs.at("k")}, x{in.inputs.at("x")};
    Tensor &h = out.outputs["h"];
    int64_t D = h.shape[2];
    scanTime(in, "h", D, B, T, rev, out, [&](int64_t b, int64_t t, std::vector<double> &s) {
      for (int64_t d = 0; d < D; ++d) {
        double z = sigmoid(k(b, t, d));
        s[d] = z * s[d] + (1 - z) * x(b, t, d);
        h.data[(b * T + t) * D + d] = s[d];
      }
    });
  };
  loops["lru"] = [](const reference::RunInputs &in, int64_t B, int64_t T, bool rev, reference::RunResult &out) {
    Seq u{in.inputs.at("u")}, m{in.inputs.at("m")};
    const Tensor &nu = in.params.at("nu_log"), &gamma = in.params.at("gamma_log"), &Dp = in.params.at("D");
    Tensor &y = out.outputs["y"];
    int64_t D = y.shape[2];
    scanTime(in, "h", D, B, T, rev, out, [&](int64_t b, int64_t t, std::vector<double> &s) {
      for (int64_t d = 0; d < D; ++d) {
        double lambda = std::exp(-std::exp(nu.data[d]));
        s[d] = lambda * s[d] + std::exp(gamma.data[d]) * u(b, t, d);
        y.data[(b * T + t) * D + d] = sigmoid(m(b, t, d)) * (s[d] + Dp.data[d] * u(b, t, d));
      }
    });
  };
  return loops;
}

class ReferenceForward : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ReferenceForward, MatchesHandWrittenLoops) {
  const ModelCase &c = GetParam();
  auto compiled = compileReference(caseSource(c), c.model + ".scan");
  ASSERT_TRUE(compiled);
  EXPECT_EQ(compiled->forward.getReverse(), c.reverse);
  for (const Sizes &sizes : {Sizes{3, 37, {{"d", 4}, {"n", 3}, {"k", 3}, {"e", 2}}},
                             Sizes{1, 1, {{"d", 1}, {"n", 3}, {"k", 1}, {"e", 1}}}}) {
    SCOPED_TRACE(describe(sizes));
    Problem p = randomProblem(compiled->forward, sizes, c.withInitial, 11);
    reference::RunResult got = reference::run(compiled->forward, p.in);
    reference::RunResult want = got;  // same shapes; every value is overwritten below
    for (auto &[name, t] : want.outputs) std::fill(t.data.begin(), t.data.end(), NAN);
    for (auto &[name, t] : want.finals) std::fill(t.data.begin(), t.data.end(), NAN);
    handLoops().at(c.model)(p.in, sizes.B, sizes.T, c.reverse, want);
    for (auto &[name, t] : want.outputs) EXPECT_LE(relativeError(got.outputs.at(name), t), 1e-14) << "output " << name;
    for (auto &[name, t] : want.finals) EXPECT_LE(relativeError(got.finals.at(name), t), 1e-14) << "final " << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ReferenceForward, ::testing::ValuesIn(allModelCases()), caseName);

TEST(ReferenceForward, EveryModelHasAHandLoop) {
  for (const std::string &model : allModels()) EXPECT_TRUE(handLoops().count(model)) << model;
}

TEST(ReferenceInterpreter, ReportsMissingAndMismatchedTensors) {
  auto compiled = compileReference(readModel("mingru"), "mingru.scan");
  ASSERT_TRUE(compiled);
  Random rng(3);
  reference::RunInputs in;
  in.inputs["k"] = rng.tensor({2, 5, 4});
  EXPECT_THROW(
      {
        try {
          reference::run(compiled->forward, in);
        } catch (const reference::ShapeError &e) {
          EXPECT_STREQ(e.what(), "missing input 'u'");
          throw;
        }
      },
      reference::ShapeError);
  in.inputs["u"] = rng.tensor({2, 5, 3});
  try {
    reference::run(compiled->forward, in);
    ADD_FAILURE() << "a size mismatch was accepted";
  } catch (const reference::ShapeError &e) {
    EXPECT_STREQ(e.what(), "'u' has d = 3, but another tensor has d = 4");
  }
}

}  // namespace
}  // namespace scanforge::test
