// Decoding and packed sequences on the CPU backend (docs/sequences.md). The step path against the
// parallel forward over 10^4 steps (relative error <= 1e-6 per tensor: both are f32 with the same
// arithmetic per step); packed calls against each sequence run alone, bit for bit, and against
// the float64 reference (relative error <= 1e-5, as CpuBackendTest); bad offsets as errors.
#include <cstring>

#include "compiler/api/Scanforge.h"
#include "tests/compiler/CpuBuffers.h"
#include "tests/compiler/ModelHarness.h"

namespace scanforge::test {
namespace {

const std::map<std::string, int64_t> kDims = {{"d", 5}, {"n", 3}, {"k", 3}, {"e", 2}};

Recurrence compileModel(const std::string &model, bool reverse, int64_t chunk = 0) {
  CompileOptions options;
  options.threads = 2;
  options.chunk = chunk;
  std::string source = readModel(model);
  return compileSource(model + ".scan", reverse ? reversed(source) : source, options);
}

int64_t elementsFrom(const std::vector<int64_t> &shape, size_t first) {
  int64_t n = 1;
  for (size_t i = first; i < shape.size(); ++i) n *= shape[i];
  return n;
}

// Steps [start, start + length) of a [1, T, dims...] tensor, or row i of an [N, dims...] one.
Tensor stepsOf(const Tensor &t, int64_t start, int64_t length) {
  std::vector<int64_t> shape = t.shape;
  shape[1] = length;
  Tensor out(shape);
  int64_t row = elementsFrom(t.shape, 2);
  std::copy_n(t.data.begin() + start * row, length * row, out.data.begin());
  return out;
}
Tensor rowOf(const Tensor &t, int64_t i) {
  std::vector<int64_t> shape = t.shape;
  shape[0] = 1;
  Tensor out(shape);
  int64_t row = elementsFrom(t.shape, 1);
  std::copy_n(t.data.begin() + i * row, row, out.data.begin());
  return out;
}

// Whether two f32 tensors are equal bit for bit (both were rounded from the same floats).
void expectSameBits(const Tensor &got, const Tensor &want, const std::string &what) {
  ASSERT_EQ(got.shape, want.shape) << what;
  for (size_t i = 0; i < got.data.size(); ++i) {
    float a = static_cast<float>(got.data[i]), b = static_cast<float>(want.data[i]);
    ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << what << " differs at element " << i << ": " << a << " vs " << b;
  }
}

// A packed problem: N sequences of `lengths`, inputs [1, total, ...], states [N, ...].
struct Packed {
  std::vector<int64_t> cuSeqlens;
  Problem problem;
};

Packed packedProblem(scan::RecurrenceOp fwd, const std::vector<int64_t> &lengths, uint32_t seed) {
  Packed p;
  p.cuSeqlens = {0};
  for (int64_t n : lengths) p.cuSeqlens.push_back(p.cuSeqlens.back() + n);
  p.problem = randomProblem(fwd, {1, p.cuSeqlens.back(), kDims}, false, seed);
  Problem rows = randomProblem(fwd, {static_cast<int64_t>(lengths.size()), 1, kDims}, true, seed + 1);
  p.problem.in.initial = rows.in.initial;
  p.problem.finalWeights = rows.finalWeights;
  return p;
}

// Runs a packed problem forward and backward; the results are named as runForwardBackward's.
Buffers runPacked(const Recurrence &rec, const Packed &packed) {
  const Problem &p = packed.problem;
  int64_t n = static_cast<int64_t>(packed.cuSeqlens.size()) - 1;
  Buffers buf;
  TensorViews inputs = buf.add(p.in.inputs), params = buf.add(p.in.params), initial = buf.add(p.in.initial, ".init");
  TensorViews outputs, finals, outputGrads = buf.add(p.outputWeights, ".w"), finalGrads = buf.add(p.finalWeights, ".fw");
  Shapes shapes = rec.shapesOf(inputs, params), rows = shapes;
  rows.batch = n;
  for (const Port &o : rec.signature().outputs) outputs[o.name] = buf.add("out." + o.name, shapes.step(o));
  for (const Port &s : rec.signature().states) finals[s.name] = buf.add("final." + s.name, rows.state(s));
  SavedStates saved;
  rec.forwardPacked(packed.cuSeqlens, inputs, params, initial, outputs, finals, &saved);
  TensorViews inputGrads, paramGrads, initialGrads;
  for (const Port &in : rec.signature().inputs) inputGrads[in.name] = buf.add("dx." + in.name, shapes.step(in));
  for (const Port &par : rec.signature().params) paramGrads[par.name] = buf.add("dp." + par.name, shapes.param(par));
  for (const Port &s : rec.signature().states) initialGrads[s.name] = buf.add("dh0." + s.name, rows.state(s));
  rec.backwardPacked(packed.cuSeqlens, inputs, params, saved, outputGrads, finalGrads, inputGrads, paramGrads,
                     initialGrads);
  return buf;
}

// Sequence i of a packed problem as a problem of its own ([1, length, ...]).
Problem alone(const Packed &packed, size_t i) {
  const Problem &p = packed.problem;
  int64_t start = packed.cuSeqlens[i], length = packed.cuSeqlens[i + 1] - start;
  Problem one;
  for (auto &[name, t] : p.in.inputs) one.in.inputs[name] = stepsOf(t, start, length);
  one.in.params = p.in.params;
  for (auto &[name, t] : p.in.initial) one.in.initial[name] = rowOf(t, static_cast<int64_t>(i));
  for (auto &[name, t] : p.outputWeights) one.outputWeights[name] = stepsOf(t, start, length);
  for (auto &[name, t] : p.finalWeights) one.finalWeights[name] = rowOf(t, static_cast<int64_t>(i));
  return one;
}

// The packed results against each sequence alone (bit for bit) and the float64 reference.
void checkPacked(const Compiled &ref, const Recurrence &rec, const Packed &packed) {
  Buffers got = runPacked(rec, packed);
  const Signature &sig = rec.signature();
  std::map<std::string, std::vector<double>> paramSums;
  std::map<std::string, Tensor> refParamSums;
  for (size_t i = 0; i + 1 < packed.cuSeqlens.size(); ++i) {
    int64_t start = packed.cuSeqlens[i], length = packed.cuSeqlens[i + 1] - start, row = static_cast<int64_t>(i);
    SCOPED_TRACE("sequence " + std::to_string(i) + " of length " + std::to_string(length));
    if (length == 0) {
      for (const Port &s : sig.states) {
        expectSameBits(rowOf(got.tensor("final." + s.name), row), rowOf(packed.problem.in.initial.at(s.name), row),
                       "final state of an empty sequence (its initial state)");
        expectSameBits(rowOf(got.tensor("dh0." + s.name), row), rowOf(packed.problem.finalWeights.at(s.name), row),
                       "initial-state gradient of an empty sequence (its final-state gradient)");
      }
      continue;
    }
    Problem one = alone(packed, i);
    Buffers want = runForwardBackward(rec, one);
    reference::RunResult refOut = reference::run(ref.forward, one.in);
    reference::Gradients refGrads = backwardGradients(ref.forward, ref.backward, one);
    for (const Port &o : sig.outputs) {
      Tensor out = stepsOf(got.tensor("out." + o.name), start, length);
      expectSameBits(out, want.tensor("out." + o.name), "output " + o.name);
      EXPECT_LE(relativeError(out, refOut.outputs.at(o.name)), 1e-5) << "output " << o.name;
    }
    for (const Port &s : sig.states) {
      Tensor fin = rowOf(got.tensor("final." + s.name), row), dh0 = rowOf(got.tensor("dh0." + s.name), row);
      expectSameBits(fin, want.tensor("final." + s.name), "final state " + s.name);
      expectSameBits(dh0, want.tensor("dh0." + s.name), "initial-state gradient " + s.name);
      EXPECT_LE(relativeError(fin, refOut.finals.at(s.name)), 1e-5) << "final state " << s.name;
      EXPECT_LE(relativeError(dh0, refGrads.initial.at(s.name)), 1e-5) << "initial-state gradient " << s.name;
    }
    for (const Port &p : sig.inputs) {
      Tensor dx = stepsOf(got.tensor("dx." + p.name), start, length);
      expectSameBits(dx, want.tensor("dx." + p.name), "input gradient " + p.name);
      EXPECT_LE(relativeError(dx, refGrads.inputs.at(p.name)), 1e-5) << "input gradient " << p.name;
    }
    for (const Port &p : sig.params) {
      const Tensor &dp = want.tensor("dp." + p.name);
      std::vector<double> &sum = paramSums[p.name];
      sum.resize(dp.data.size(), 0.0);
      for (size_t j = 0; j < sum.size(); ++j) sum[j] += dp.data[j];
      Tensor &refSum = refParamSums.try_emplace(p.name, dp.shape).first->second;
      for (size_t j = 0; j < sum.size(); ++j) refSum.data[j] += refGrads.params.at(p.name).data[j];
    }
  }
  for (const Port &p : sig.params) {
    Tensor want(got.tensor("dp." + p.name).shape);
    for (size_t j = 0; j < want.data.size(); ++j) want.data[j] = static_cast<float>(paramSums[p.name][j]);
    expectSameBits(got.tensor("dp." + p.name), want, "parameter gradient " + p.name + " (the sequences' sum)");
    EXPECT_LE(relativeError(got.tensor("dp." + p.name), refParamSums.at(p.name)), 1e-5) << "parameter gradient " << p.name;
  }
}

class Packing : public ::testing::TestWithParam<std::string> {};

// Lengths 0 and 1, sequences shorter and longer than a chunk (8 steps) and not a multiple of it.
TEST_P(Packing, EqualsEachSequenceAloneAndTheReference) {
  for (bool reverse : {false, true}) {
    SCOPED_TRACE(reverse ? "reverse" : "forward");
    std::string source = readModel(GetParam());
    auto ref = compileReference(reverse ? reversed(source) : source, GetParam() + ".scan");
    ASSERT_TRUE(ref);
    Recurrence rec = compileModel(GetParam(), reverse, 8);
    checkPacked(*ref, rec, packedProblem(ref->forward, {5, 0, 1, 37, 2, 0}, 7));
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Packing, ::testing::ValuesIn(allModels()));

TEST(PackingLong, HundredThousandStepsBetweenShortOnes) {
  auto ref = compileReference(readModel("mingru"), "mingru.scan");
  ASSERT_TRUE(ref);
  Recurrence rec = compileModel("mingru", false);
  Packed packed = packedProblem(ref->forward, {1, 100000, 0, 3}, 11);
  Buffers got = runPacked(rec, packed);
  Buffers want = runForwardBackward(rec, alone(packed, 1));
  expectSameBits(stepsOf(got.tensor("out.h"), 1, 100000), want.tensor("out.h"), "output h");
  expectSameBits(rowOf(got.tensor("final.h"), 1), want.tensor("final.h"), "final state h");
  expectSameBits(stepsOf(got.tensor("dx.k"), 1, 100000), want.tensor("dx.k"), "input gradient k");
  expectSameBits(rowOf(got.tensor("dh0.h"), 1), want.tensor("dh0.h"), "initial-state gradient h");
}

// The message of the ShapeError `body` throws ("" if none).
template <class F>
std::string shapeErrorOf(F body) {
  try {
    body();
  } catch (const ShapeError &e) {
    return e.what();
  }
  return "";
}

TEST(PackingErrors, BadOffsetsAreClearErrors) {
  Recurrence rec = compileModel("mingru", false);
  Buffers buf;
  TensorViews inputs = {{"k", buf.add("k", {1, 6, 4})}, {"u", buf.add("u", {1, 6, 4})}};
  TensorViews outputs = {{"h", buf.add("h", {1, 6, 4})}};
  auto forwardWith = [&](const std::vector<int64_t> &cu) {
    return shapeErrorOf([&] { rec.forwardPacked(cu, inputs, {}, {}, outputs, {}, nullptr); });
  };
  EXPECT_NE(forwardWith({1, 6}).find("cu_seqlens starts at 1, not 0"), std::string::npos);
  EXPECT_NE(forwardWith({0, 4, 2, 6}).find("cu_seqlens decreases at entry 2 (4 then 2)"), std::string::npos);
  EXPECT_NE(forwardWith({0, 2, 5}).find("cu_seqlens ends at 5, but the inputs have total = T = 6"),
            std::string::npos);
  EXPECT_NE(forwardWith({0}).find("cu_seqlens has 1 entries"), std::string::npos);
  TensorViews batched = {{"k", buf.add("k2", {2, 3, 4})}, {"u", buf.add("u2", {2, 3, 4})}};
  std::string batchError = shapeErrorOf([&] {
    rec.forwardPacked({0, 3}, batched, {}, {}, {{"h", buf.add("h2", {2, 3, 4})}}, {}, nullptr);
  });
  EXPECT_NE(batchError.find("packed sequences take B = 1"), std::string::npos) << batchError;
  // One state row per sequence.
  std::string rowsError = shapeErrorOf([&] {
    rec.forwardPacked({0, 2, 6}, inputs, {}, {{"h", buf.add("h0", {3, 4})}}, outputs, {}, nullptr);
  });
  EXPECT_NE(rowsError.find("initial state 'h' has shape [3, 4], expected [2, 4]"), std::string::npos) << rowsError;
  // A packed forward's saved states serve backwardPacked only.
  SavedStates saved;
  rec.forwardPacked({0, 2, 6}, inputs, {}, {}, outputs, {}, &saved);
  TensorViews inputGrads = {{"k", buf.add("dk", {1, 6, 4})}, {"u", buf.add("du", {1, 6, 4})}};
  std::string savedError = shapeErrorOf([&] { rec.backward(inputs, {}, saved, {}, {}, inputGrads, {}, {}); });
  EXPECT_NE(savedError.find("come from forwardPacked(): call backwardPacked()"), std::string::npos) << savedError;
  savedError = shapeErrorOf([&] { rec.backwardPacked({0, 3, 6}, inputs, {}, saved, {}, {}, inputGrads, {}, {}); });
  EXPECT_NE(savedError.find("do not come from a forwardPacked call with these shapes and cu_seqlens"), std::string::npos)
      << savedError;
}

// The step path carries the state through 10^4 calls and agrees with the parallel forward.
class Decoding : public ::testing::TestWithParam<std::string> {};

TEST_P(Decoding, StepsAgreeWithTheParallelForward) {
  auto ref = compileReference(readModel(GetParam()), GetParam() + ".scan");
  ASSERT_TRUE(ref);
  Recurrence rec = compileModel(GetParam(), false);
  const int64_t B = 2, T = 10000;
  Problem p = randomProblem(ref->forward, {B, T, kDims}, true, 21);
  Buffers buf;
  TensorViews inputs = buf.add(p.in.inputs), params = buf.add(p.in.params), initial = buf.add(p.in.initial, ".init");
  Shapes shapes = rec.shapesOf(inputs, params);
  TensorViews outputs, finals;
  for (const Port &o : rec.signature().outputs) outputs[o.name] = buf.add("out." + o.name, shapes.step(o));
  for (const Port &s : rec.signature().states) finals[s.name] = buf.add("final." + s.name, shapes.state(s));
  rec.forward(inputs, params, initial, outputs, finals, nullptr);

  // Step tensors [B, dims...], refilled from the sequences at each step; the states start as the
  // initial ones.
  TensorViews stepIn, stepOut, states;
  for (const Port &s : rec.signature().states) states[s.name] = buf.add("state." + s.name, shapes.state(s), &p.in.initial.at(s.name).data);
  for (const Port &in : rec.signature().inputs) stepIn[in.name] = buf.add("in1." + in.name, shapes.state(in));
  for (const Port &o : rec.signature().outputs) stepOut[o.name] = buf.add("out1." + o.name, shapes.state(o));
  std::map<std::string, std::vector<float>> stepped;
  for (const Port &o : rec.signature().outputs) stepped[o.name].resize(buf.data.at("out." + o.name).size());
  for (int64_t t = 0; t < T; ++t) {
    for (const Port &in : rec.signature().inputs) {
      int64_t row = elementsFrom(shapes.state(in), 1);
      for (int64_t b = 0; b < B; ++b)
        std::copy_n(buf.data.at(in.name).begin() + (b * T + t) * row, row, buf.data.at("in1." + in.name).begin() + b * row);
    }
    rec.step(stepIn, params, states, stepOut);
    for (const Port &o : rec.signature().outputs) {
      int64_t row = elementsFrom(shapes.state(o), 1);
      for (int64_t b = 0; b < B; ++b)
        std::copy_n(buf.data.at("out1." + o.name).begin() + b * row, row, stepped[o.name].begin() + (b * T + t) * row);
    }
  }
  for (const Port &o : rec.signature().outputs) {
    Tensor got(shapes.step(o));
    std::copy(stepped[o.name].begin(), stepped[o.name].end(), got.data.begin());
    EXPECT_LE(relativeError(got, buf.tensor("out." + o.name)), 1e-6) << "output " << o.name;
  }
  for (const Port &s : rec.signature().states)
    EXPECT_LE(relativeError(buf.tensor("state." + s.name), buf.tensor("final." + s.name)), 1e-6) << "state " << s.name;
}

INSTANTIATE_TEST_SUITE_P(Models, Decoding, ::testing::ValuesIn(allModels()));

TEST(DecodingErrors, ReverseRecurrenceAndWrongShapes) {
  Recurrence reverse = compileModel("mingru", true);
  Buffers buf;
  TensorViews in = {{"k", buf.add("k", {2, 4})}, {"u", buf.add("u", {2, 4})}};
  TensorViews states = {{"h", buf.add("h", {2, 4})}}, out = {{"h", buf.add("y", {2, 4})}};
  std::string error = shapeErrorOf([&] { reverse.step(in, {}, states, out); });
  EXPECT_NE(error.find("mingru.step: 'mingru' is a reverse recurrence"), std::string::npos) << error;

  Recurrence rec = compileModel("mingru", false);
  TensorViews timed = {{"k", buf.add("k3", {2, 1, 4})}, {"u", buf.add("u3", {2, 1, 4})}};
  error = shapeErrorOf([&] { rec.step(timed, {}, states, out); });
  EXPECT_NE(error.find("a step's inputs are [B, dims...] (no time axis)"), std::string::npos) << error;
  error = shapeErrorOf([&] { rec.step(in, {}, {}, out); });
  EXPECT_NE(error.find("missing state 'h' of shape [2, 4]"), std::string::npos) << error;
}

}  // namespace
}  // namespace scanforge::test
