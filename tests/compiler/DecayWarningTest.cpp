// The API's warning when a call's parameters let a state's decay exceed 1 in magnitude
// (scan::DecayBounds, docs/dsl.md "Decays above 1"): given once per recurrence to the handler of
// setWarningHandler, naming the parameter's element, its value and the condition it breaks; none
// while the parameters keep every decay within 1.
#include <gtest/gtest.h>

#include "compiler/api/Scanforge.h"
#include "tests/compiler/CompilerTestUtil.h"

namespace scanforge::test {
namespace {

// Collects the warnings given while it lives; the default handler (stderr) afterwards.
struct CollectWarnings {
  std::vector<std::string> messages;
  CollectWarnings() {
    setWarningHandler([this](const std::string &m) { messages.push_back(m); });
  }
  ~CollectWarnings() { setWarningHandler(nullptr); }
};

// The one warning given, with `text` in it.
void expectOneWarning(const CollectWarnings &warnings, const std::string &text) {
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_NE(warnings.messages[0].find(text), std::string::npos) << warnings.messages[0];
}

// The selective SSM's tensors at B=1 T=3 d=2 n=2; a step's (B=1) are the first row of each.
struct SsmTensors {
  std::vector<float> x = {0.5f, -0.25f, 1.0f, 0.75f, -0.5f, 0.125f}, dt = {0.1f, -0.3f, 0.7f, 0.2f, -1.0f, 0.4f};
  std::vector<float> b = {0.3f, -0.6f, 0.9f, 0.2f, -0.4f, 0.8f}, c = {-0.7f, 0.5f, 0.1f, -0.2f, 0.6f, 0.3f};
  std::vector<float> d = {1.0f, 0.5f}, y = std::vector<float>(6);
  TensorViews inputs(const std::vector<int64_t> &shape) {
    return {{"x", {x.data(), shape}}, {"dt", {dt.data(), shape}}, {"B", {b.data(), shape}}, {"C", {c.data(), shape}}};
  }
  TensorViews params(std::vector<float> &a) { return {{"A", {a.data(), {2, 2}}}, {"D", {d.data(), {2}}}}; }
};

// One forward of the selective SSM at B=1 T=3 d=2 n=2 with these A (row-major [d, n]).
void forwardSsm(const Recurrence &rec, std::vector<float> a) {
  SsmTensors t;
  std::vector<int64_t> steps = {1, 3, 2};
  rec.forward(t.inputs(steps), t.params(a), {}, {{"y", {t.y.data(), steps}}}, {}, nullptr);
}

TEST(DecayWarning, GivenOnceWhenAParameterBreaksItsBound) {
  Recurrence rec = compileSource("selective_ssm.scan", readModel("selective_ssm"));
  CollectWarnings warnings;
  forwardSsm(rec, {-1.0f, -2.0f, -0.5f, 0.0f});
  EXPECT_TRUE(warnings.messages.empty());
  forwardSsm(rec, {-1.0f, -2.0f, 0.25f, -1.0f});
  ASSERT_EQ(warnings.messages.size(), 1u);
  const std::string &m = warnings.messages[0];
  EXPECT_NE(m.find("selective_ssm.forward: parameter A[1, 0] = 0.25 breaks A <= 0"), std::string::npos) << m;
  EXPECT_NE(m.find("state 's'"), std::string::npos) << m;
  forwardSsm(rec, {3.0f, 3.0f, 3.0f, 3.0f});
  EXPECT_EQ(warnings.messages.size(), 1u);  // once per recurrence
  Recurrence other = compileSource("selective_ssm.scan", readModel("selective_ssm"));
  forwardSsm(other, {-1.0f, 1.0f, -1.0f, -1.0f});
  ASSERT_EQ(warnings.messages.size(), 2u);
  EXPECT_NE(warnings.messages[1].find("A[0, 1] = 1 breaks"), std::string::npos) << warnings.messages[1];
}

// A packed call checks its parameters once, not per sequence.
TEST(DecayWarning, APackedCallChecksOnce) {
  Recurrence rec = compileSource("selective_ssm.scan", readModel("selective_ssm"));
  CollectWarnings warnings;
  SsmTensors t;
  std::vector<float> a = {-1.0f, -2.0f, -0.5f, 0.5f};
  std::vector<int64_t> steps = {1, 3, 2};
  rec.forwardPacked({0, 1, 3}, t.inputs(steps), t.params(a), {}, {{"y", {t.y.data(), steps}}}, {}, nullptr);
  expectOneWarning(warnings, "selective_ssm.forwardPacked: parameter A[1, 1] = 0.5 breaks A <= 0");
}

// Decoding checks the parameters where it checks the shapes: at the first step.
TEST(DecayWarning, GivenAtTheFirstStep) {
  Recurrence rec = compileSource("selective_ssm.scan", readModel("selective_ssm"));
  CollectWarnings warnings;
  SsmTensors t;
  std::vector<float> a = {-1.0f, 2.0f, -0.5f, -1.0f}, s(4);
  std::vector<int64_t> row = {1, 2};
  rec.step(t.inputs(row), t.params(a), {{"s", {s.data(), {1, 2, 2}}}}, {{"y", {t.y.data(), row}}});
  expectOneWarning(warnings, "selective_ssm.step: parameter A[0, 1] = 2 breaks A <= 0");
}

// A caller that runs the recurrence elsewhere (the CUDA dispatch) checks host copies of the
// parameters forward() checks; none are named once it warned, so it copies nothing more.
TEST(DecayWarning, CheckedParametersForCallsElsewhere) {
  Recurrence rec = compileSource("selective_ssm.scan", readModel("selective_ssm"));
  CollectWarnings warnings;
  EXPECT_EQ(rec.checkedParameters(), std::vector<std::string>{"A"});
  std::vector<float> a = {-1.0f, -2.0f, -0.5f, -1.0f};
  rec.checkParameters({{"A", {a.data(), {2, 2}}}});
  EXPECT_TRUE(warnings.messages.empty());
  a[3] = 0.5f;
  rec.checkParameters({{"A", {a.data(), {2, 2}}}});
  expectOneWarning(warnings, "selective_ssm.forward: parameter A[1, 1] = 0.5 breaks A <= 0");
  EXPECT_TRUE(rec.checkedParameters().empty());
  EXPECT_TRUE(compileSource("mingru.scan", readModel("mingru")).checkedParameters().empty());
}

// The conditions the check is made of, for a caller that draws parameters within them (scan-bench).
TEST(DecayWarning, ParameterConditionsNameParameterStateAndKind) {
  using Condition = Recurrence::ParameterCondition;
  auto expectOne = [](const std::string &model, const std::string &param, const std::string &state, Condition::Kind kind,
                      const std::string &text) {
    std::vector<Condition> conditions = compileSource(model + ".scan", readModel(model)).parameterConditions();
    ASSERT_EQ(conditions.size(), 1u) << model;
    EXPECT_EQ(conditions[0].param, param);
    EXPECT_EQ(conditions[0].state, state);
    EXPECT_EQ(conditions[0].kind, kind);
    EXPECT_EQ(conditions[0].text, text);
  };
  expectOne("selective_ssm", "A", "s", Condition::NonPositive, "A <= 0");
  expectOne("glu_rnn", "lambda", "h", Condition::MagnitudeAtMostOne, "|lambda| <= 1");
  EXPECT_TRUE(compileSource("mingru.scan", readModel("mingru")).parameterConditions().empty());
}

TEST(DecayWarning, NoneWhereTheDecayNeedsNoCondition) {
  Recurrence rec = compileSource("mingru.scan", readModel("mingru"));  // 1 - sigmoid(k)
  CollectWarnings warnings;
  std::vector<float> k = {50.0f, -50.0f, 3.0f, -3.0f}, u = {1.0f, 2.0f, -1.0f, 0.5f}, h(4);
  std::vector<int64_t> steps = {1, 2, 2};
  rec.forward({{"k", {k.data(), steps}}, {"u", {u.data(), steps}}}, {}, {}, {{"h", {h.data(), steps}}}, {}, nullptr);
  EXPECT_TRUE(warnings.messages.empty());
}

}  // namespace
}  // namespace scanforge::test
