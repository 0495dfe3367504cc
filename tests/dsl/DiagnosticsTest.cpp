// Every user mistake gets one precise error at the right place. Each case asserts the complete list
// of errors (exact text, line and column), so a cascade of follow-on errors also fails the test.
#include <gtest/gtest.h>

#include "tests/dsl/DslTestUtil.h"

namespace scanforge::dsl::test {
namespace {

struct NegativeCase {
  const char *name;
  const char *source;
  std::vector<std::string> errors;
};

void PrintTo(const NegativeCase &c, std::ostream *os) { *os << c.name; }

class NegativeTest : public ::testing::TestWithParam<NegativeCase> {};

TEST_P(NegativeTest, ReportsExactlyTheseErrors) {
  const NegativeCase &c = GetParam();
  CheckResult r = checkSource(c.source);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.errors, c.errors) << r.rendered;
}

const NegativeCase kCases[] = {
    {"NonLinearUpdate",
     "recurrence f(k[d]) -> h[d] {\n  h = tanh(h) + k\n}\n",
     {"2:7: the update of state 'h' is not linear in 'h': 'tanh' is applied to a value that depends on state 'h'"}},
    {"GateReadsState",
     "recurrence f(k[d], u[d]) -> h[d] {\n  z = sigmoid(k + h)\n  h = (1 - z) * h + z * u\n}\n",
     {"3:12: the gate 'z' reads state 'h'"}},
    {"ProductOfTwoStates",
     "recurrence f(k[d]) -> h[d] {\n  h = h * h + k\n}\n",
     {"2:7: the update of state 'h' is not linear in 'h': it multiplies two values that depend on state 'h'"}},
    {"DivisionByState",
     "recurrence f(k[d]) -> h[d] {\n  h = k / h\n}\n",
     {"2:7: the update of state 'h' is not linear in 'h': it divides by a value that depends on state 'h'"}},
    {"UpdateReadsOtherState",
     "recurrence f(k[d]) -> h[d], c[d] {\n  c = c + k\n  h = h * k + c\n}\n",
     {"3:15: the update of state 'h' reads state 'c'"}},
    {"UpdateReadsOtherStatePrevious",
     "recurrence f(k[d]) -> h[d], c[d] {\n  h = h * k + c\n  c = c + k\n}\n",
     {"2:15: the update of state 'h' reads state 'c'"}},
    {"AliasChainLosesLinearityAtTheFunction",
     "recurrence f(k[d], x[d]) -> h[d] {\n  a1 = h; a2 = 0.5 * a1; a3 = a2 + k\n  h = 0.5 * h + exp(a3) * x\n}\n",
     {"3:17: the update of state 'h' is not linear in 'h': 'exp' is applied to a value that depends on state 'h'"}},
    {"ConditionReadsState",
     "recurrence f(k[d]) -> h[d] {\n  h = where(h > 0, h, k)\n}\n",
     {"2:7: the update of state 'h' is not linear in 'h': the condition of 'where' depends on state 'h'"}},
    {"SumMixesStateElements",
     "recurrence f(x[d], B[n]) -> y[d] {\n  s[d, n] = sum(n: s) * x + B\n  y = sum(n: s)\n}\n",
     {"2:13: the update of state 's' is not linear in 's': summing over 'n' mixes the elements of state 's'"}},
    {"UnknownName",
     "recurrence f(k[d]) -> h[d] {\n  h = h + kk\n}\n",
     {"2:11: unknown name 'kk'"}},
    {"OutputReadButNeverAssigned",
     "recurrence f(k[d]) -> h[d], y[d] {\n  h = h + y\n}\n",
     {"2:11: output 'y' is read but never assigned", "1:29: output 'y' is never assigned"}},
    {"DimensionMismatchOutput",
     "recurrence f(k[d], x[n]) -> h[d], y[d] {\n  h = h + k\n  y = h * x\n}\n",
     {"3:7: dimension mismatch: the value has dimensions [d, n] but 'y' has [d]"}},
    {"DimensionMismatchState",
     "recurrence f(k[d], x[n]) -> y[d] {\n  s[d] = s + x\n  y = s * k\n}\n",
     {"2:10: dimension mismatch: the value has dimensions [d, n] but 's' has [d]"}},
    {"DeclaredDimsDisagreeWithOutput",
     "recurrence f(k[d], x[n]) -> h[d] {\n  h[d, n] = h + k * x\n}\n",
     {"2:5: dimension mismatch: 'h' is declared [d, n] here but [d] in the outputs"}},
    {"SumOverAbsentDimension",
     "recurrence f(k[d], x[n]) -> h[d] {\n  h = h + sum(n: k)\n}\n",
     {"2:15: cannot sum over 'n': the operand has dimensions [d]"}},
    {"SumOverUnknownDimension",
     "recurrence f(k[d]) -> h[d] {\n  h = h + sum(m: k)\n}\n",
     {"2:15: unknown dimension 'm'"}},
    {"UnknownDimensionInStatement",
     "recurrence f(k[d]) -> y[d] {\n  s[d, q] = s + k\n  y = k\n}\n",
     {"2:8: unknown dimension 'q'"}},
    {"OutputDimensionNotFromInputs",
     "recurrence f(k[d]) -> h[e] {\n  h = h + k\n}\n",
     {"1:25: dimension 'e' of output 'h' is not a dimension of any input or parameter"}},
    {"TimeDimensionDeclared",
     "recurrence f(k[t, d]) -> h[d] {\n  h = h + k\n}\n",
     {"1:16: 't' is the implicit time dimension and cannot be declared"}},
    {"DimensionTwiceInPort",
     "recurrence f(k[d, d]) -> h[d] {\n  h = h + k\n}\n",
     {"1:19: dimension 'd' appears twice in 'k'"}},
    {"DuplicateDeclaration",
     "recurrence f(k[d], k[d]) -> h[d] {\n  h = h + k\n}\n",
     {"1:20: redefinition of 'k'"}},
    {"DuplicateOutputAndInput",
     "recurrence f(k[d]) -> k[d] {\n  h = h + k\n}\n",
     {"1:23: redefinition of 'k'"}},
    {"AssignedTwice",
     "recurrence f(k[d]) -> h[d] {\n  z = k\n  z = k * 2\n  h = h * z\n}\n",
     {"3:3: 'z' is assigned twice"}},
    {"AssignToInput",
     "recurrence f(k[d]) -> h[d] {\n  k = 1\n  h = h + k\n}\n",
     {"2:3: cannot assign to input 'k'"}},
    {"DuplicateRecurrence",
     "recurrence f(k[d]) -> h[d] {\n  h = h + k\n}\nrecurrence f(k[d]) -> h[d] {\n  h = h + k\n}\n",
     {"4:12: redefinition of recurrence 'f'"}},
    {"TypeMismatchBoolInArithmetic",
     "recurrence f(k[d]) -> h[d] {\n  h = h + (k > 0)\n}\n",
     {"2:12: '+' needs a number, but this is a boolean (a comparison)"}},
    {"TypeMismatchNumberAsCondition",
     "recurrence f(k[d]) -> h[d] {\n  h = h + where(k, 1, 0)\n}\n",
     {"2:17: the condition of 'where' needs a boolean (a comparison), but this is a number"}},
    {"TypeMismatchBoolAssigned",
     "recurrence f(k[d]) -> h[d] {\n  h = h + k\n  c = k > 0\n}\n",
     {"3:7: 'c' is assigned a boolean (a comparison)"}},
    {"TypeMismatchLogicalOnNumbers",
     "recurrence f(k[d]) -> h[d] {\n  h = h + where(k && k > 0, 1, 0)\n}\n",
     {"2:17: '&&' needs a boolean (a comparison), but this is a number"}},
    {"UnknownFunction",
     "recurrence f(k[d]) -> h[d] {\n  h = h * sigmod(k)\n}\n",
     {"2:11: unknown function 'sigmod'"}},
    {"WrongArity",
     "recurrence f(k[d]) -> h[d] {\n  h = h * max(k) + 1\n}\n",
     {"2:11: 'max' takes 2 arguments, but 1 was given"}},
    {"ValueCalledAsFunction",
     "recurrence f(k[d]) -> h[d] {\n  h = h + k(1)\n}\n",
     {"2:11: unknown function 'k'"}},
    {"UnknownElementType",
     "recurrence f(k[d]: f16) -> h[d] {\n  h = h + k\n}\n",
     {"1:20: unknown element type 'f16'"}},
    {"MissingOutput",
     "recurrence f(k[d]) -> h[d], y[d] {\n  h = h + k\n}\n",
     {"1:29: output 'y' is never assigned"}},
    {"NoOutputs",
     "recurrence f(k[d]) -> {\n  h = h + k\n}\n",
     {"1:12: recurrence 'f' has no outputs"}},
    {"NoState",
     "recurrence f(k[d]) -> y[d] {\n  y = 2 * k\n}\n",
     {"1:12: recurrence 'f' has no state"}},
    {"UnterminatedBlock",
     "recurrence f(k[d]) -> h[d] {\n  h = h + k\n",
     {"2:12: expected '}' to end the body of 'f', found end of file"}},
    {"UnterminatedBlockBeforeNextRecurrence",
     "recurrence f(k[d]) -> h[d] {\n  h = h + k\nrecurrence g(k[d]) -> h[d] {\n  h = h + k\n}\n",
     {"3:1: expected '}' to end the body of 'f', found 'recurrence'"}},
    {"StrayCharacter",
     "recurrence f(k[d]) -> h[d] {\n  h = h + k $ 2\n}\n",
     {"2:13: stray '$' in program"}},
    {"StrayUnicodeCharacter",
     "recurrence f(k[d]) -> h[d] {\n  h = h \xc3\x97 k\n}\n",
     {"2:9: stray '\xc3\x97' in program"}},
    {"SingleAmpersand",
     "recurrence f(k[d]) -> h[d] {\n  h = h + where(k > 0 & k < 1, k, 0)\n}\n",
     {"2:23: stray '&' in program"}},
    {"InvalidNumber",
     "recurrence f(k[d]) -> h[d] {\n  h = h * 1e + k\n}\n",
     {"2:11: invalid number literal '1e'"}},
    {"ExpectedExpression",
     "recurrence f(k[d]) -> h[d] {\n  h = * k\n}\n",
     {"2:7: expected an expression, found '*'"}},
    {"ComparisonAsAssignment",
     "recurrence f(k[d]) -> h[d] {\n  h == h + k\n}\n",
     {"2:5: expected '=' after 'h', found '=='"}},
    {"UnclosedParenthesis",
     "recurrence f(k[d]) -> h[d] {\n  h = (h + k\n}\n",
     {"3:1: expected ')', found '}'"}},
    {"ChainedComparison",
     "recurrence f(k[d]) -> h[d] {\n  h = h + where(0 < k < 1, k, 0)\n}\n",
     {"2:23: comparisons cannot be chained"}},
    {"GarbageAtTopLevel",
     "let x = 1\nrecurrence f(k[d]) -> h[d] {\n  h = h + k\n}\n",
     {"1:1: expected 'recurrence', found identifier 'let'"}},
    {"MissingArrow",
     "recurrence f(k[d]) h[d] {\n  h = h + k\n}\n",
     {"1:20: expected '->' and the outputs, found identifier 'h'"}},
    {"SeveralIndependentErrors",
     "recurrence f(k[d]) -> h[d] {\n  a = k $ 1\n  h = h + bogus\n}\nrecurrence g(k[d]) -> h[d] {\n  h = exp(h)\n}\n",
     {"2:9: stray '$' in program",
      "6:7: the update of state 'h' is not linear in 'h': 'exp' is applied to a value that depends on state 'h'"}},
    {"SeveralIndependentSemanticErrors",
     "recurrence f(k[d]) -> h[d] {\n  a = sigmod(k)\n  h = h + bogus\n}\nrecurrence g(k[d]) -> h[d] {\n  h = exp(h) + k\n}\n",
     {"2:7: unknown function 'sigmod'", "3:11: unknown name 'bogus'",
      "6:7: the update of state 'h' is not linear in 'h': 'exp' is applied to a value that depends on state 'h'"}},
};

INSTANTIATE_TEST_SUITE_P(Dsl, NegativeTest, ::testing::ValuesIn(kCases),
                         [](const auto &info) { return std::string(info.param.name); });

TEST(Diagnostics, RendersLocationSourceLineCaretAndHint) {
  CheckResult r = checkSource("recurrence f(k[d], u[d]) -> h[d] {\n  z = sigmoid(k + h)\n  h = (1 - z) * h + z * u\n}\n",
                              "models/bad.scan");
  EXPECT_EQ(r.rendered,
            "models/bad.scan:3:12: error: the gate 'z' reads state 'h'\n"
            " 3 |   h = (1 - z) * h + z * u\n"
            "   |            ^\n"
            "models/bad.scan:2:19: note: 'z' depends on 'h' here\n"
            " 2 |   z = sigmoid(k + h)\n"
            "   |                   ^\n"
            "hint: gates may depend on inputs and parameters only, so that the update keeps the form h = a * h + b\n");
}

// The note names the operand that carries the other state, not the product's left operand.
TEST(Diagnostics, OtherStateNoteNamesTheOperandCarryingIt) {
  CheckResult r = checkSource(
      "recurrence f(k[d]) -> h[d], c[d] {\n  a = 0.5 * h\n  q = c * k\n  h = a * q\n  c = 0.5 * c + k\n}\n",
      "models/bad.scan");
  EXPECT_EQ(r.errors, std::vector<std::string>{"3:7: the update of state 'h' reads state 'c'"});
  EXPECT_NE(r.rendered.find("models/bad.scan:4:11: note: through 'q'\n"), std::string::npos) << r.rendered;
}

TEST(Diagnostics, CaretCoversTheWholeCulprit) {
  CheckResult r = checkSource("recurrence f(k[d]) -> h[d] {\n  h = h + tanh(h * k)\n}\n");
  EXPECT_NE(r.rendered.find(" 2 |   h = h + tanh(h * k)\n   |           ^~~~~~~~~~~\n"), std::string::npos) << r.rendered;
}

TEST(Diagnostics, SuggestsCloseNames) {
  EXPECT_NE(checkSource("recurrence f(k[d]) -> h[d] {\n  h = h + kk\n}\n").rendered.find("hint: did you mean 'k'?"),
            std::string::npos);
  EXPECT_NE(checkSource("recurrence f(k[d]) -> h[d] {\n  h = h * sigmod(k)\n}\n")
                .rendered.find("hint: did you mean 'sigmoid'?"),
            std::string::npos);
}

TEST(Diagnostics, DeepNestingIsAnErrorNotACrash) {
  std::string deep = "recurrence f(k[d]) -> h[d] {\n  h = h + " + std::string(5000, '(') + "k" +
                     std::string(5000, ')') + "\n}\n";
  CheckResult r = checkSource(deep);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("expression is nested too deeply"), std::string::npos);
}

TEST(Diagnostics, WarnsAboutUnusedInputsAndValues) {
  CheckResult r = checkSource("recurrence f(k[d], x[d]) -> h[d] {\n  z = k\n  h = h + k\n}\n");
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.warnings, (std::vector<std::string>{"1:20: input 'x' is never used", "2:3: 'z' is computed but never used"}));
}

}  // namespace
}  // namespace scanforge::dsl::test
