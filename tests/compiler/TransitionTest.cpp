// The slice transition (CompileOptions::transitions, --scan-transition) of every model in each
// direction: it keeps the ports but the outputs; on the CPU backend, from ones, it agrees with the
// float64 reference interpreter's transition (relative error <= 1e-5); and it is what context
// parallelism relies on: the final state from h0 equals A * h0 + (the final state from zeros)
// (relative error <= 1e-5 of the terms' size, all three runs in f32).
#include <cmath>

#include "compiler/api/Scanforge.h"
#include "tests/compiler/CpuBuffers.h"
#include "tests/compiler/ModelHarness.h"

namespace scanforge::test {
namespace {

const std::map<std::string, int64_t> kDims = {{"d", 5}, {"n", 3}, {"k", 3}, {"e", 2}};

class Transition : public ::testing::TestWithParam<ModelCase> {};

Recurrence compileCase(const ModelCase &c, bool transitions) {
  CompileOptions options;
  options.threads = 2;
  options.transitions = transitions;
  return compileSource(c.model + ".scan", caseSource(c), options);
}

// The final states of `rec` from `initial` (empty: zeros), as float64 tensors by state name.
TensorMap finalsFrom(const Recurrence &rec, const Problem &p, const TensorMap &initial) {
  Buffers buf;
  TensorViews inputs = buf.add(p.in.inputs), params = buf.add(p.in.params), start = buf.add(initial, ".init");
  Shapes shapes = rec.shapesOf(inputs, params);
  TensorViews outputs, finals;
  for (const Port &o : rec.signature().outputs) outputs[o.name] = buf.add("out." + o.name, shapes.step(o));
  for (const Port &s : rec.signature().states) finals[s.name] = buf.add("final." + s.name, shapes.state(s));
  rec.forward(inputs, params, start, outputs, finals, nullptr);
  TensorMap out;
  for (const Port &s : rec.signature().states) out.emplace(s.name, buf.tensor("final." + s.name));
  return out;
}

TensorMap onesLike(const TensorMap &states) {
  TensorMap out;
  for (auto &[name, t] : states) {
    Tensor one(t.shape);
    std::fill(one.data.begin(), one.data.end(), 1.0);
    out.emplace(name, one);
  }
  return out;
}

TEST_P(Transition, IsTheAffineCoefficientOfTheSlice) {
  const ModelCase &c = GetParam();
  auto ref = compileReference(caseSource(c), c.model + ".scan");
  ASSERT_TRUE(ref);
  Recurrence rec = compileCase(c, false), transition = compileCase(c, true);
  const Signature &sig = rec.signature(), &tsig = transition.signature();
  ASSERT_EQ(tsig.inputs.size(), sig.inputs.size());
  ASSERT_EQ(tsig.params.size(), sig.params.size());
  ASSERT_EQ(tsig.states.size(), sig.states.size());
  EXPECT_TRUE(tsig.outputs.empty());
  EXPECT_EQ(tsig.reverse, sig.reverse);

  Problem p = randomProblem(ref->forward, {2, 37, kDims}, /*withInitial=*/true, 31);
  TensorMap a = finalsFrom(transition, p, onesLike(p.in.initial));
  TensorMap b = finalsFrom(rec, p, {});
  TensorMap h = finalsFrom(rec, p, p.in.initial);

  // The same transition on the float64 reference interpreter.
  scan::Session session;
  std::ostringstream errs;
  mlir::OwningOpRef<mlir::ModuleOp> module = session.loadText(c.model + ".scan", caseSource(c), errs);
  ASSERT_TRUE(module) << errs.str();
  ASSERT_TRUE(mlir::succeeded(session.compile(*module, nullptr, /*transitions=*/true)));
  scan::RecurrenceOp refTransition;
  for (auto r : module->getOps<scan::RecurrenceOp>())
    if (!r.getAdjointOf()) refTransition = r;
  reference::RunInputs in = p.in;
  in.initial = onesLike(p.in.initial);
  reference::RunResult want = reference::run(refTransition, in);

  for (const Port &s : sig.states) {
    const Tensor &A = a.at(s.name), &B = b.at(s.name), &H = h.at(s.name), &h0 = p.in.initial.at(s.name);
    EXPECT_LE(relativeError(A, want.finals.at(s.name)), 1e-5) << c.model << " transition of " << s.name;
    double worst = 0;
    for (size_t i = 0; i < A.data.size(); ++i) {
      double affine = A.data[i] * h0.data[i] + B.data[i];
      double scale = std::abs(A.data[i] * h0.data[i]) + std::abs(B.data[i]) + 1e-30;
      worst = std::max(worst, std::abs(H.data[i] - affine) / scale);
    }
    EXPECT_LE(worst, 1e-5) << c.model << " state " << s.name << ": final(h0) vs A * h0 + final(0)";
  }
}

INSTANTIATE_TEST_SUITE_P(EveryModel, Transition, ::testing::ValuesIn([] {
                           std::vector<ModelCase> cases;
                           for (const ModelCase &c : allModelCases())
                             if (c.withInitial) cases.push_back(c);
                           return cases;
                         }()),
                         caseName);

}  // namespace
}  // namespace scanforge::test
