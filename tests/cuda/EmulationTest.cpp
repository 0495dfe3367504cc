// Every generated kernel of every model, both directions, f32 and bf16, run on the CPU emulation
// (the kernel source compiled as host C++) and compared with the float64 reference interpreter at
// odd shapes, with and without initial states, under both strategies (see ReferenceCheck.h for the
// shapes, plans and bounds).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "compiler/mlir/Dialect/Scan/IR/Numerics.h"
#include "compiler/mlir/Target/Cuda/Prelude.h"
#include "runtime/cuda/CudaError.h"
#include "tests/cuda/ReferenceCheck.h"

namespace scanforge::test {
namespace {

class Emulation : public ::testing::TestWithParam<ModelVariant> {};

TEST_P(Emulation, MatchesReference) {
  auto compiled = compileReference(GetParam().source, GetParam().name + ".scan");
  ASSERT_TRUE(compiled);
  std::unique_ptr<EmulatedBackend> device = emulatedBackend();
  ErrorSummary summary;
  checkAgainstReference(*compiled->module, *device, summary);
  std::cout << "[ emulation ] " << GetParam().name << ": " << summary.describe() << "\n";
}

INSTANTIATE_TEST_SUITE_P(Models, Emulation, ::testing::ValuesIn(modelVariants()), variantName);
INSTANTIATE_TEST_SUITE_P(EdgeCases, Emulation, ::testing::ValuesIn(edgeRecurrences()), variantName);

// Register dimensions dealt to lanes (docs/cuda.md, "Threads, registers and partial sums"): the
// selective SSM (its sum over n becomes a butterfly across lanes, B.grad and C.grad a
// transpose-reduce across channels) and linear attention (a state over two dimensions, k dealt to
// lanes), 2 and 8 lanes at n = 8, from initial states, both strategies, one channel, 33 channels
// (a partial warp) and 130 (several blocks, a partial last one); the SSM with three registers per
// lane (n = 6, 2 lanes); linear attention with 32 lanes at k = 64; forward and backward against
// float64.
TEST(Emulation, LaneDimensionsMatchReference) {
  for (const char *model : {"selective_ssm", "linear_attention"}) {
    auto compiled = compileReference(readModel(model), std::string(model) + ".scan");
    ASSERT_TRUE(compiled);
    std::unique_ptr<EmulatedBackend> device = emulatedBackend();
    ErrorSummary summary;
    ReferenceRuns runs;
    runs.registerSize = 8;
    runs.shapes = std::vector<cuda::Shape>{};
    for (auto [batch, steps, channels] : {std::tuple{2, 37, 33}, std::tuple{3, 20, 130}, std::tuple{1, 9, 1}}) {
      cuda::Shape shape{batch, steps, {}};
      std::string channel = std::string(model) == "selective_ssm" ? "d" : "e";
      shape.dims[channel] = channels;
      shape.dims[std::string(model) == "selective_ssm" ? "n" : "k"] = 8;
      runs.shapes->push_back(shape);
    }
    runs.initialStates = {true};
    runs.plans.clear();
    for (int64_t lanes : {2, 8}) {
      runs.plans.push_back({cuda::Strategy::Sequential, 4, lanes});
      runs.plans.push_back({cuda::Strategy::Chunked, 5, lanes});
    }
    checkAgainstReference(*compiled->module, *device, summary, runs);
    if (std::string(model) == "selective_ssm") {
      // Three registers per lane (n = 6 over 2 lanes): the transpose-reduce of B.grad and C.grad
      // cannot halve an odd count, and adds all three across the channels' lanes instead.
      ReferenceRuns odd;
      odd.shapes = {{2, 9, {{"d", 5}, {"n", 6}}}};
      odd.plans = {{cuda::Strategy::Sequential, 4, 2}, {cuda::Strategy::Chunked, 4, 2}};
      checkAgainstReference(*compiled->module, *device, summary, odd);
    }
    if (std::string(model) == "linear_attention") {  // a whole warp per channel: 32 lanes of two elements
      ReferenceRuns warp;
      warp.shapes = {{2, 9, {{"e", 3}, {"k", 64}}}};
      warp.plans = {{cuda::Strategy::Sequential, 4, 32}, {cuda::Strategy::Chunked, 4, 32}};
      checkAgainstReference(*compiled->module, *device, summary, warp);
    }
    std::cout << "[ emulation ] " << model << " with lanes: " << summary.describe() << "\n";
  }
}

// Per-step sums over channels added atomically by the warps (RecurrenceRunner::allowAtomicSums)
// instead of stored in rows that a second kernel adds: the selective SSM's B.grad and C.grad and
// linear attention's k.grad, f32 and bf16 (through the f32 workspace and its conversion), both
// strategies, with several blocks along the channels and a partial one. The kernels that add the
// rows run only without atomic sums.
TEST(Emulation, AtomicSumsMatchReference) {
  for (const char *model : {"selective_ssm", "linear_attention"})
    for (bool bf16 : {false, true})
      for (bool atomic : {true, false}) {
        std::string source = readModel(model);
        auto compiled = compileReference(bf16 ? bf16Variant(source) : source, std::string(model) + ".scan");
        ASSERT_TRUE(compiled);
        std::unique_ptr<EmulatedBackend> device = emulatedBackend(1, /*recordTraffic=*/true);  // which kernels ran
        ErrorSummary summary;
        ReferenceRuns runs;
        std::string channel = std::string(model) == "selective_ssm" ? "d" : "e";
        std::string lane = std::string(model) == "selective_ssm" ? "n" : "k";
        runs.shapes = {{2, 19, {{channel, 130}, {lane, 8}}}};
        runs.initialStates = {true};
        runs.plans = {{cuda::Strategy::Sequential, 4, 2}, {cuda::Strategy::Chunked, 5, 2}, {cuda::Strategy::Chunked, 5, 1}};
        runs.atomicSums = atomic;
        checkAgainstReference(*compiled->module, *device, summary, runs);
        std::cout << "[ emulation ] " << model << (bf16 ? " bf16" : " f32") << (atomic ? " with" : " without")
                  << " atomic sums: " << summary.describe() << "\n";
        std::set<std::string> rowSums, ran;
        cuda::KernelPackage package = packageOf(*compiled->module);
        for (const cuda::RecurrenceDesc &rec : package.recurrences())
          for (const cuda::LaunchDesc &l : rec.sequential)
            for (const cuda::BufferDesc &b : rec.buffers)
              if (b.role == cuda::BufferRole::Output && l.params.front().value == cuda::warpPartialsOf(b.name)) rowSums.insert(l.kernel);
        for (const gpu::KernelTraffic &k : device->traffic()) ran.insert(k.kernel);
        EXPECT_FALSE(rowSums.empty()) << model;
        for (const std::string &kernel : rowSums) EXPECT_EQ(ran.count(kernel), atomic ? 0u : 1u) << kernel;
      }
}

// The selective SSM at shapes with several blocks per dimension and a partial one, from initial
// states; n = 8, so that lane counts up to 8 divide it. No plans yet.
ReferenceRuns selectiveSsmRuns() {
  ReferenceRuns runs;
  runs.shapes = {{2, 37, {{"d", 130}, {"n", 8}}}, {1, 9, {{"d", 33}, {"n", 8}}}};
  runs.initialStates = {true};
  runs.plans.clear();
  return runs;
}

// A forward whose checkpoints no backward reads (inference, the PyTorch op's forward) runs under a
// plan made for its own kernels, passed no checkpoint buffer: the selective SSM (whose forward
// alone may hold all of n in one thread) at several blocks of channels with 1, 2 and 8 lanes, and
// minGRU and minLSTM at the odd shapes, both strategies, against float64.
TEST(Emulation, ForwardAloneMatchesReference) {
  for (const char *model : {"selective_ssm", "mingru", "minlstm"}) {
    auto compiled = compileReference(readModel(model), std::string(model) + ".scan");
    ASSERT_TRUE(compiled);
    std::unique_ptr<EmulatedBackend> device = emulatedBackend();
    ErrorSummary summary;
    bool ssm = std::string(model) == "selective_ssm";
    ReferenceRuns runs = ssm ? selectiveSsmRuns() : ReferenceRuns{};
    runs.passes = cuda::Passes::Forward;
    if (ssm) {
      for (int64_t lanes : {1, 2, 8}) {
        runs.plans.push_back({cuda::Strategy::Sequential, std::nullopt, lanes});
        runs.plans.push_back({cuda::Strategy::Chunked, 5, lanes});
      }
    }
    checkAgainstReference(*compiled->module, *device, summary, runs);
    EXPECT_EQ(summary.worst.count("backward f32"), 0u);
    std::cout << "[ emulation ] " << model << ", forward alone: " << summary.describe() << "\n";
  }
}

// A pair whose forward deals the lane dimension to other lanes than its backward (Plan::forwardLanes):
// the backward reads the forward's checkpoints whatever lanes wrote them.
TEST(Emulation, ForwardWithItsOwnLanesFeedsTheBackward) {
  auto compiled = compileReference(readModel("selective_ssm"), "selective_ssm.scan");
  ASSERT_TRUE(compiled);
  std::unique_ptr<EmulatedBackend> device = emulatedBackend();
  ErrorSummary summary;
  ReferenceRuns runs = selectiveSsmRuns();
  for (auto [forward, backward] : {std::pair<int64_t, int64_t>{1, 4}, {8, 2}, {2, 8}}) {
    runs.plans.push_back({cuda::Strategy::Sequential, 4, backward, std::nullopt, forward});
    runs.plans.push_back({cuda::Strategy::Chunked, 5, backward, std::nullopt, forward});
  }
  checkAgainstReference(*compiled->module, *device, summary, runs);
  EXPECT_EQ(summary.runs, 12);
  std::cout << "[ emulation ] selective_ssm, forward lanes of its own: " << summary.describe() << "\n";
  // The forward's kernels run with the forward's lanes: a quarter of the threads of 4 lanes.
  auto forwardThreads = [&](std::optional<int64_t> forwardLanes) {
    ReferenceRuns one;
    one.shapes = {{1, 9, {{"d", 256}, {"n", 8}}}};
    one.initialStates = {true};
    one.plans = {{cuda::Strategy::Chunked, 5, 4, std::nullopt, forwardLanes}};
    device->clearTraffic();
    ErrorSummary ignored;
    checkAgainstReference(*compiled->module, *device, ignored, one);
    for (const gpu::KernelTraffic &k : device->traffic())
      if (k.kernel == "sf_selective_ssm_chunk") return k.threads;
    return uint64_t{0};
  };
  EXPECT_EQ(forwardThreads(1) * 4, forwardThreads(std::nullopt));
  EXPECT_GT(forwardThreads(1), 0u);
}

// A long sequence: T = 10^5 steps from initial states, chunked (the planner's choice at this
// width: carries across thousands of chunks) and sequential, forward and backward, against the
// float64 reference.
TEST(Emulation, MinGruOverAHundredThousandSteps) {
  auto compiled = compileReference(readModel("mingru"), "mingru.scan");
  ASSERT_TRUE(compiled);
  std::unique_ptr<EmulatedBackend> device = emulatedBackend();
  ErrorSummary summary;
  ReferenceRuns runs;
  runs.shapes = {{1, 100000, {{"d", 5}}}};
  runs.plans = {{std::nullopt, std::nullopt}, {cuda::Strategy::Sequential, std::nullopt}};
  runs.initialStates = {true};
  checkAgainstReference(*compiled->module, *device, summary, runs);
  std::cout << "[ emulation ] mingru T=100000: " << summary.describe() << "\n";
}

// Long sequences whose decay is 1 - 1e-4 (tests/accuracy: minGRU-like and selective-SSM-like, as the
// CPU backend's accuracy tests): T = 10^5 from initial states, the planner's plan (chunked: carries
// across thousands of chunks), forward and backward, within the float32 bounds of ReferenceCheck.h
// against float64 (MinGruOverAHundredThousandSteps covers the sequential plan at this length). The
// emulator computes the kernels' exp with the host's, so this checks the carries and the
// recomputation over ~10^4-step memories, not the GPU's exp.
TEST(Emulation, LongDecaysOverAHundredThousandSteps) {
  for (const char *program : {"long_gru", "long_ssm"}) {
    SCOPED_TRACE(program);
    std::ifstream in(std::string(SCANFORGE_SOURCE_DIR) + "/tests/accuracy/" + program + ".scan");
    std::stringstream source;
    source << in.rdbuf();
    auto compiled = compileReference(source.str(), std::string(program) + ".scan");
    ASSERT_TRUE(compiled);
    std::unique_ptr<EmulatedBackend> device = emulatedBackend();
    ErrorSummary summary;
    ReferenceRuns runs;
    runs.shapes = {{1, 100000, {{"d", 8}, {"n", 4}}}};
    if (std::string(program) == "long_gru") runs.shapes = {{1, 100000, {{"d", 8}}}};
    runs.plans = {{std::nullopt, std::nullopt}};
    runs.initialStates = {true};
    checkAgainstReference(*compiled->module, *device, summary, runs);
    std::cout << "[ emulation ] " << program << " T=100000: " << summary.describe() << "\n";
  }
}

// A batch beyond the grid's y extent runs in slices of at most that many elements (the runner offsets
// the per-element buffers, shares the parameters and zeroes their gradients once): here with the
// emulator's limit lowered to 3, B = 7 runs as 3 + 3 + 1, forward and backward under every plan,
// against the float64 reference; the selective SSM has parameter gradients summed over the slices.
TEST(Emulation, BatchesBeyondTheGridLimitRunInSlices) {
  for (const char *model : {"mingru", "selective_ssm"}) {
    SCOPED_TRACE(model);
    auto compiled = compileReference(readModel(model), std::string(model) + ".scan");
    ASSERT_TRUE(compiled);
    std::unique_ptr<EmulatedBackend> device = emulatedBackend();
    device->options().maxGridYZ = 3;
    ErrorSummary summary;
    ReferenceRuns runs;
    runs.shapes = {{7, 9, {{"d", 5}, {"n", 2}}}};
    if (std::string(model) == "mingru") runs.shapes = {{7, 9, {{"d", 5}}}};
    checkAgainstReference(*compiled->module, *device, summary, runs);
    std::cout << "[ emulation ] " << model << " B=7 in slices of 3: " << summary.describe() << "\n";
  }
}

// Addresses beyond 2^31 elements, without the memory: minGRU at B = 2, T = 1, d = 2^30 + 256 (2^31 +
// 512 elements per tensor, 8 GiB each, allocated untouched), only the grid's last block run (batch
// element 1, the last block's 256 channels: elements 2^31 + 256 .. 2^31 + 511). With 32-bit index arithmetic
// the block would read and write 2^32 elements too low, outside the allocation (the emulator's
// bounds check), or into the wrong place; here it reads its inputs and writes h where they are.
TEST(Emulation, AddressesBeyondTwoToThe31Elements) {
  auto compiled = compileReference(readModel("mingru"), "mingru.scan");
  ASSERT_TRUE(compiled);
  cuda::KernelPackage package = packageOf(*compiled->module);
  std::unique_ptr<EmulatedBackend> device = emulatedBackend();
  const int64_t D = (int64_t{1} << 30) + 256, channels = package.recurrence("mingru").sequential.front().block;
  const unsigned blocks = static_cast<unsigned>((D + channels - 1) / channels);
  device->options().onlyBlock = std::array<unsigned, 3>{blocks - 1, 1, 0};
  device->options().detectRaces = false;
  device->options().recordTraffic = false;
  cuda::RecurrenceRunner runner(package, "mingru", *device);
  cuda::Shape shape{2, 1, {{"d", D}}};
  cuda::Plan plan = runner.plan(shape, cuda::Strategy::Sequential, std::nullopt);
  const size_t bytes = static_cast<size_t>(2 * D) * sizeof(float);
  cuda::BufferMap buffers;
  for (const char *name : {"k", "u", "h"}) buffers[name] = device->allocateUntouched(bytes);

  // The last block's elements: batch element 1, channels [first, D).
  const int64_t first = (blocks - 1) * channels, count = D - first, offset = D + first;
  ASSERT_GT(offset, int64_t{1} << 31);
  std::vector<float> k(count), u(count), h(count, NAN);
  for (int64_t i = 0; i < count; ++i) {
    k[i] = 0.25f + 0.001f * static_cast<float>(i);
    u[i] = -0.5f + 0.01f * static_cast<float>(i);
  }
  device->upload(buffers["k"] + offset * sizeof(float), k.data(), count * sizeof(float));
  device->upload(buffers["u"] + offset * sizeof(float), u.data(), count * sizeof(float));
  runner.forward(shape, plan, buffers);
  device->download(h.data(), buffers["h"] + offset * sizeof(float), count * sizeof(float));
  for (int64_t i = 0; i < count; ++i) {
    double z = 1 / (1 + std::exp(-double(k[i]))), g = u[i] >= 0 ? u[i] + 0.5 : 1 / (1 + std::exp(-double(u[i])));
    EXPECT_NEAR(h[i], z * g, 1e-6) << "channel " << first + i;  // from h0 = 0: h = z * g(u)
  }
}

// Gradients do not depend on the order blocks and warps run in: each (batch element, chunk) writes
// its parameter gradients' partial sums, each warp its sums of a per-step output over channels
// (the selective SSM's B.grad and C.grad), and a second kernel adds them in a fixed order. Five emulator
// seeds (five interleavings of resident blocks and warps) give the same bits, sequential and
// chunked (with lanes too where a register dimension is dealt to them), at 300 channels (several
// blocks along x), B = 3, T = 17, register dimensions of 4; per-channel parameters
// (selective SSM, LRU, GLU RNN, the kitchen recurrence's w[d, n]) and a gradient summed over a
// channel dimension the parameter lacks (outer's p[e], summed over d).
TEST(Emulation, GradientsAreIdenticalAcrossSchedules) {
  std::vector<ModelVariant> programs;
  for (const char *model : {"selective_ssm", "lru", "glu_rnn"}) programs.push_back({model, readModel(model)});
  for (const ModelVariant &edge : edgeRecurrences())
    if (edge.name != "shared_state_fallback") programs.push_back(edge);
  for (const ModelVariant &program : programs) {
    auto compiled = compileReference(program.source, program.name + ".scan");
    ASSERT_TRUE(compiled);
    cuda::KernelPackage package = packageOf(*compiled->module);
    mlir::SymbolTable symbols(*compiled->module);
    mlir::ModuleAnalysisManager analyses(*compiled->module, /*passInstrumentor=*/nullptr);
    const cuda::RecurrenceDesc &rec = *std::find_if(package.recurrences().begin(), package.recurrences().end(),
                                                    [](const cuda::RecurrenceDesc &r) { return r.adjointOf.empty(); });
    const cuda::RecurrenceDesc &bwd = package.recurrence(rec.backward);
    cuda::Shape shape{3, 17, {}};
    for (const std::string &d : rec.channelDims) shape.dims[d] = d == rec.channelDims.front() ? 300 : 2;
    for (const std::string &d : rec.registerDims) shape.dims[d] = 4;
    auto fwd = symbols.lookup<scan::RecurrenceOp>(rec.name);
    cuda::Golden golden = cuda::readGolden(package::makeGolden(fwd, scan::backwardOf(fwd), analyses, shape, 5, true), rec.name);
    int accums = 0, warpSums = 0;
    std::vector<cuda::PlanChoice> choices = {{cuda::Strategy::Sequential, 4}, {cuda::Strategy::Chunked, 5}};
    if (!rec.laneDim.empty())  // the lanes' partial sums, and a gradient without the lane dimension (D.grad)
      choices.push_back({cuda::Strategy::Chunked, 5, 2});
    for (const cuda::PlanChoice &choice : choices) {
      std::map<std::string, std::vector<double>> first;
      for (uint64_t seed = 1; seed <= 5; ++seed) {
        SCOPED_TRACE(program.name + " " + shape.describe() + ", " + choice.describe() + ", emulator seed " + std::to_string(seed));
        std::unique_ptr<EmulatedBackend> device = emulatedBackend(seed);
        cuda::RecurrenceRunner runner(package, rec.name, *device);
        cuda::GoldenReport report = cuda::runGolden(runner, golden, choice.planFor(runner, shape));
        for (const cuda::TensorCheck &c : report.checks) {
          EXPECT_LE(c.error, c.tolerance) << c.stage << " " << c.name;
          if (c.stage != "backward") continue;  // every gradient: parameters' and inputs'
          // Except a sum over channels into an output that keeps other channel dimensions (outer's
          // x.grad[e], summed over d): added atomically into a zeroed buffer, with no warp rows.
          const std::vector<std::string> &zeroed = bwd.zeroInit;
          const cuda::BufferDesc &desc = *bwd.buffer(c.name);
          bool rows = bwd.buffer(cuda::warpPartialsOf(c.name)) != nullptr;
          if (desc.role == cuda::BufferRole::Output && !rows &&
              (std::count(zeroed.begin(), zeroed.end(), c.name) || std::count(zeroed.begin(), zeroed.end(), cuda::f32SumOf(c.name))))
            continue;
          if (desc.role == cuda::BufferRole::Accum) ++accums;
          if (desc.role == cuda::BufferRole::Output && rows) ++warpSums;
          if (seed == 1) {
            first[c.name] = c.got;
            continue;
          }
          const std::vector<double> &want = first.at(c.name);
          for (size_t i = 0; i < want.size(); ++i)
            if (std::memcmp(&c.got[i], &want[i], sizeof(double)) != 0) {
              ADD_FAILURE() << c.name << "[" << i << "] = " << std::hexfloat << c.got[i] << ", with seed 1 " << want[i];
              break;
            }
        }
      }
    }
    EXPECT_GT(accums, 0) << program.name << " has no parameter gradient";
    if (program.name == "selective_ssm") {
      EXPECT_GT(warpSums, 0) << "B.grad and C.grad sum over d";
    }
  }
}

// The package `scanc --emit-package` wrote at build time, read from disk with its goldens, exactly
// as scan-package-run does on a GPU machine.
TEST(EmittedPackage, GoldensPassOnTheEmulation) {
  cuda::KernelPackage package = cuda::KernelPackage::load(SCANFORGE_MODELS_PACKAGE);
  std::vector<cuda::Golden> goldens = cuda::loadGoldens(SCANFORGE_MODELS_PACKAGE);
  ASSERT_EQ(goldens.size(), 14u) << "two shapes for each of the 7 models";
  std::unique_ptr<EmulatedBackend> device = emulatedBackend();
  for (const cuda::Golden &golden : goldens) {
    cuda::RecurrenceRunner runner(package, golden.forward, *device);
    for (const cuda::PlanChoice &choice : cuda::goldenPlans()) {
      SCOPED_TRACE(golden.name + ", " + choice.describe());
      cuda::GoldenReport report = cuda::runGolden(runner, golden, choice.planFor(runner, golden.shape));
      EXPECT_FALSE(report.checks.empty());
      for (const cuda::TensorCheck &c : report.checks) EXPECT_LE(c.error, c.tolerance) << c.stage << " " << c.name;
    }
  }
}

// Runs `kernel(const float *x, float *out, int n)` of `source` over x in blocks of 128 threads;
// returns its `outputs` results per element, output after output ([outputs][x.size()]).
std::vector<float> runElementwise(EmulatedBackend &device, const cuda::ModuleSource &source, const std::string &kernel,
                                  const std::vector<float> &x, int outputs) {
  std::unique_ptr<cuda::LoadedModule> module = device.load(source);
  int n = static_cast<int>(x.size());
  cuda::DeviceBuffer in(device, x.size() * 4), out(device, outputs * x.size() * 4);
  device.upload(in.get(), x.data(), x.size() * 4);
  cuda::DevicePtr inPtr = in.get(), outPtr = out.get();
  void *args[] = {&inPtr, &outPtr, &n};
  cuda::LaunchConfig config;
  config.grid[0] = static_cast<unsigned>((n + 127) / 128);
  config.block = 128;
  module->launch(kernel, config, args, 0);
  std::vector<float> got(outputs * x.size());
  device.download(got.data(), out.get(), got.size() * 4);
  return got;
}

// The prelude's gate functions (branch-free, MUFU.EX2 and MUFU.RCP; the emulator gives them the
// 2-ulp and 1-ulp errors CUDA documents) against float64 from -120 to 120 and at the special
// values: within 6 + 1.25 |x| ulp where the result is a normal float (e^-|x| is 2^(-|x| log2(e)):
// the product rounded to a float is a relative error of up to |x| 2^-24 in the result, at most |x|
// ulp, and log2(e) rounded to a float adds 0.22 |x| ulp), below that
// within the smallest normal float (flushed to 0), finite for every finite argument, NaN for NaN
// only, a gate never above 1.
TEST(PreludeMath, GatesWithinTheirBoundAndNaNOnlyFromNaN) {
  std::unique_ptr<EmulatedBackend> device = emulatedBackend();
  cuda::ModuleSource source{"gates.cu", cuda::cudaPrelude() + R"(
extern "C" __global__ void __launch_bounds__(128) gates(const float *x, float *out, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  out[i] = sf_sigmoid(x[i]);
  out[n + i] = sf_softplus(x[i]);
  out[2 * n + i] = sf_g(x[i]);
}
)", {}, {{"gates", 3}}};
  std::vector<float> x;
  for (int i = -24000; i <= 24000; ++i) x.push_back(static_cast<float>(i) * 0.005f);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e4f, -1e4f, 3e38f, -3e38f, INFINITY, -INFINITY, NAN}) x.push_back(v);
  std::vector<float> got = runElementwise(*device, source, "gates", x, 3);
  auto sigmoid = [](double v) { return v >= 0 ? 1 / (1 + std::exp(-v)) : std::exp(v) / (1 + std::exp(v)); };
  auto softplus = [](double v) { return std::max(v, 0.0) + std::log1p(std::exp(-std::fabs(v))); };
  auto g = [&](double v) { return v >= 0 ? v + 0.5 : sigmoid(v); };
  const char *names[] = {"sigmoid", "softplus", "g"};
  double worst[3] = {0, 0, 0};
  for (size_t i = 0; i < x.size(); ++i) {
    double want[3] = {sigmoid(x[i]), softplus(x[i]), g(x[i])};
    for (int f = 0; f < 3; ++f) {
      float y = got[f * x.size() + i];
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(y)) << names[f] << "(NaN) = " << y;
        continue;
      }
      ASSERT_FALSE(std::isnan(y)) << names[f] << "(" << x[i] << ") is NaN";
      if (std::isfinite(x[i])) {
        EXPECT_TRUE(std::isfinite(y)) << names[f] << "(" << x[i] << ") = " << y;
      }
      if (!std::isfinite(want[f])) {
        EXPECT_EQ(y, want[f]) << names[f] << "(" << x[i] << ")";
        continue;
      }
      if (std::fabs(want[f]) < 1.17549435e-38) {  // subnormal: flushed to 0 by MUFU.EX2
        EXPECT_NEAR(y, want[f], 1.17549435e-38) << names[f] << "(" << x[i] << ")";
        continue;
      }
      double ulps = std::fabs(y - want[f]) / std::ldexp(1.0, std::ilogb(static_cast<float>(want[f])) - 23);
      worst[f] = std::max(worst[f], ulps);
      if (f == 0) {
        EXPECT_LE(y, 1.0f) << "sigmoid(" << x[i] << ")";
      }
      EXPECT_LE(ulps, 6.0 + 1.25 * std::fabs(x[i])) << names[f] << "(" << x[i] << ") = " << y << ", float64 " << want[f];
    }
  }
  std::cout << "[ prelude ] worst ulps: sigmoid " << worst[0] << ", softplus " << worst[1] << ", g " << worst[2] << "\n";
}

