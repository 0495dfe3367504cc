// The Halide CPU backend (through the public API) against the float64 reference interpreter, for
// every model, both directions, with and without initial state, on odd shapes, with chunk
// lengths that do not divide T and with channels split into blocks. Bounds: relative error <= 1e-5
// (f32 arithmetic) per tensor.
#include <cmath>
#include <cstring>

#include "runtime/cuda/Goldens.h"
#include "compiler/api/Scanforge.h"
#include "compiler/halide/CpuExecutor.h"
#include "tests/compiler/CpuBuffers.h"
#include "tests/compiler/ModelHarness.h"

namespace scanforge::test {
namespace {

class CpuBackend : public ::testing::TestWithParam<ModelCase> {};

constexpr double kBound = 1e-5;

void checkAgainstReference(const Compiled &ref, const Recurrence &rec, const Problem &p) {
  reference::RunResult want = reference::run(ref.forward, p.in);
  reference::Gradients wantGrads = backwardGradients(ref.forward, ref.backward, p);

  Buffers buf = runForwardBackward(rec, p);
  for (auto &[name, t] : want.outputs) EXPECT_LE(relativeError(buf.tensor("out." + name), t), kBound) << "output " << name;
  for (auto &[name, t] : want.finals) EXPECT_LE(relativeError(buf.tensor("final." + name), t), kBound) << "final " << name;

  for (auto &[name, t] : wantGrads.inputs) EXPECT_LE(relativeError(buf.tensor("dx." + name), t), kBound) << "input grad " << name;
  for (auto &[name, t] : wantGrads.params) EXPECT_LE(relativeError(buf.tensor("dp." + name), t), kBound) << "param grad " << name;
  for (auto &[name, t] : wantGrads.initial)
    EXPECT_LE(relativeError(buf.tensor("dh0." + name), t), kBound) << "initial-state grad " << name;
}

void checkAgainstReference(const Compiled &ref, const Recurrence &rec, const Sizes &sizes, bool withInitial, uint32_t seed) {
  checkAgainstReference(ref, rec, randomProblem(ref.forward, sizes, withInitial, seed));
}

TEST_P(CpuBackend, MatchesReferenceForwardAndBackward) {
  const ModelCase &c = GetParam();
  std::string source = caseSource(c);
  auto ref = compileReference(source, c.model + ".scan");
  ASSERT_TRUE(ref);
  // Chunk length by rule (one chunk at these sizes) or 5 (T=37 is 7 full chunks + 2 steps); channels
  // whole, or in blocks of 2 where the recurrence allows (d=5 is blocks of 2, 2 and 1).
  for (auto [chunk, channelBlock] : {std::pair<int64_t, int64_t>{0, 0}, {5, 0}, {5, 2}}) {
    CompileOptions options;
    options.threads = 2;
    options.chunk = chunk;
    options.channelBlock = channelBlock;
    Recurrence rec = compileSource(c.model + ".scan", source, options);
    const std::vector<Sizes> shapes = {
        {3, 37, {{"d", 5}, {"n", 3}, {"k", 3}, {"e", 2}}},
        {1, 1, {{"d", 1}, {"n", 3}, {"k", 1}, {"e", 1}}},
        {2, 16, {{"d", 19}, {"n", 16}, {"k", 4}, {"e", 9}}},
    };
    uint32_t seed = 100;
    for (const Sizes &sizes : shapes) {
      SCOPED_TRACE(describe(sizes) + " chunk=" + std::to_string(chunk) + " channelBlock=" + std::to_string(channelBlock));
      checkAgainstReference(*ref, rec, sizes, c.withInitial, seed++);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CpuBackend, ::testing::ValuesIn(allModelCases()), caseName);

// Caller buffers at any address: the programs may assume nothing about a tensor's alignment (a
// Halide schedule that reads back a buffer it writes can be compiled to aligned vector loads).
// Every tensor one float past a vector's start (4 bytes past 16-byte alignment), full vectors of
// 32 lanes and a tail (d = 70), chunks of 16, and channel blocks of 32: the same bits as the run
// on the vectors' own starts.
TEST(CpuBackendApi, MisalignedCallerBuffersGiveTheSameBits) {
  for (const std::string model : {"mingru", "glu_rnn", "selective_ssm", "linear_attention"}) {
    std::string source = readModel(model);
    auto ref = compileReference(source, model + ".scan");
    ASSERT_TRUE(ref);
    Sizes sizes{2, 40, {{"d", 70}, {"n", 16}, {"k", 8}, {"e", 70}}};
    Problem p = randomProblem(ref->forward, sizes, /*withInitial=*/true, 7);
    for (int64_t channelBlock : {0, 32}) {
      SCOPED_TRACE(model + " channelBlock=" + std::to_string(channelBlock));
      CompileOptions options;
      options.threads = 2;
      options.chunk = 16;
      options.channelBlock = channelBlock;
      Recurrence rec = compileSource(model + ".scan", source, options);
      Buffers aligned = runForwardBackward(rec, p), shifted = runForwardBackward(rec, p, 1);
      ASSERT_EQ(aligned.shapes.size(), shifted.shapes.size());
      for (const auto &[key, shape] : aligned.shapes) {
        Tensor a = aligned.tensor(key), b = shifted.tensor(key);
        EXPECT_EQ(0, std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(double))) << key;
      }
    }
  }
}

// A divisor with fewer dimensions than its dividend: the backward sums a quotient over the missing
// dimension, a reduction whose update Halide cannot prove associative (issue 14).
TEST(CpuBackendQuotient, DivisorWithFewerDimensionsThanTheDividend) {
  for (const char *source : {
           "recurrence f(x[d], scale) -> h[d] {\n  h = 0.5 * h + x / scale\n}\n",
           "recurrence f(x[d], scale[k]) -> y[d] {\n  h = 0.5 * h + x\n  y = h / sum(k: scale * scale)\n}\n",
           "recurrence f(x[d]; scale[k]) -> y[d] {\n  h = 0.5 * h + x\n  y = h / sum(k: scale * scale)\n}\n",
       }) {
    SCOPED_TRACE(source);
    auto ref = compileReference(source);
    ASSERT_TRUE(ref);
    CompileOptions options;
    options.threads = 2;
    Recurrence rec = compileSource("f.scan", source, options);
    checkAgainstReference(*ref, rec, {3, 37, {{"d", 19}, {"k", 4}}}, true, 7);
  }
}

bool allFinite(const TensorMap &tensors) {
  for (auto &[name, t] : tensors)
    for (double v : t.data)
      if (!std::isfinite(v)) return false;
  return true;
}

// minLSTM's normalised gates with both gates saturated (issue 14): f / (f + i) was 0/0 once both
// sigmoids underflowed. The reference and the CPU backend stay finite, forward and backward, and agree.
TEST(CpuBackendMinLstm, NormalisedGatesStayFiniteAtExtremePreActivations) {
  std::string source = readModel("minlstm");
  auto ref = compileReference(source, "minlstm.scan");
  ASSERT_TRUE(ref);
  CompileOptions options;
  options.threads = 2;
  Recurrence rec = compileSource("minlstm.scan", source, options);
  Problem p = randomProblem(ref->forward, {2, 16, {{"d", 9}}}, true, 11);
  const double extremes[] = {100, -100, 1e4, -1e4};
  std::vector<double> &f = p.in.inputs.at("f").data, &i = p.in.inputs.at("i").data;
  for (size_t j = 0; j < f.size(); ++j) {
    f[j] = extremes[j % 4];
    i[j] = extremes[(j / 4) % 4];
  }
  EXPECT_TRUE(allFinite(reference::run(ref->forward, p.in).outputs));
  reference::Gradients grads = backwardGradients(ref->forward, ref->backward, p);
  EXPECT_TRUE(allFinite(grads.inputs) && allFinite(grads.initial));
  checkAgainstReference(*ref, rec, p);
}

// On ordinary inputs the stable form is the paper's f / (f + i), forward and backward.
TEST(CpuBackendMinLstm, MatchesThePapersNormalisationOnOrdinaryInputs) {
  auto now = compileReference(readModel("minlstm"), "minlstm.scan");
  auto paper = compileReference("recurrence minlstm(f[d], i[d], u[d]) -> h[d] {\n  fs = sigmoid(f); is = sigmoid(i)\n"
                                "  h = fs / (fs + is) * h + is / (fs + is) * g(u)\n}\n");
  ASSERT_TRUE(now && paper);
  Problem p = randomProblem(now->forward, {3, 37, {{"d", 5}}}, true, 12);
  for (double &v : p.in.inputs.at("f").data) v *= 6;  // well into both tails of the sigmoid
  for (double &v : p.in.inputs.at("i").data) v *= 6;
  reference::RunResult got = reference::run(now->forward, p.in), want = reference::run(paper->forward, p.in);
  EXPECT_LE(relativeError(got.outputs.at("h"), want.outputs.at("h")), 1e-6);
  reference::Gradients a = backwardGradients(now->forward, now->backward, p);
  reference::Gradients b = backwardGradients(paper->forward, paper->backward, p);
  for (auto &[name, t] : b.inputs) EXPECT_LE(relativeError(a.inputs.at(name), t), 1e-6) << "input grad " << name;
  for (auto &[name, t] : b.initial) EXPECT_LE(relativeError(a.initial.at(name), t), 1e-6) << "initial-state grad " << name;
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The selective SSM's backward sums B.grad[n] and C.grad[n] over d, so each block of d channels
// writes partials of them that the executor adds in block order. Batch 1, d = 37 in blocks of 8
// (four full blocks and one of 5), T = 23 in chunks of 5: gradients within relative error 1e-5 of
// the float64 reference, and the same bits on a second run.
TEST(CpuBackendChannelSplit, SelectiveSsmBackwardSplitsAlongDWithPartialSums) {
  std::string source = readModel("selective_ssm");
  auto ref = compileReference(source, "selective_ssm.scan");
  ASSERT_TRUE(ref);
  const Sizes sizes{1, 23, {{"d", 37}, {"n", 5}}};
  CompileOptions options;
  options.threads = 2;
  options.chunk = 5;
  options.channelBlock = 8;

  mlir::ModuleAnalysisManager analyses(*ref->module, /*passInstrumentor=*/nullptr);
  cpu::ChunkProgram program = cpu::buildBackwardProgram(ref->forward, ref->backward,
                                                        cpu::programFacts(analyses, ref->forward, ref->backward));
  cpu::ChunkedRun run;
  run.batch = sizes.B;
  run.channelBlock = options.channelBlock;
  for (const std::string &dim : program.dimNames) run.dimSizes.push_back(sizes.dims.at(dim));
  cpu::ChannelSplit split = cpu::splitChannels(program, run, options.threads);
  ASSERT_GE(split.dim, 0) << "the backward is not split";
  EXPECT_EQ(program.dimNames[split.dim], "d");
  EXPECT_EQ(split.blocks, 5);

  Recurrence rec = compileSource("selective_ssm.scan", source, options);
  Problem p = randomProblem(ref->forward, sizes, /*withInitial=*/true, 11);
  Buffers buf;
  TensorViews inputs = buf.add(p.in.inputs), params = buf.add(p.in.params), initial = buf.add(p.in.initial, ".init");
  TensorViews outputGrads = buf.add(p.outputWeights, ".w"), finalGrads = buf.add(p.finalWeights, ".fw");
  Shapes shapes = rec.shapesOf(inputs, params);
  TensorViews outputs;
  for (const Port &o : rec.signature().outputs) outputs[o.name] = buf.add("out." + o.name, shapes.step(o));
  SavedStates saved;
  rec.forward(inputs, params, initial, outputs, {}, &saved);
  for (const std::string pass : {"1.", "2."}) {
    TensorViews inputGrads, paramGrads, initialGrads;
    for (const Port &in : rec.signature().inputs) inputGrads[in.name] = buf.add(pass + "dx." + in.name, shapes.step(in));
    for (const Port &par : rec.signature().params) paramGrads[par.name] = buf.add(pass + "dp." + par.name, shapes.param(par));
    for (const Port &s : rec.signature().states) initialGrads[s.name] = buf.add(pass + "dh0." + s.name, shapes.state(s));
    rec.backward(inputs, params, saved, outputGrads, finalGrads, inputGrads, paramGrads, initialGrads);
  }

  reference::Gradients want = backwardGradients(ref->forward, ref->backward, p);
  auto check = [&](const std::string &key, const Tensor &expected) {
    EXPECT_LE(relativeError(buf.tensor("1." + key), expected), kBound) << key;
    EXPECT_TRUE(sameBits(buf.data.at("1." + key), buf.data.at("2." + key))) << key << " differs between runs";
  };
  for (auto &[name, t] : want.inputs) check("dx." + name, t);
  for (auto &[name, t] : want.params) check("dp." + name, t);
  for (auto &[name, t] : want.initial) check("dh0." + name, t);
}

// The blocks a forward uses, as the API reports them: by rule (threads / gcd(B, threads) blocks,
// multiples of 32 channels) or fixed by CompileOptions::channelBlock, along the first dimension
// that can be cut.
TEST(CpuBackendChannelSplit, ForwardBlocksAreReportedByDimensionName) {
  CompileOptions options;
  options.threads = 2;
  Recurrence gru = compileSource("mingru.scan", readModel("mingru"), options);
  Shapes shapes;
  shapes.batch = 1;
  shapes.steps = 64;
  shapes.dims = {{"d", 512}};
  Recurrence::ChannelBlocks blocks = gru.channelBlocksFor(shapes);
  EXPECT_EQ(blocks.dim, "d");
  EXPECT_EQ(blocks.width, 256);
  EXPECT_EQ(blocks.blocks, 2);
  shapes.batch = 4;  // a multiple of the threads: one block of everything
  blocks = gru.channelBlocksFor(shapes);
  EXPECT_EQ(blocks.width, 512);
  EXPECT_EQ(blocks.blocks, 1);

  options.channelBlock = 100;
  blocks = compileSource("mingru.scan", readModel("mingru"), options).channelBlocksFor(shapes);
  EXPECT_EQ(blocks.width, 100);
  EXPECT_EQ(blocks.blocks, 6);

  options.channelBlock = 0;
  Recurrence attention = compileSource("linear_attention.scan", readModel("linear_attention"), options);
  shapes.batch = 1;
  shapes.dims = {{"k", 16}, {"e", 96}};
  blocks = attention.channelBlocksFor(shapes);
  EXPECT_EQ(blocks.dim, "e");
  EXPECT_EQ(blocks.width, 64);  // 48, rounded up to whole 32-lane iterations
  EXPECT_EQ(blocks.blocks, 2);
}

// The bytes a call reports moving are its tensors once, plus the forward's checkpoints (written by
// a forward that saves, read by the backward), plus the per-block copies of partial outputs.
TEST(CpuBackendTraffic, CountsTensorsCheckpointsAndPartialCopies) {
  const int64_t B = 2, T = 37, D = 5, chunk = 8, chunks = 5, f = 4;
  std::string source = readModel("mingru");
  auto ref = compileReference(source, "mingru.scan");
  ASSERT_TRUE(ref);
  CompileOptions options;
  options.threads = 2;
  options.chunk = chunk;
  Recurrence rec = compileSource("mingru.scan", source, options);
  Problem p = randomProblem(ref->forward, Sizes{B, T, {{"d", D}}}, /*withInitial=*/true, 3);
  Buffers buf;
  TensorViews inputs = buf.add(p.in.inputs), params = buf.add(p.in.params), initial = buf.add(p.in.initial, ".init");
  TensorViews outputGrads = buf.add(p.outputWeights, ".w");
  TensorViews outputs = {{"h", buf.add("out.h", {B, T, D})}}, finals = {{"h", buf.add("final.h", {B, D})}};
  Traffic alone, saving, backward;
  rec.forward(inputs, params, initial, outputs, finals, nullptr, &alone);
  const int64_t step = B * T * D * f, state = B * D * f;
  EXPECT_EQ(alone.bytesRead, 2 * step + state);  // k, u and the initial state
  EXPECT_EQ(alone.bytesWritten, step + state);   // h and its final value
  SavedStates saved;
  rec.forward(inputs, params, initial, outputs, finals, &saved, &saving);
  EXPECT_EQ(saving.bytesRead, alone.bytesRead);
  EXPECT_EQ(saving.bytesWritten, alone.bytesWritten + chunks * state);  // a checkpoint per chunk
  TensorViews inputGrads = {{"k", buf.add("dx.k", {B, T, D})}, {"u", buf.add("dx.u", {B, T, D})}};
  rec.backward(inputs, params, saved, outputGrads, {}, inputGrads, {}, {}, &backward);
  EXPECT_EQ(backward.bytesRead, 3 * step + chunks * state);  // k, u, h.grad and the checkpoints
  EXPECT_EQ(backward.bytesWritten, 2 * step);                 // k.grad and u.grad

  // The selective SSM at B = 1 on 2 threads: two blocks of d, each writing its own copy of
  // B.grad and C.grad ([B, T, n]), which are then read and summed into the gradients.
  std::string ssm = readModel("selective_ssm");
  auto ssmRef = compileReference(ssm, "selective_ssm.scan");
  ASSERT_TRUE(ssmRef);
  options.channelBlock = 0;
  Recurrence srec = compileSource("selective_ssm.scan", ssm, options);
  const int64_t d = 64, n = 3;
  Problem q = randomProblem(ssmRef->forward, Sizes{1, T, {{"d", d}, {"n", n}}}, /*withInitial=*/false, 4);
  Buffers sbuf;
  TensorViews sin = sbuf.add(q.in.inputs), spar = sbuf.add(q.in.params), sgrad = sbuf.add(q.outputWeights, ".w");
  Shapes shapes = srec.shapesOf(sin, spar);
  TensorViews souts, sinGrads, sparGrads;
  for (const Port &o : srec.signature().outputs) souts[o.name] = sbuf.add("out." + o.name, shapes.step(o));
  SavedStates ssaved;
  Traffic sforward, sbackward;
  srec.forward(sin, spar, {}, souts, {}, &ssaved, &sforward);
  int64_t inputBytes = 0, paramBytes = 0;
  for (const Port &in : srec.signature().inputs) {
    sinGrads[in.name] = sbuf.add("dx." + in.name, shapes.step(in));
    int64_t e = f;
    for (int64_t s : shapes.step(in)) e *= s;
    inputBytes += e;
  }
  for (const Port &par : srec.signature().params) {
    sparGrads[par.name] = sbuf.add("dp." + par.name, shapes.param(par));
    int64_t e = f;
    for (int64_t s : shapes.param(par)) e *= s;
    paramBytes += e;
  }
  srec.backward(sin, spar, ssaved, sgrad, {}, sinGrads, sparGrads, {}, &sbackward);
  ASSERT_EQ(srec.chunkFor(shapes), chunk);
  const int64_t perStepN = T * n * f, yGrad = T * d * f, checkpoints = chunks * d * n * f;
  // Read: the inputs (B and C, which have no d, by both blocks), y.grad, the parameters, the
  // checkpoints, and the blocks' copies of B.grad and C.grad. Written: x.grad and dt.grad, the
  // parameter gradients, the blocks' copies, and the sums of the copies (B.grad, C.grad).
  EXPECT_EQ(sbackward.bytesRead, inputBytes + 2 * perStepN + yGrad + paramBytes + checkpoints + 2 * 2 * perStepN);
  EXPECT_EQ(sbackward.bytesWritten, (inputBytes - 2 * perStepN) + paramBytes + 2 * 2 * perStepN + 2 * perStepN);
}

// bf16 rounding as the backends do it (round to nearest even): runtime/cuda/Goldens.h.
uint16_t toBf16(double v) { return cuda::toBf16(static_cast<float>(v)); }
double fromBf16(uint16_t h) { return cuda::fromBf16(h); }

// bf16 inputs and outputs with f32 state: the reference gets the bf16-rounded inputs, so what is
// left is the rounding of outputs and gradients to bf16 (relative 2^-8 per element).
TEST(CpuBackendBf16, MinGruWithBf16PortsMatchesReference) {
  const char *source = "recurrence mingru16(k[d]: bf16, u[d]: bf16) -> h[d]: bf16 {\n"
                       "  z = sigmoid(k)\n  h = (1 - z) * h + z * g(u)\n}\n";
  auto ref = compileReference(source, "mingru16.scan");
  ASSERT_TRUE(ref);
  Recurrence rec = compileSource("mingru16.scan", source);
  EXPECT_EQ(rec.signature().inputs[0].type, ElemType::BF16);
  Sizes sizes{2, 29, {{"d", 13}}};
  Problem p = randomProblem(ref->forward, sizes, /*withInitial=*/true, 5);
  std::map<std::string, std::vector<uint16_t>> half;
  auto bf16View = [&](const std::string &key, Tensor &t) {
    std::vector<uint16_t> &h = half[key];
    for (double &v : t.data) {
      h.push_back(toBf16(v));
      v = fromBf16(h.back());  // the reference sees exactly what the backend reads
    }
    return TensorView{h.data(), t.shape, ElemType::BF16};
  };
  auto bf16Out = [&](const std::string &key, const std::vector<int64_t> &shape) {
    half[key].assign(Tensor::count(shape), 0);
    return TensorView{half[key].data(), shape, ElemType::BF16};
  };
  auto toTensor = [&](const std::string &key, const std::vector<int64_t> &shape) {
    Tensor t(shape);
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = fromBf16(half[key][i]);
    return t;
  };
  TensorViews inputs = {{"k", bf16View("k", p.in.inputs["k"])}, {"u", bf16View("u", p.in.inputs["u"])}};
  Buffers buf;
  TensorViews initial = buf.add(p.in.initial), finals = {{"h", buf.add("final", {2, 13})}};
  TensorViews outputs = {{"h", bf16Out("h", {2, 29, 13})}};
  SavedStates saved;
  rec.forward(inputs, {}, initial, outputs, finals, &saved);
  reference::RunResult want = reference::run(ref->forward, p.in);
  EXPECT_LE(relativeError(toTensor("h", {2, 29, 13}), want.outputs.at("h")), 4e-3);
  EXPECT_LE(relativeError(buf.tensor("final"), want.finals.at("h")), 1e-5);  // states stay f32

  TensorViews outputGrads = {{"h", bf16View("dh", p.outputWeights["h"])}};
  TensorViews inputGrads = {{"k", bf16Out("dk", {2, 29, 13})}, {"u", bf16Out("du", {2, 29, 13})}};
  TensorViews initialGrads = {{"h", buf.add("dh0", {2, 13})}};
  rec.backward(inputs, {}, saved, outputGrads, buf.add(p.finalWeights), inputGrads, {}, initialGrads);
  reference::Gradients g = backwardGradients(ref->forward, ref->backward, p);
  EXPECT_LE(relativeError(toTensor("dk", {2, 29, 13}), g.inputs.at("k")), 4e-3);
  EXPECT_LE(relativeError(toTensor("du", {2, 29, 13}), g.inputs.at("u")), 4e-3);
  EXPECT_LE(relativeError(buf.tensor("dh0"), g.initial.at("h")), 1e-5);
}

TEST(CpuBackendApi, ShapeErrorsNameTheRecurrencePortAndShapes) {
  Recurrence rec = compile(std::string(SCANFORGE_SOURCE_DIR) + "/models/mingru.scan");
  std::vector<float> k(2 * 4 * 3), u(2 * 4 * 5), h(2 * 4 * 3);
  TensorViews inputs = {{"k", {k.data(), {2, 4, 3}}}, {"u", {u.data(), {2, 4, 5}}}};
  try {
    rec.shapesOf(inputs, {});
    ADD_FAILURE() << "mismatched d accepted";
  } catch (const ShapeError &e) {
    EXPECT_STREQ(e.what(), "mingru.forward: input 'u' has d = 5, but 'k' has d = 3");
  }
  inputs["u"] = {u.data(), {2, 4, 3}};
  try {
    SavedStates saved;
    rec.forward(inputs, {}, {}, {{"h", {h.data(), {2, 4, 4}}}}, {}, &saved);
    ADD_FAILURE() << "wrong output shape accepted";
  } catch (const ShapeError &e) {
    EXPECT_STREQ(e.what(), "mingru.forward: output 'h' has shape [2, 4, 4], expected [2, 4, 3]");
  }
  try {
    rec.forward({{"k", {k.data(), {2, 4, 3}}}}, {}, {}, {}, {}, nullptr);
    ADD_FAILURE() << "missing input accepted";
  } catch (const ShapeError &e) {
    EXPECT_STREQ(e.what(), "mingru.forward: missing input 'u'");
  }
}

TEST(CpuBackendApi, CompileErrorsCarryTheDiagnostics) {
  try {
    compileSource("bad.scan", "recurrence f(k[d]) -> h[d] {\n  h = tanh(h) + k\n}\n");
    ADD_FAILURE() << "a non-linear recurrence compiled";
  } catch (const CompileError &e) {
    EXPECT_NE(std::string(e.what()).find("bad.scan:2:7: error: the update of state 'h' is not linear in 'h'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace scanforge::test
