// scan-gpu-bench: times a kernel package's recurrences on the GPU, forward and forward+backward, and
// reports, measured in the same run, the fraction of the device's copy bandwidth reached on ideal
// bytes (inputs read once, outputs written once; docs/architecture.md, "Performance targets") and,
// with --peers, the time of the peer implementations (tools/scan-gpu-bench/peers.py) on the same
// shapes, and with --predictions the performance model's prediction beside each time (written by
// scanc --gpu-model --predictions on a machine with the compiler); --json writes it all as JSON
// (tools/gpu-validate.sh). Needs no MLIR: it builds in the runtime-only preset. Exit codes:
// 0 done, 1 an error, 77 no CUDA driver or GPU ("[SKIP] ...").
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/RecurrenceRunner.h"
#include "tools/common/ForcedPlan.h"
#include "tools/common/JsonCommand.h"
#include "tools/common/OpenGpu.h"
#include "tools/common/Predictions.h"

namespace {

using namespace scanforge::cuda;
using scanforge::tools::ForcedPlan;
using scanforge::tools::ForcedPlanOptions;

constexpr int kDone = 0, kFailed = 1;

// Fills buffers with hashed uniform values (never zeros) and measures copy bandwidth: both on the
// device, so that multi-GiB inputs cost no host time.
const char *kUtilitySource = R"(
extern "C" __global__ void fill_f32(float *p, unsigned long long n, unsigned seed, float lo, float hi) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    unsigned long long z = i * 0x9E3779B97F4A7C15ull + seed;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    float u = (float)((z ^ (z >> 31)) >> 40) * (1.0f / 16777216.0f);
    p[i] = lo + (hi - lo) * u;
  }
}
extern "C" __global__ void to_bf16(const float *src, unsigned short *dst, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    dst[i] = (unsigned short)(__float_as_uint(src[i]) >> 16);
}
extern "C" __global__ void copy16(const float4 *src, float4 *dst, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}
)";

class Utilities {
 public:
  explicit Utilities(CudaBackend &gpu) : gpu_(gpu) {
    module_ = gpu.load({"scan_gpu_bench_utilities.cu", kUtilitySource, {}, {{"fill_f32", 5}, {"to_bf16", 3}, {"copy16", 3}}});
  }

  void fill(DevicePtr ptr, size_t bytes, bool bf16, unsigned seed, float lo, float hi) {
    unsigned long long n = bytes / (bf16 ? 2 : 4);
    DeviceBuffer staging;
    DevicePtr target = ptr;
    if (bf16) {
      staging = DeviceBuffer(gpu_, n * 4);
      target = staging.get();
    }
    void *args[] = {&target, &n, &seed, &lo, &hi};
    module_->launch("fill_f32", grid(), args, 0);
    if (bf16) {
      void *convert[] = {&target, &ptr, &n};
      module_->launch("to_bf16", grid(), convert, 0);
      gpu_.synchronize(0);
    }
  }

  // Device-to-device copy of `bytes` (read + written counted), the median of `repeats`, in GB/s.
  double copyBandwidth(size_t bytes, int repeats) {
    DeviceBuffer src(gpu_, bytes), dst(gpu_, bytes);
    fill(src.get(), bytes, false, 1, -1.0f, 1.0f);
    DevicePtr s = src.get(), d = dst.get();
    unsigned long long n = bytes / 16;
    void *args[] = {&s, &d, &n};
    double ms = medianMs(gpu_, repeats, [&] { module_->launch("copy16", grid(), args, 0); });
    return 2.0 * bytes / (ms * 1e6);
  }