// The language's exp (sf_exp: the argument clamped so that the result is normal and finite) against
// float64 of the clamped argument, from -100 to 100 and at the special values: within 4 ulp, finite
// for every finite or infinite argument, NaN for NaN only.
TEST(PreludeMath, LanguageExpWithinFourUlp) {
  std::unique_ptr<EmulatedBackend> device = emulatedBackend();
  cuda::ModuleSource source{"exp.cu", cuda::cudaPrelude() + R"(
extern "C" __global__ void __launch_bounds__(128) exps(const float *x, float *out, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) out[i] = sf_exp(x[i]);
}
)", {}, {{"exps", 3}}};
  std::vector<float> x;
  for (int i = -40000; i <= 40000; ++i) x.push_back(static_cast<float>(i) * 0.0025f + 1e-4f * static_cast<float>(i % 7));
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, scan::kExpArgMin, scan::kExpArgMax, std::nextafter(scan::kExpArgMax, 0.0f),
                  1e4f, -1e4f, 3e38f, -3e38f, INFINITY, -INFINITY, NAN})
    x.push_back(v);
  std::vector<float> got = runElementwise(*device, source, "exps", x, 1);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "exp(NaN) = " << got[i];
      continue;
    }
    ASSERT_TRUE(std::isfinite(got[i])) << "exp(" << x[i] << ") = " << got[i];
    double want = std::exp(std::clamp(static_cast<double>(x[i]), static_cast<double>(scan::kExpArgMin),
                                      static_cast<double>(scan::kExpArgMax)));
    double ulps = std::fabs(got[i] - want) / std::ldexp(1.0, std::max(std::ilogb(want), -126) - 23);
    worst = std::max(worst, ulps);
    EXPECT_LE(ulps, 4.0) << "exp(" << std::hexfloat << x[i] << ") = " << got[i] << ", float64 " << want;
  }
  std::cout << "[ prelude ] worst ulps: exp " << worst << "\n";
}

