// The dialect's analyses (compiler/mlir/Dialect/Scan/Analysis): the facts every target consumes,
// checked on the models and on small recurrences, and their caching by an AnalysisManager.
#include "compiler/mlir/Dialect/Scan/Analysis/BackwardSchedule.h"
#include "compiler/mlir/Dialect/Scan/Analysis/DecayBounds.h"
#include "compiler/mlir/Dialect/Scan/Analysis/Invariants.h"
#include "compiler/mlir/Dialect/Scan/Analysis/ParallelDims.h"
#include "compiler/mlir/Dialect/Scan/IR/Adjoints.h"
#include "mlir/Pass/AnalysisManager.h"
#include "tests/compiler/CompilerTestUtil.h"

namespace scanforge::test {
namespace {

using scan::PortKind;

std::vector<std::string> names(const std::vector<scan::Port> &ports) {
  std::vector<std::string> out;
  for (const scan::Port &p : ports) out.push_back(p.name);
  return out;
}

scan::DimMask dim(const scan::Ports &ports, const char *name) { return scan::DimMask(1) << ports.table().index(name); }

TEST(PortsAnalysis, ForwardPortsInDeclarationOrder) {
  auto c = compileReference(readModel("selective_ssm"));
  ASSERT_TRUE(c);
  scan::Ports ports(c->forward);
  EXPECT_EQ(names(ports.inputs()), (std::vector<std::string>{"x", "dt", "B", "C"}));
  EXPECT_EQ(names(ports.params()), (std::vector<std::string>{"A", "D"}));
  EXPECT_EQ(names(ports.states()), (std::vector<std::string>{"s"}));
  EXPECT_EQ(names(ports.outputs()), (std::vector<std::string>{"y"}));
  const scan::Port &a = *ports.find(PortKind::Param, "A");
  EXPECT_EQ(a.mask, dim(ports, "d") | dim(ports, "n"));
  EXPECT_EQ(a.layout.size(), 2u);
  EXPECT_EQ(ports.table().name(a.layout[0]), "d");
  EXPECT_FALSE(a.adjointOf);
  EXPECT_EQ(ports.find(PortKind::Input, "nothing"), nullptr);
}

TEST(PortsAnalysis, BackwardPortsNameTheForwardPortsTheyStandFor) {
  auto c = compileReference(readModel("selective_ssm"));
  ASSERT_TRUE(c);
  scan::Ports ports(c->backward);
  // Output gradient, input gradients, parameter gradients, the adjoint state: each by adjoint_of.
  ASSERT_TRUE(ports.adjoint(PortKind::Input, "y"));
  EXPECT_EQ(ports.adjoint(PortKind::Input, "y")->name, scan::gradientName("y"));
  for (const char *in : {"x", "dt", "B", "C"}) {
    ASSERT_TRUE(ports.adjoint(PortKind::Output, in)) << in;
    EXPECT_EQ(ports.adjoint(PortKind::Output, in)->mask, scan::Ports(c->forward).find(PortKind::Input, in)->mask) << in;
  }
  for (const char *p : {"A", "D"}) ASSERT_TRUE(ports.adjoint(PortKind::Accum, p)) << p;
  ASSERT_TRUE(ports.adjoint(PortKind::State, "s"));
  EXPECT_EQ(ports.adjoint(PortKind::State, "s")->name, scan::adjointStateName("s"));
  // The forward inputs the backward reads are primal ports, not adjoints.
  EXPECT_FALSE(ports.find(PortKind::Input, "x")->adjointOf);
  EXPECT_EQ(ports.adjoint(PortKind::Output, "y"), nullptr);
}

TEST(Adjoints, ForwardAndBackwardFindEachOther) {
  auto c = compileReference(readModel("mingru"));
  ASSERT_TRUE(c);
  EXPECT_EQ(scan::backwardOf(c->forward), c->backward);
  EXPECT_EQ(scan::forwardOf(c->backward), c->forward);
  EXPECT_EQ(scan::forwardOf(c->forward), scan::RecurrenceOp());
  EXPECT_EQ(scan::backwardOf(c->backward), scan::RecurrenceOp());
}

TEST(ParallelDims, SelectiveSsmSplitsChannelsAndKeepsTheStateDimensionWhole) {
  auto c = compileReference(readModel("selective_ssm"));
  ASSERT_TRUE(c);
  scan::ParallelDims parallel(c->forward);
  scan::Ports ports(c->forward);
  ASSERT_TRUE(parallel.valid());
  EXPECT_EQ(parallel.channelDims(), dim(ports, "d"));
  EXPECT_EQ(parallel.contractedDims(), dim(ports, "n"));
  EXPECT_EQ(parallel.fallbackReason(), "");
  // B.grad[n] sums over d in the backward: each worker holds a term of that sum.
  scan::Ports adjoints(c->backward);
  auto bGrad = llvm::cast<scan::OutputOp>(adjoints.adjoint(PortKind::Output, "B")->op);
  EXPECT_EQ(parallel.partialOver(bGrad.getValue()), dim(ports, "d"));
  auto xGrad = llvm::cast<scan::OutputOp>(adjoints.adjoint(PortKind::Output, "x")->op);
  EXPECT_EQ(parallel.partialOver(xGrad.getValue()), 0u);
}

TEST(ParallelDims, FallsBackWhenAPartialSumFeedsAState) {
  auto c = compileReference(R"(
recurrence shared_state(x[d], y[n]) -> o[d], c[n] {
  c = 0.5 * c + y
  o = sum(n: c) * x
}
)");
  ASSERT_TRUE(c);
  scan::ParallelDims parallel(c->forward);
  ASSERT_TRUE(parallel.valid());
  EXPECT_EQ(parallel.channelDims(), 0u);
  EXPECT_NE(parallel.fallbackReason().find("one worker per batch element, because"), std::string::npos)
      << parallel.fallbackReason();
}

TEST(BackwardSchedule, StatesKeptInOutputsAndStatesToRecompute) {
  auto mingru = compileReference(readModel("mingru"));
  ASSERT_TRUE(mingru);
  scan::BackwardSchedule gru(mingru->backward);
  ASSERT_TRUE(gru.valid());
  ASSERT_EQ(gru.saved().size(), 1u);
  EXPECT_TRUE(gru.saved()[0].used);
  ASSERT_TRUE(gru.saved()[0].output);  // h is also the output
  EXPECT_EQ(gru.saved()[0].output->name, "h");

  auto ssm = compileReference(readModel("selective_ssm"));
  ASSERT_TRUE(ssm);
  scan::BackwardSchedule schedule(ssm->backward);
  ASSERT_EQ(schedule.saved().size(), 1u);
  EXPECT_EQ(schedule.saved()[0].state.name, "s");
  EXPECT_TRUE(schedule.saved()[0].used);
  EXPECT_FALSE(schedule.saved()[0].output);  // y = sum over n of c * s: no output equals s
}

// What each state's decay needs to stay within [-1, 1]: "shown" with the conditions on
// parameters, joined by " and "; "not shown" when the rules do not know the form.
std::string decayBound(const std::string &source, const std::string &state) {
  auto c = compileReference(source);
  if (!c) return "does not compile";
  scan::DecayBounds bounds(c->forward);
  for (const scan::DecayBound &b : bounds.states()) {
    if (b.state != state) continue;
    if (!b.shown) return "not shown";
    std::string text = "shown";
    for (size_t i = 0; i < b.conditions.size(); ++i) text += (i ? " and " : ": ") + b.conditions[i].text();
    return text;
  }
  return "no such state";
}

TEST(DecayBoundsAnalysis, TheModels) {
  EXPECT_EQ(decayBound(readModel("selective_ssm"), "s"), "shown: A <= 0");  // exp(softplus(dt) * A)
  EXPECT_EQ(decayBound(readModel("glu_rnn"), "h"), "shown: |lambda| <= 1");
  EXPECT_EQ(decayBound(readModel("lru"), "h"), "shown");  // exp(-exp(nu_log))
  EXPECT_EQ(decayBound(readModel("mingru"), "h"), "shown");  // 1 - sigmoid(k)
  EXPECT_EQ(decayBound(readModel("minlstm"), "h"), "shown");
  EXPECT_EQ(decayBound(readModel("mingated"), "h"), "shown");
  EXPECT_EQ(decayBound(readModel("linear_attention"), "S"), "shown");  // a = 1
}

TEST(DecayBoundsAnalysis, SignsThroughProductsAndNegations) {
  // -softplus(dt) * A needs A >= 0; exp(A * B) with two parameters needs one sign of each.
  EXPECT_EQ(decayBound("recurrence r(x[d], dt[d]; A[d]) -> h[d] {\n  h = exp(-softplus(dt) * A) * h + x\n}\n", "h"),
            "shown: A >= 0");
  EXPECT_EQ(decayBound("recurrence r(x[d]; A[d], B[d]) -> h[d] {\n  h = exp(A * exp(B)) * h + x\n}\n", "h"),
            "shown: A <= 0");
  EXPECT_EQ(decayBound("recurrence r(x[d]; p[d], q[d]) -> h[d] {\n  h = tanh(p) * q * h + x\n}\n", "h"),
            "shown: |q| <= 1");
  // An input as the decay, or a sum of decays, is beyond the rules: not shown, no conditions.
  EXPECT_EQ(decayBound("recurrence r(x[d], u[d]) -> h[d] {\n  h = u * h + x\n}\n", "h"), "not shown");
  EXPECT_EQ(decayBound("recurrence r(x[d], k[d]) -> h[d] {\n  h = (sigmoid(k) + 0.5) * h + x\n}\n", "h"), "not shown");
}

TEST(DecayBoundsAnalysis, ConditionsHoldOnValues) {
  scan::ParameterBound nonPositive{"A", scan::ParameterBound::NonPositive};
  EXPECT_TRUE(nonPositive.holds(-1.0f));
  EXPECT_TRUE(nonPositive.holds(0.0f));
  EXPECT_FALSE(nonPositive.holds(1e-30f));
  EXPECT_TRUE(nonPositive.holds(NAN));  // a NaN parameter is reported by the NaN it makes, not here
  scan::ParameterBound magnitude{"lambda", scan::ParameterBound::MagnitudeAtMostOne};
  EXPECT_TRUE(magnitude.holds(-1.0f));
  EXPECT_FALSE(magnitude.holds(1.0001f));
  EXPECT_FALSE(magnitude.holds(-INFINITY));
}

TEST(Invariants, ParametersAndMathOnThemOnly) {
  auto c = compileReference(R"(
recurrence r(x[d]; p[d]) -> h[d] {
  a = sigmoid(p)
  h = a * h + x * exp(p)
}
)");
  ASSERT_TRUE(c);
  scan::Invariants invariants(c->forward);
  int sigmoids = 0, exps = 0;
  for (mlir::Operation &op : c->forward.getBodyBlock()) {
    if (llvm::isa<scan::ParamOp, scan::SigmoidOp, mlir::math::ExpOp>(op)) {
      EXPECT_TRUE(invariants.contains(&op)) << op.getName().getStringRef().str();
      sigmoids += llvm::isa<scan::SigmoidOp>(op);
      exps += llvm::isa<mlir::math::ExpOp>(op);
    }
    bool port = llvm::isa<scan::InputOp, scan::PrevOp, scan::UpdateOp, scan::OutputOp>(op);
    bool readsInput = llvm::isa<mlir::arith::MulFOp>(op) && llvm::any_of(op.getOperands(), [](mlir::Value v) {
      return v.getDefiningOp<scan::InputOp>();
    });
    if (port || readsInput) {
      EXPECT_FALSE(invariants.contains(&op)) << op.getName().getStringRef().str();
    }
  }
  EXPECT_EQ(sigmoids, 1);
  EXPECT_EQ(exps, 1);
}

TEST(AnalysisManager, CachesEachAnalysisOnceAndRecomputesAfterInvalidation) {
  auto c = compileReference(readModel("selective_ssm"));
  ASSERT_TRUE(c);
  mlir::ModuleAnalysisManager manager(*c->module, /*passInstrumentor=*/nullptr);
  mlir::AnalysisManager analyses = manager;
  const scan::ParallelDims *first = &analyses.getChildAnalysis<scan::ParallelDims>(c->forward);
  EXPECT_EQ(&analyses.getChildAnalysis<scan::ParallelDims>(c->forward), first);
  EXPECT_TRUE(analyses.nest(c->forward).getCachedAnalysis<scan::ParallelDims>().has_value());
  analyses.invalidate(mlir::detail::PreservedAnalyses());
  EXPECT_FALSE(analyses.nest(c->forward).getCachedAnalysis<scan::ParallelDims>().has_value());
}

}  // namespace
}  // namespace scanforge::test
