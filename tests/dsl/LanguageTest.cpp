// Positive language features: several states, reverse, bf16 ports, inferred state dimensions,
// delayed reads, line continuation, comments and every builtin.
#include <gtest/gtest.h>

#include "dsl/Printer.h"
#include "tests/dsl/DslTestUtil.h"

namespace scanforge::dsl::test {
namespace {

TEST(Language, SeveralIndependentStates) {
  CheckResult r = checkSource(
      "recurrence two(a[d], b2[d]) -> h[d], c[d] {\n"
      "  h = sigmoid(a) * h + b2\n"
      "  c = 0.5 * c + a   # a second, independent state\n"
      "}\n");
  ASSERT_TRUE(r.ok) << r.rendered;
  EXPECT_EQ(r.module.recurrences[0].checked.states.size(), 2u);
}

TEST(Language, ReverseDirectionAndBf16Ports) {
  CheckResult r = checkSource("reverse recurrence back(k[d]: bf16) -> h[d]: bf16 {\n  h = 0.9 * h + k\n}\n");
  ASSERT_TRUE(r.ok) << r.rendered;
  const Recurrence &rec = r.module.recurrences[0];
  EXPECT_TRUE(rec.reverse);
  EXPECT_EQ(rec.inputs[0].type, ElemType::BF16);
  EXPECT_EQ(rec.outputs[0].type, ElemType::BF16);
}

TEST(Language, InferredStateDimensionsIncludeBroadcasts) {
  CheckResult r = checkSource(
      "recurrence f(x[d], B[n]) -> y[d] {\n"
      "  s = 0.5 * s + x * B\n"
      "  y = sum(n: s)\n"
      "}\n");
  ASSERT_TRUE(r.ok) << r.rendered;
  const Recurrence &rec = r.module.recurrences[0];
  EXPECT_EQ(formatDims(rec, rec.checked.states[0].dims), "[d, n]");
}

TEST(Language, AffineLocalsMayFeedTheirState) {
  CheckResult r = checkSource("recurrence f(k[d]) -> h[d] {\n  half = 0.5 * h\n  h = half + k\n}\n");
  ASSERT_TRUE(r.ok) << r.rendered;
}

TEST(Language, OutputsMayBeNonlinearInStates) {
  CheckResult r = checkSource("recurrence f(k[d]) -> y[d] {\n  h = 0.5 * h + k\n  y = tanh(h) * h\n}\n");
  ASSERT_TRUE(r.ok) << r.rendered;
}

TEST(Language, ReadBeforeAssignmentSeesThePreviousStep) {
  CheckResult r = checkSource("recurrence delay(k[d]) -> y[d] {\n  y = 2 * prev\n  prev = k\n}\n");
  ASSERT_TRUE(r.ok) << r.rendered;
  const Recurrence &rec = r.module.recurrences[0];
  ASSERT_EQ(rec.checked.states.size(), 1u);
  EXPECT_EQ(rec.checked.states[0].name, "prev");
  EXPECT_EQ(rec.body[0].value->args[1]->ref.kind, NameRef::StatePrev);
}

TEST(Language, LongExpressionsContinueAfterAnOperator) {
  CheckResult r = checkSource("recurrence f(k[d],\n             u[d]) -> h[d] {\n  h = sigmoid(k) * h +\n      u\n}\n");
  ASSERT_TRUE(r.ok) << r.rendered;
}

TEST(Language, EveryBuiltinChecks) {
  CheckResult r = checkSource(
      "recurrence f(k[d], u[d]) -> h[d] {\n"
      "  a = sigmoid(k) + softplus(k) + exp(k) + log(abs(k) + 1) + tanh(k) + relu(k) + silu(k) + g(k)\n"
      "  b2 = sqrt(abs(u)) + min(k, u) + max(k, u) + where(k > 0 && !(u < 0) || k == u, k, u) + select(k != u, 1, 2)\n"
      "  h = sigmoid(a) * h + b2\n"
      "}\n");
  ASSERT_TRUE(r.ok) << r.rendered;
}

TEST(Language, PrinterKeepsNecessaryParentheses) {
  CheckResult r = checkSource("recurrence f(k[d], u[d]) -> h[d] {\n  h = (1 - (k - u)) * h + -(k / (u * k)) + (k - u) - u\n}\n");
  ASSERT_TRUE(r.ok) << r.rendered;
  EXPECT_EQ(printExpr(*r.module.recurrences[0].body[0].value), "(1 - (k - u)) * h + -(k / (u * k)) + (k - u) - u");
}

}  // namespace
}  // namespace scanforge::dsl::test