// minLSTM's gate sigmoid(softplus(a) - softplus(b)), one quotient in the prelude, against float64
// on a grid of (a, b) from -100 to 100 and with infinities and NaN: within 4 + 1.25 |d| ulp, d =
// max(b, 0) - max(a, 0) (the argument of its exp(-|d|), as the gates above), where the result is at
// least 2^-120 (below, within two smallest normal floats: exp(-|d|) stops there), never above 1,
// finite for finite arguments, NaN from NaN only.
TEST(PreludeMath, SoftplusDifferenceGateIsOneQuotient) {
  std::unique_ptr<EmulatedBackend> device = emulatedBackend();
  cuda::ModuleSource source{"ratio.cu", cuda::cudaPrelude() + R"(
extern "C" __global__ void __launch_bounds__(128) ratio(const float *a, const float *b, float *out, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) out[i] = sf_sigmoid_softplus_difference(a[i], b[i]);
}
)", {}, {{"ratio", 4}}};
  std::unique_ptr<cuda::LoadedModule> module = device->load(source);
  std::vector<float> values;
  for (int i = -400; i <= 400; ++i) values.push_back(static_cast<float>(i) * 0.25f + 0.0625f * static_cast<float>(i % 3));
  for (float v : {0.0f, -0.0f, 1e4f, -1e4f, INFINITY, -INFINITY, NAN}) values.push_back(v);
  std::vector<float> a, b;
  for (float x : values)
    for (float y : values) {
      a.push_back(x);
      b.push_back(y);
    }
  int n = static_cast<int>(a.size());
  cuda::DeviceBuffer aBuf(*device, a.size() * 4), bBuf(*device, b.size() * 4), out(*device, a.size() * 4);
  device->upload(aBuf.get(), a.data(), a.size() * 4);
  device->upload(bBuf.get(), b.data(), b.size() * 4);
  cuda::DevicePtr aPtr = aBuf.get(), bPtr = bBuf.get(), outPtr = out.get();
  void *args[] = {&aPtr, &bPtr, &outPtr, &n};
  cuda::LaunchConfig config;
  config.grid[0] = static_cast<unsigned>((n + 127) / 128);
  config.block = 128;
  module->launch("ratio", config, args, 0);
  std::vector<float> got(a.size());
  device->download(got.data(), out.get(), got.size() * 4);
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    std::string at = "(" + std::to_string(a[i]) + ", " + std::to_string(b[i]) + ") = " + std::to_string(got[i]);
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << at;
      continue;
    }
    if (a[i] == INFINITY && b[i] == INFINITY) {  // softplus(inf) - softplus(inf) is NaN in the language
      EXPECT_TRUE(std::isnan(got[i])) << at;
      continue;
    }
    ASSERT_FALSE(std::isnan(got[i])) << at;
    EXPECT_LE(got[i], 1.0f) << at;
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) continue;
    EXPECT_TRUE(std::isfinite(got[i])) << at;
    // (1 + e^a) / ((1 + e^a) + (1 + e^b)), scaled by e^-max(a, b, 0) so that nothing overflows.
    long double m = std::max({static_cast<long double>(a[i]), static_cast<long double>(b[i]), 0.0L});
    long double pa = std::exp(-m) + std::exp(a[i] - m), pb = std::exp(-m) + std::exp(b[i] - m);
    double want = static_cast<double>(pa / (pa + pb));
    if (want < std::ldexp(1.0, -120)) {
      EXPECT_NEAR(got[i], want, 2 * 1.17549435e-38) << at;
      continue;
    }
    double ulps = std::fabs(got[i] - want) / std::ldexp(1.0, std::ilogb(static_cast<float>(want)) - 23);
    worst = std::max(worst, ulps);
    double d = std::max(b[i], 0.0f) - std::max(a[i], 0.0f);
    EXPECT_LE(ulps, 4.0 + 1.25 * std::fabs(d)) << at << ", float64 " << want;
  }
  std::cout << "[ prelude ] sigmoid(softplus(a) - softplus(b)): worst " << worst << " ulp over " << n << " pairs\n";
}