  template <class F>
  static double medianMs(CudaBackend &gpu, int repeats, F run) {
    run();  // warm-up: module loads, kernel compilation
    gpu.synchronize(0);
    std::vector<double> times;
    for (int i = 0; i < repeats; ++i) {
      auto begin = std::chrono::steady_clock::now();
      run();
      gpu.synchronize(0);
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  }

 private:
  LaunchConfig grid() const {
    LaunchConfig c;
    c.grid[0] = static_cast<unsigned>(gpu_.multiprocessors() * 8);
    c.block = 256;
    return c;
  }
  CudaBackend &gpu_;
  std::unique_ptr<LoadedModule> module_;
};

struct Case {
  std::string recurrence;
  Shape shape;
};

// The benchmark shapes (docs/architecture.md, "Performance targets"): minGRU/minLSTM at B=64 T=4096
// and B=8 T=16384 (D=1024), the selective SSM at B=8 T=4096 and B=64 T=512 (D=1024, N=16). Other
// recurrences: the first two.
std::vector<Case> defaultCases(const KernelPackage &package, const std::vector<std::string> &names, int64_t D, int64_t N) {
  std::vector<Case> cases;
  for (const std::string &name : names) {
    const RecurrenceDesc &rec = package.recurrence(name);
    std::vector<std::pair<int64_t, int64_t>> bt = {{64, 4096}, {8, 16384}};
    if (!rec.registerDims.empty()) bt = {{8, 4096}, {64, 512}};
    for (auto [B, T] : bt) {
      Shape s{B, T, {}};
      for (const std::string &d : rec.channelDims) s.dims[d] = D;
      for (const std::string &d : rec.registerDims) s.dims[d] = N;
      cases.push_back({name, s});
    }
  }
  return cases;
}

struct Timing {
  std::string recurrence, dtype, shape, plan;
  double forwardMs = 0, forwardBackwardMs = 0, forwardBytes = 0, backwardBytes = 0;
  // A forward alone (no backward reads its checkpoints), under the plan made for it; not timed
  // under a forced plan.
  std::string alonePlan = "";
  double forwardAloneMs = 0;
  std::string refused = "";  // why a forced plan cannot run at this case (nothing timed)
};

Timing timeCase(CudaBackend &gpu, Utilities &util, const KernelPackage &package, const Case &c, int repeats,
                const ForcedPlan &forced) {
  RecurrenceRunner runner(package, c.recurrence, gpu);
  const RecurrenceDesc &fwd = runner.forwardDesc();
  const RecurrenceDesc *bwd = runner.backwardDesc();
  Plan plan = forced.planFor(runner, c.shape);
  Timing t{c.recurrence, "f32", c.shape.describe(), describe(plan)};

  // One device buffer per name: the forward's output is the backward's forward_output, and so on.
  // Optional buffers are left out (zero initial states, final states not kept) unless the backward
  // needs them (checkpoints); workspaces belong to the runner.
  std::set<std::string> neededByBackward;
  if (bwd)
    for (const BufferDesc &b : bwd->buffers)
      if (!b.optional) neededByBackward.insert(b.name);
  std::map<std::string, DeviceBuffer> owned;
  BufferMap buffers;
  unsigned seed = 17;
  auto provide = [&](const BufferDesc &b) {
    if ((b.optional && !neededByBackward.count(b.name)) || b.role == BufferRole::Workspace || buffers.count(b.name)) return;
    size_t bytes = runner.bytes(b, c.shape, plan);
    DeviceBuffer buffer(gpu, bytes);
    bool param = b.role == BufferRole::Param;
    if (param || b.role == BufferRole::Input)  // decaying parameters keep long scans finite
      util.fill(buffer.get(), bytes, b.dtype == "bf16", seed++, param ? -1.0f : -2.0f, param ? -0.05f : 2.0f);
    if (b.dtype == "bf16") t.dtype = "bf16";
    buffers[b.name] = buffer.get();
    owned[b.name] = std::move(buffer);
  };
  for (const BufferDesc &b : fwd.buffers) provide(b);
  if (bwd)
    for (const BufferDesc &b : bwd->buffers) provide(b);
  for (const BufferDesc &b : fwd.buffers)
    if (countsAsIdeal(b, false) && buffers.count(b.name)) t.forwardBytes += runner.bytes(b, c.shape, plan);
  if (bwd)
    for (const BufferDesc &b : bwd->buffers)
      if (countsAsIdeal(b, true) && buffers.count(b.name)) t.backwardBytes += runner.bytes(b, c.shape, plan);

  t.forwardMs = Utilities::medianMs(gpu, repeats, [&] { runner.forward(c.shape, plan, buffers); });
  if (bwd && !forced.any()) {
    Plan alone = runner.plan(c.shape, {}, {}, {}, {}, Passes::Forward);
    BufferMap noCheckpoints;
    for (auto &[name, ptr] : buffers)
      if (fwd.buffer(name) && fwd.buffer(name)->role != BufferRole::Checkpoint) noCheckpoints[name] = ptr;
    t.alonePlan = describe(alone);
    t.forwardAloneMs = Utilities::medianMs(gpu, repeats, [&] { runner.forward(c.shape, alone, noCheckpoints); });
  }
  if (bwd)
    t.forwardBackwardMs = Utilities::medianMs(gpu, repeats, [&] {
      runner.forward(c.shape, plan, buffers);
      runner.backward(c.shape, plan, buffers);
    });
  return t;
}

// Runs peers.py for the cases and returns its JSON ({"<recurrence> <shape> <pass>": {peer: ms}}).
nlohmann::json runPeers(const std::string &python, const std::string &script, const std::vector<Timing> &timings, int repeats) {
  nlohmann::json request = nlohmann::json::array();
  for (const Timing &t : timings) request.push_back({{"recurrence", t.recurrence}, {"shape", t.shape}, {"dtype", t.dtype}});
  std::string error;
  nlohmann::json result = scanforge::tools::runJsonCommand(
      python + " " + script + " --repeats " + std::to_string(repeats) + " '" + request.dump() + "'", error);
  if (!error.empty()) throw CudaError("the peers failed: " + error);
  return result;
}

std::string predictionColumn(const nlohmann::json &predictions, const std::string &key) {
  if (!predictions.contains(key)) return "–";
  char cell[64];
  std::snprintf(cell, sizeof cell, "%.3f ms (%.0f%%)", predictions[key]["ms"].get<double>(),
                100 * predictions[key]["of_copy"].get<double>());
  return cell;
}

std::string peerColumn(const nlohmann::json &peers, const std::string &key, double ours) {
  if (!peers.contains(key)) return "–";
  std::string text;
  for (auto &[peer, ms] : peers[key].items()) {
    text += (text.empty() ? "" : "; ") + peer;
    if (!ms.is_number()) {
      text += ": " + ms.get<std::string>();
      continue;
    }
    char cell[64];
    std::snprintf(cell, sizeof cell, " %.2f ms (%.1f×)", ms.get<double>(), ms.get<double>() / ours);
    text += cell;
  }
  return text;
}

int run(int argc, char **argv) {
  CLI::App app{"scan-gpu-bench: GPU timings of a kernel package against copy bandwidth and peers", "scan-gpu-bench"};
  std::string dir, python = "python3", cacheDir = KernelCache::defaultDirectory().string(), predictionsFile, jsonFile;
  std::vector<std::string> names;
  int64_t D = 1024, N = 16;
  int repeats = 20, device = 0;
  bool peers = false, listCases = false;
  app.add_option("package", dir, "the package directory (manifest.json and *.cu, from scanc --emit-package)")->required();
  app.add_option("--recurrence", names, "forward recurrences to time (default: mingru, minlstm, selective_ssm if present)");
  app.add_option("-D", D, "channels");
  app.add_option("-N", N, "register (state-expansion) dimension size");
  app.add_option("--repeats", repeats, "timed repetitions; the median is reported");
  app.add_flag("--peers", peers, "also time the peers of tools/scan-gpu-bench/peers.py (needs PyTorch with CUDA)");
  app.add_option("--python", python, "the Python that runs the peers");
  app.add_option("--device", device, "CUDA device ordinal");
  app.add_option("--predictions", predictionsFile,
                 "the performance model's predictions (scanc --gpu-model --predictions), printed beside each time");
  app.add_flag("--list-cases", listCases,
               "print the cases it would time, one per line as `RECURRENCE b=..,t=..,DIM=..` (scanc --gpu-model's "
               "--shape), and exit: no GPU needed");
  app.add_option("--json", jsonFile, "also write every measurement, prediction and peer time to this JSON file");
  app.add_option("--cache", cacheDir, "kernel cache directory");
  ForcedPlanOptions forcedOptions(app, "time every case");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? kDone : kFailed;
  }
  if (repeats < 1) throw CudaError("--repeats must be at least 1");
  ForcedPlan forced = forcedOptions.forced();
  forced.refusePredictions(predictionsFile);