// The emulator itself: shuffles exchange values between the concurrently running lanes of a warp,
// and a lane that skips a shuffle fails the launch instead of hanging it.
TEST(EmulatedBackend, ShufflesExchangeAndDivergenceFails) {
  std::unique_ptr<EmulatedBackend> device = emulatedBackend();
  cuda::ModuleSource source{"warp.cu", R"(
extern "C" __global__ void __launch_bounds__(64) lane_sum(float *out, int skipLane) {
  if (static_cast<int>(threadIdx.x) == skipLane) return;
  float v = static_cast<float>(threadIdx.x);
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  out[blockIdx.x * 64 + threadIdx.x] = v;
}
)", {}, {{"lane_sum", 2}}};
  std::unique_ptr<cuda::LoadedModule> module = device->load(source);
  cuda::DeviceBuffer out(*device, 2 * 64 * sizeof(float));
  cuda::DevicePtr ptr = out.get();
  int skip = -1;
  void *args[] = {&ptr, &skip};
  cuda::LaunchConfig config;
  config.grid[0] = 2;
  config.block = 64;
  module->launch("lane_sum", config, args, 0);
  std::vector<float> sums(128);
  device->download(sums.data(), out.get(), sums.size() * sizeof(float));
  for (int i = 0; i < 128; ++i) EXPECT_EQ(sums[i], (i % 64) < 32 ? 496.0f : 1520.0f) << "thread " << i;
  skip = 3;
  try {
    module->launch("lane_sum", config, args, 0);
    FAIL() << "a divergent warp went unnoticed";
  } catch (const cuda::CudaError &e) {
    EXPECT_NE(std::string(e.what()).find("(divergence)"), std::string::npos) << e.what();
  }
}

// A failing launch names the kernel, the recurrence, the shapes, the plan and the device.
// With a lane dimension the runner plans every lane count that divides it and keeps the cheapest;
// a forced lane count must be one of them.
TEST(RecurrenceRunner, PlansLanesPerChannelByTheModel) {
  auto compiled = compileReference(readModel("selective_ssm"), "selective_ssm.scan");
  ASSERT_TRUE(compiled);
  cuda::KernelPackage package = packageOf(*compiled->module);
  std::unique_ptr<EmulatedBackend> device = emulatedBackend();
  cuda::RecurrenceRunner runner(package, "selective_ssm", *device);
  cuda::Shape bench{8, 4096, {{"d", 1024}, {"n", 16}}};
  cuda::Plan plan = runner.plan(bench);
  // Whole registers (1 lane) bound a chunked tile of 128 threads at 6 steps by shared memory (48
  // KiB over 8 KiB per step); 4 lanes allow 24.
  EXPECT_GT(plan.lanes, 1) << cuda::strategyName(plan.strategy) << " L=" << plan.chunk;
  EXPECT_EQ(runner.plan(bench, cuda::Strategy::Chunked, std::nullopt, 1).chunk, 6);
  EXPECT_EQ(runner.plan(bench, cuda::Strategy::Sequential, 4, 16).lanes, 16);
  EXPECT_EQ(runner.plan({2, 37, {{"d", 5}, {"n", 3}}}).lanes, 1);  // 3: no other lane count divides it
  // A forward alone is planned for its own kernels: all of n in one thread (the backward's two
  // states of n floats, and its shared memory per step, no longer bind), chunks of 128 steps.
  cuda::Plan alone = runner.plan(bench, std::nullopt, std::nullopt, std::nullopt, std::nullopt, cuda::Passes::Forward);
  EXPECT_EQ(cuda::describe(alone), "chunked L=128") << cuda::describe(plan);
  // The pair's forward gets lanes of its own at the pair's chunks: its checkpoints are the same
  // whatever lanes write them, and without the backward it holds all of n in one thread.
  EXPECT_EQ(cuda::describe(plan), "chunked L=16 lanes=4 (forward 1 lane)");
  EXPECT_EQ(cuda::describe(plan.forwardPlan()), "chunked L=16");
  // Forced lanes are both directions'.
  EXPECT_EQ(runner.plan(bench, std::nullopt, std::nullopt, 4).forwardLanes, std::nullopt);
  auto error = [&](const cuda::Shape &shape, int64_t lanes) {
    try {
      runner.plan(shape, std::nullopt, std::nullopt, lanes);
    } catch (const cuda::CudaError &e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error(bench, 3), "selective_ssm: 3 lanes per channel: not a power of two up to 32 that divides n = 16 (B=8 T=4096 d=1024 n=16)");
  EXPECT_EQ(error(bench, 32), "selective_ssm: 32 lanes per channel: not a power of two up to 32 that divides n = 16 (B=8 T=4096 d=1024 n=16)");
  // Matrix states at head sizes people use: k dealt to enough lanes that the backward's two states
  // (S.adj and the recomputed S) stay within kMaxStateRegisters floats per thread.
  auto attention = compileReference(readModel("linear_attention"), "linear_attention.scan");
  ASSERT_TRUE(attention);
  cuda::KernelPackage attentionPackage = packageOf(*attention->module);
  cuda::RecurrenceRunner attentionRunner(attentionPackage, "linear_attention", *device);
  for (int64_t k : {64, 128}) {
    cuda::Plan p = attentionRunner.plan({8, 4096, {{"e", 1024}, {"k", k}}});
    EXPECT_LE(2 * k / p.lanes, cuda::kMaxStateRegisters) << "k=" << k << ": " << p.lanes << " lanes";
  }
  auto gru = compileReference(readModel("mingru"), "mingru.scan");
  ASSERT_TRUE(gru);
  cuda::KernelPackage gruPackage = packageOf(*gru->module);
  cuda::RecurrenceRunner gruRunner(gruPackage, "mingru", *device);
  try {
    gruRunner.plan({2, 5, {{"d", 3}}}, std::nullopt, std::nullopt, 2);
    FAIL() << "lanes for a recurrence without a lane dimension";
  } catch (const cuda::CudaError &e) {
    EXPECT_EQ(std::string(e.what()), "mingru has no lane dimension, so it runs with 1 lane per channel, not 2");
  }
}

TEST(RecurrenceRunner, LaunchErrorsNameKernelAndShapes) {
  auto compiled = compileReference(readModel("mingru"), "mingru.scan");
  ASSERT_TRUE(compiled);
  nlohmann::json manifest = manifestOf(*compiled->module);
  manifest["recurrences"][0]["strategies"]["sequential"][0]["block"] = 2048;  // beyond any GPU
  cuda::KernelPackage package = cuda::KernelPackage::fromJson(manifest, sourcesOf(*compiled->module));
  std::unique_ptr<EmulatedBackend> device = emulatedBackend();
  cuda::RecurrenceRunner runner(package, "mingru", *device);
  cuda::Shape shape{2, 5, {{"d", 3}}};
  cuda::Plan plan = runner.plan(shape);
  std::map<std::string, cuda::DeviceBuffer> owned;
  cuda::BufferMap buffers;
  for (const char *name : {"k", "u", "h"}) {
    owned[name] = cuda::DeviceBuffer(*device, runner.bytes(*runner.forwardDesc().buffer(name), shape, plan));
    buffers[name] = owned[name].get();
  }
  try {
    runner.forward(shape, plan, buffers);
    FAIL() << "the launch did not fail";
  } catch (const cuda::CudaError &e) {
    EXPECT_EQ(std::string(e.what()),
              "launching sf_mingru_seq of mingru (B=2 T=5 d=3; sequential, L=5, stash; grid 1x2x1, block 2048, 0 B shared) on "
              "CPU emulation (concurrent): sf_mingru_seq: a block of 2048 threads (1 to 1024)");
  }
  buffers.erase("k");
  try {
    runner.forward(shape, plan, buffers);
    FAIL() << "a missing input went unnoticed";
  } catch (const cuda::CudaError &e) {
    EXPECT_EQ(std::string(e.what()), "mingru: missing buffer 'k' (input, f32 [2, 5, 3])");
  }
}

}  // namespace
}  // namespace scanforge::test