  KernelPackage package = KernelPackage::load(dir);
  if (names.empty())
    for (const RecurrenceDesc &rec : package.recurrences())
      if (rec.name == "mingru" || rec.name == "minlstm" || rec.name == "selective_ssm") names.push_back(rec.name);
  if (names.empty()) throw CudaError(dir + " holds none of mingru, minlstm, selective_ssm: name recurrences with --recurrence");
  std::vector<Case> cases = defaultCases(package, names, D, N);
  if (listCases) {
    for (const Case &c : cases) {
      std::printf("%s b=%lld,t=%lld", c.recurrence.c_str(), static_cast<long long>(c.shape.batch),
                  static_cast<long long>(c.shape.steps));
      for (auto &[dim, size] : c.shape.dims) std::printf(",%s=%lld", dim.c_str(), static_cast<long long>(size));
      std::printf("\n");
    }
    return kDone;
  }
  nlohmann::json predictions;
  try {
    predictions = predictionsFile.empty() ? nlohmann::json::object() : scanforge::tools::readPredictions(predictionsFile);
  } catch (const std::runtime_error &e) {
    throw CudaError(std::string("--predictions: ") + e.what());
  }

  std::unique_ptr<CudaBackend> gpu = scanforge::tools::openGpuOrSkip(device, cacheDir);
  if (!gpu) return scanforge::tools::kNoGpuExit;
  Utilities util(*gpu);
  double copy = util.copyBandwidth(size_t{1} << 30, repeats);
  std::vector<Timing> timings;
  for (const Case &c : cases) {
    try {
      timings.push_back(timeCase(*gpu, util, package, c, repeats, forced));
    } catch (const PlanRefused &e) {
      // A forced plan that one case's shapes cannot take (a chunk past its shared-memory bound) is
      // that case's row, so that a sweep of plans times every case that can take it.
      if (!forced.any()) throw;
      timings.push_back({c.recurrence, "–", c.shape.describe(), "–"});
      timings.back().refused = e.what();
    }
    std::fprintf(stderr, "timed %s %s\n", c.recurrence.c_str(), c.shape.describe().c_str());
  }
  nlohmann::json peerTimes = peers ? runPeers(python, std::string(SCANFORGE_SOURCE_DIR) + "/tools/scan-gpu-bench/peers.py",
                                              timings, repeats)
                                   : nlohmann::json::object();

  std::printf("device: %s; copy bandwidth %.0f GB/s (1 GiB device-to-device, read + written); median of %d\n\n",
              gpu->describe().c_str(), copy, repeats);
  std::printf("| recurrence | dtype | shape | plan | pass | time (ms) | GB/s on ideal bytes | of copy | predicted (model) "
              "| peers (ms, peer/ours) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  nlohmann::json rows = nlohmann::json::array();
  for (const Timing &t : timings) {
    if (!t.refused.empty()) {
      std::printf("| %s | – | %s | refused: %s | – | – | – | – | – | – |\n", t.recurrence.c_str(), t.shape.c_str(), t.refused.c_str());
      rows.push_back({{"recurrence", t.recurrence}, {"shape", t.shape}, {"refused", t.refused}});
      continue;
    }
    auto row = [&](const char *pass, double ms, double bytes, const std::string &plan) {
      double gbs = bytes / (ms * 1e6);
      std::string key = scanforge::tools::resultKey(t.recurrence, t.shape, pass);
      std::printf("| %s | %s | %s | %s | %s | %.3f | %.0f | %.0f%% | %s | %s |\n", t.recurrence.c_str(), t.dtype.c_str(),
                  t.shape.c_str(), plan.c_str(), pass, ms, gbs, 100 * gbs / copy, predictionColumn(predictions, key).c_str(),
                  peerColumn(peerTimes, key, ms).c_str());
      rows.push_back({{"recurrence", t.recurrence}, {"dtype", t.dtype}, {"shape", t.shape}, {"plan", plan}, {"pass", pass},
                      {"ms", ms}, {"ideal_bytes", bytes}, {"gbs", gbs}, {"of_copy", gbs / copy},
                      {"predicted", predictions.contains(key) ? predictions[key] : nlohmann::json()},
                      {"peers", peerTimes.contains(key) ? peerTimes[key] : nlohmann::json::object()}});
    };
    row("forward", t.forwardMs, t.forwardBytes, t.plan);
    if (t.forwardAloneMs > 0) row("forward alone", t.forwardAloneMs, t.forwardBytes, t.alonePlan);
    if (t.forwardBackwardMs > 0) row("forward+backward", t.forwardBackwardMs, t.forwardBytes + t.backwardBytes, t.plan);
  }
  if (!jsonFile.empty()) {
    nlohmann::json report = {{"device", gpu->describe()}, {"copy_gbs", copy}, {"repeats", repeats}, {"rows", rows}};
    std::ofstream out(jsonFile);
    out << report.dump(2) << "\n";
    if (!out) throw CudaError("cannot write " + jsonFile);
  }
  return kDone;
}

}  // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {
    std::cerr << "scan-gpu-bench: error: " << e.what() << "\n";
    return kFailed;
  }
}
