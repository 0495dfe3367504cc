#include "tools/scanc/GpuModel.h"

#include <cstdio>
#include <iostream>
#include <random>
#include <set>

#include "compiler/api/CompiledModuleImpl.h"
#include "compiler/mlir/Target/Cuda/CudaEmitter.h"
#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/Goldens.h"
#include "runtime/cuda/KernelCache.h"
#include "runtime/cuda/KernelPackage.h"
#include "runtime/cuda/RecurrenceRunner.h"
#include "tools/common/Predictions.h"
#include "tools/gpu/emulator/EmulatedBackend.h"
#include "tools/gpu/model/Predictor.h"
#include "tools/scanc/Shape.h"

namespace scanforge::tools {

namespace {

using cuda::BufferDesc;
using cuda::BufferRole;
using cuda::RecurrenceDesc;

constexpr int kOk = 0, kUserError = 1, kInternalError = 2;
constexpr int64_t kReducedSteps = 64;  // at least; a multiple of the chunk length

std::string format(const char *spec, double value) {
  char text[64];
  std::snprintf(text, sizeof text, spec, value);
  return text;
}

// The emulated run is at B = 1 and a few chunks of T (a group of them, chunked), with every channel
// and register dimension as asked (coalescing and register pressure as at full size); its traffic
// is scaled up per launch (launchScale), for most kernels by B*T.
struct Reduced {
  cuda::Shape shape;
  cuda::Plan plan;
  double scale;
};

Reduced reducedOf(const cuda::RecurrenceRunner &runner, const cuda::Shape &full, const cuda::Plan &plan, cuda::Passes passes) {
  bool chunkedInTime = plan.chunk < full.steps;  // chunks or checkpoint intervals
  int64_t steps = chunkedInTime ? std::min(full.steps, std::max(kReducedSteps, 2 * plan.chunk))
                                : std::min(full.steps, kReducedSteps);
  // Chunked: a group of chunks (the manifest's chain_group) where T has as many, so that a tile
  // reads as many aggregates of its group's earlier chunks as at full size, (G - 1) / 2 on average.
  // With the 4 chunks of T = 64 at L = 16 minGRU's tiles read 1.5 where they read 15.5.
  if (chunkedInTime && plan.strategy == cuda::Strategy::Chunked) {
    int64_t group = runner.forwardDesc().chainGroup;
    if (passes != cuda::Passes::Forward && runner.backwardDesc()) group = std::max<int64_t>(group, runner.backwardDesc()->chainGroup);
    steps = std::min(full.steps, std::max(steps, group * plan.chunk));
  }
  steps = chunkedInTime ? steps / plan.chunk * plan.chunk : steps;
  cuda::Shape shape{1, steps, full.dims};
  cuda::Plan reduced = runner.plan(shape, plan.strategy, chunkedInTime ? plan.chunk : steps, plan.lanes, plan.stash, passes);
  reduced.forwardLanes = plan.forwardLanes;
  return {shape, reduced, static_cast<double>(full.batch * full.steps) / static_cast<double>(steps)};
}

// Device buffers for the directions `passes` names, inputs and parameters random (parameters
// negative: decaying scans stay finite). Optional buffers only where the backward needs them;
// workspaces are the runner's.
struct Buffers {
  std::vector<cuda::DeviceBuffer> owned;
  cuda::BufferMap map;
};

Buffers provide(cuda::RecurrenceRunner &runner, const cuda::Shape &shape, const cuda::Plan &plan, cuda::Passes passes) {
  const RecurrenceDesc *bwd = passes == cuda::Passes::Forward ? nullptr : runner.backwardDesc();
  std::set<std::string> neededByBackward;
  if (bwd)
    for (const BufferDesc &b : bwd->buffers)
      if (!b.optional) neededByBackward.insert(b.name);
  Buffers out;
  std::mt19937 gen(17);
  auto add = [&](const BufferDesc &b) {
    if ((b.optional && !neededByBackward.count(b.name)) || b.role == BufferRole::Workspace || out.map.count(b.name)) return;
    size_t bytes = runner.bytes(b, shape, plan);
    out.owned.emplace_back(runner.device(), bytes);
    bool param = b.role == BufferRole::Param;
    if (param || b.role == BufferRole::Input) {
      std::uniform_real_distribution<float> dist(param ? -1.0f : -2.0f, param ? -0.05f : 2.0f);
      std::vector<float> values(bytes / (b.dtype == "bf16" ? 2 : 4));
      for (float &v : values) v = dist(gen);
      std::vector<uint16_t> bf16;
      for (float v : values) bf16.push_back(cuda::toBf16(v));
      runner.device().upload(out.owned.back().get(), b.dtype == "bf16" ? static_cast<const void *>(bf16.data()) : values.data(),
                             bytes);
    } else {
      runner.device().zero(out.owned.back().get(), bytes, 0);
    }
    out.map[b.name] = out.owned.back().get();
  };
  for (const BufferDesc &b : runner.forwardDesc().buffers) add(b);
  if (bwd)
    for (const BufferDesc &b : bwd->buffers) add(b);
  return out;
}

const char *widthName(bool store, unsigned bytes) {
  static const std::map<unsigned, const char *> loads = {{1, "LDG.U8"}, {2, "LDG.U16"}, {4, "LDG.E"}, {8, "LDG.E.64"}, {16, "LDG.E.128"}};
  static const std::map<unsigned, const char *> stores = {{1, "STG.U8"}, {2, "STG.U16"}, {4, "STG.E"}, {8, "STG.E.64"}, {16, "STG.E.128"}};
  return (store ? stores : loads).at(bytes);
}

std::string widths(const gpu::InstructionMix &mix) {
  std::string text;
  for (bool store : {false, true})
    for (auto &[bytes, count] : store ? mix.storeWidths : mix.loadWidths)
      text += std::string(text.empty() ? "" : ", ") + widthName(store, bytes) + " x" + std::to_string(count);
  return text.empty() ? "none" : text;
}

// How much more a launch moves at the full shape than in the emulated run: the growth of the
// fastest-growing buffer it is passed (parameters do not grow, and would dilute a ratio of sums).
// The scan kernels stream [B, T, ...] tensors (B*T); the kernel that adds parameter-gradient
// partial sums reads a row per batch element (B, sequential) or per batch element and chunk.
double launchScale(const RecurrenceDesc &rec, const cuda::LaunchDesc &launch, const cuda::Shape &full,
                   const cuda::Plan &plan, const Reduced &reduced, const cuda::RecurrenceRunner &runner) {
  double scale = 0;
  for (const cuda::ParamDesc &p : launch.params) {
    const BufferDesc *b = p.kind == cuda::ParamDesc::Kind::Buffer ? rec.buffer(p.value) : nullptr;
    double reducedBytes = b ? static_cast<double>(runner.bytes(*b, reduced.shape, reduced.plan)) : 0;
    if (reducedBytes > 0) scale = std::max(scale, static_cast<double>(runner.bytes(*b, full, plan)) / reducedBytes);
  }
  return scale > 0 ? scale : reduced.scale;
}

struct Direction {
  double seconds = 0, idealBytes = 0, bytesMoved = 0;
};

// Predicts and prints every launch of one direction; returns its predicted call time and ideal bytes.
Direction predictDirection(const gpu::DeviceSpec &device, const RecurrenceDesc &rec, const cuda::Plan &plan,
                           const cuda::Shape &full, const Reduced &reduced, const std::vector<gpu::KernelTraffic> &traffic,
                           const gpu::BinaryTools &tools, const cuda::RecurrenceRunner &runner, bool backward) {
  cuda::Variables vars = runner.variables(full, plan);
  const std::vector<cuda::PlannedLaunch> launches = cuda::plannedLaunches(rec, plan, vars);
  std::vector<std::string> defines, names;
  for (auto &[macro, formula] : rec.defines) defines.push_back("-D" + macro + "=" + std::to_string(cuda::evaluate(formula, vars)));
  std::map<std::string, int> launchesOf;
  for (const cuda::PlannedLaunch &l : launches)
    if (launchesOf[l.desc->kernel]++ == 0) names.push_back(l.desc->kernel);
  std::map<std::string, gpu::KernelSass> sass;
  for (gpu::KernelSass &k : gpu::sassFacts(rec.source, rec.file, device.arch, defines, names, tools)) sass[k.kernel] = std::move(k);
  std::map<std::string, gpu::KernelTraffic> byKernel;
  for (const gpu::KernelTraffic &k : traffic) byKernel[k.kernel] = k;

  Direction d;
  for (const BufferDesc &b : rec.buffers)
    if (cuda::countsAsIdeal(b, backward) && !b.optional) d.idealBytes += static_cast<double>(runner.bytes(b, full, plan));
  std::vector<gpu::KernelPrediction> predictions;
  for (const auto &[desc, config] : launches) {
    const cuda::LaunchDesc &l = *desc;
    auto t = byKernel.find(l.kernel);
    if (t == byKernel.end())
      throw cuda::CudaError(l.kernel + ": the emulated run at " + reduced.shape.describe() + " recorded no traffic");
    const gpu::KernelSass &s = sass.at(l.kernel);
    // A launch that takes the chain buffer passes the carry from chunk to chunk.
    bool chained = std::any_of(l.params.begin(), l.params.end(),
                               [](const cuda::ParamDesc &p) { return p.value == cuda::chainBuffer(); });
    gpu::KernelPrediction p = gpu::predictKernel(device, s, config,
                                                 gpu::scaleTraffic(t->second, launchScale(rec, l, full, plan, reduced, runner) /
                                                                                  launchesOf[l.kernel]),
                                                 chained ? static_cast<unsigned>(cuda::chainHops(plan, rec.chainGroup)) : 0);
    predictions.push_back(p);
    d.bytesMoved += p.bytesMoved;
    std::cout << "  kernel " << l.kernel << ": grid " << config.grid[0] << "x" << config.grid[1] << "x" << config.grid[2]
              << " of " << config.block << " threads, " << config.sharedBytes << " B shared\n"
              << "    SASS: " << s.registers << " registers, spills " << s.spillStoreBytes << "/" << s.spillLoadBytes
              << " B (store/load), stack " << s.stackBytes << " B; " << widths(s.all) << "; MUFU " << s.all.mufu
              << ", CALL " << s.all.calls << ", BRA " << s.all.branches << ", BSSY " << s.all.bssy << "\n"
              << "    hot loop: "
              << (s.loop ? std::to_string(s.loop->instructions) + " instructions, " + std::to_string(s.loop->globalBytes()) +
                               " global bytes per thread, " + format("%.3f", s.loopInstructionsPerByte()) +
                               " warp instructions per byte, " + std::to_string(s.loop->loadWaits) +
                               " waits on its own loads"
                         : std::string("none (straight-line kernel)"))
              << "\n    executes: " << format("%.0f", p.instructionsPerWarp)
              << " warp instructions per warp, every basic block as often as its lines' traffic says"
              << "\n    occupancy: " << p.occupancy.blocksPerSm << " blocks/SM (limited by " << p.occupancy.limitedBy
              << "), " << p.residentWarpsPerSm << " warps resident on the busiest SM, " << format("%.2f", p.waves)
              << " waves\n"
              << "    traffic: " << format("%.3g", p.bytesMoved / 1e9) << " GB moved ("
              << format("%.2f", p.bytesMoved / d.idealBytes) << "x the call's ideal), "
              << format("%.2f", p.sectorsPerRequest) << " sectors/request, sector efficiency "
              << format("%.2f", p.sectorEfficiency) << "; bytes in flight/SM " << format("%.0f", p.bytesInFlightPerSm)
              << " vs " << format("%.0f", p.bytesInFlightNeeded) << " needed (latency x bandwidth)\n"
              << "    predicted: memory " << format("%.3f", p.memorySeconds * 1e3) << " ms, issue "
              << format("%.3f", p.issueSeconds * 1e3) << " ms, latency " << format("%.3f", p.latencySeconds * 1e3)
              << " ms" << (chained ? ", chain " + format("%.3f", p.chainSeconds * 1e3) + " ms" : std::string())
              << " -> " << p.bound << "-bound"
              << (chained ? ", plus tiles " + format("%.3f", p.tileSeconds * 1e3) + " ms" : std::string()) << ", "
              << format("%.3f", p.seconds * 1e3) << " ms\n";
  }
  d.seconds = gpu::callSeconds(device, predictions);
  return d;
}

// The emulated run of `plan` at its reduced shape: the forward's traffic, then, with
// Passes::ForwardAndBackward, the backward's (its buffers shared with the forward's).
struct Emulated {
  Reduced reduced;
  std::vector<gpu::KernelTraffic> forward, backward;
};

Emulated emulate(cuda::RecurrenceRunner &runner, gpu::EmulatedBackend &emulator, const cuda::Shape &full,
                 const cuda::Plan &plan, cuda::Passes passes) {
  Emulated run{reducedOf(runner, full, plan, passes), {}, {}};
  Buffers buffers = provide(runner, run.reduced.shape, run.reduced.plan, passes);
  emulator.clearTraffic();
  runner.forward(run.reduced.shape, run.reduced.plan, buffers.map);
  run.forward = emulator.traffic();
  if (passes == cuda::Passes::ForwardAndBackward && runner.backwardDesc()) {
    emulator.clearTraffic();
    runner.backward(run.reduced.shape, run.reduced.plan, buffers.map);
    run.backward = emulator.traffic();
  }
  return run;
}

// Prints the prediction of each direction of `rec` at `full`; with `predictions`, also adds them to that file.
void reportRecurrence(const gpu::DeviceSpec &device, const cuda::KernelPackage &package, const RecurrenceDesc &rec,
                      const cuda::Shape &full, gpu::EmulatedBackend &emulator, const gpu::BinaryTools &tools,
                      const std::string &predictions, const ForcedPlan &forced) {
  cuda::RecurrenceRunner runner(package, rec.name, emulator);
  cuda::Plan plan;
  try {
    plan = forced.planFor(runner, full);
  } catch (const cuda::CudaError &e) {
    throw ShapeError(e.what());
  }
  Emulated pair = emulate(runner, emulator, full, plan, cuda::Passes::ForwardAndBackward);
  const Reduced &reduced = pair.reduced;
  const RecurrenceDesc *bwd = runner.backwardDesc();

  std::cout << "# " << rec.name << " at " << full.describe() << " on " << device.name << " (" << device.arch
            << "); traffic emulated at " << reduced.shape.describe() << " and scaled by the bytes each launch is passed ("
            << format("%g", reduced.scale) << " for [B, T] tensors)"
            << "\nplan" << (forced.any() ? " (forced)" : "") << ": " << cuda::describe(plan) << ", " << plan.chunks << " chunk(s)"
            << "\nforward:\n";
  // The forward's kernels run with the forward's lanes (Plan::forwardLanes).
  Direction f = predictDirection(device, rec, plan.forwardPlan(), full,
                                 {reduced.shape, reduced.plan.forwardPlan(), reduced.scale}, pair.forward, tools, runner, false);
  auto line = [&](const char *what, const Direction &d) {
    double ofCopy = gpu::fractionOfCopy(device, d.idealBytes, d.seconds);
    if (!predictions.empty())
      addPrediction(predictions, resultKey(rec.name, full.describe(), what), d.seconds * 1e3, ofCopy,
                    "performance model (docs/cuda.md), " + device.name + " " + device.arch);
    std::cout << "predicted " << what << ": " << format("%.3f", d.seconds * 1e3) << " ms, "
              << format("%.1f", 100 * ofCopy)
              << "% of copy bandwidth on the ideal " << format("%.3g", d.idealBytes / 1e9) << " GB (moves "
              << format("%.2f", d.bytesMoved / d.idealBytes) << "x that)\n";
  };
  line("forward", f);
  if (!bwd) return;
  std::cout << "backward:\n";
  Direction b = predictDirection(device, *bwd, plan, full, reduced, pair.backward, tools, runner, true);
  line("backward", b);
  line("forward+backward", {f.seconds + b.seconds, f.idealBytes + b.idealBytes, f.bytesMoved + b.bytesMoved});
  if (forced.any()) return;
  // A forward whose checkpoints no backward reads (inference; the PyTorch op's forward) has a plan
  // of its own and writes no checkpoints.
  cuda::Plan alone = runner.plan(full, {}, {}, {}, {}, cuda::Passes::Forward);
  Emulated run = emulate(runner, emulator, full, alone, cuda::Passes::Forward);
  std::cout << "forward alone (no backward reads its checkpoints), plan: " << cuda::describe(alone) << ", " << alone.chunks
            << " chunk(s)\n";
  line("forward alone", predictDirection(device, rec, alone, full, run.reduced, run.forward, tools, runner, false));
}

}  // namespace

int gpuModel(const std::string &path, const std::string &shapeText, const std::string &arch, const std::string &gpuName,
             const std::string &predictions, const ForcedPlan &forced, const CompileOptions &compile) {
  const gpu::DeviceSpec *device = nullptr;
  cuda::Shape full;
  try {
    device = &cuda::deviceSpecNamed(gpuName);
    if (device->arch != gpu::deviceSpec(arch).arch)
      throw std::invalid_argument("--gpu " + gpuName + " is " + device->arch + ", not --arch " + arch);
    std::map<std::string, int64_t> sizes = scanc::parseShape(shapeText);
    full = {sizes.at("b"), sizes.at("t"), {}};
    for (auto &[name, size] : sizes)
      if (name != "b" && name != "t") full.dims[name] = size;
  } catch (const std::invalid_argument &e) {  // ShapeError too
    std::cerr << "scanc: error: --gpu-model " << path << ": " << e.what() << "\n";
    return kUserError;
  }
  if (!predictions.empty()) {
    try {
      readPredictions(predictions, /*mayBeMissing=*/true);  // a file that is not ours is not overwritten
    } catch (const std::runtime_error &e) {
      std::cerr << "scanc: error: --predictions: " << e.what() << "\n";
      return kUserError;
    }
  }
  std::string why;
  std::optional<gpu::BinaryTools> tools = gpu::BinaryTools::find(why);
  if (!tools) {
    std::cerr << "scanc: error: --gpu-model reads SASS: " << why << "\n";
    return kUserError;
  }
  CompiledModule module = compileModule(path, compile);  // CompileError: the caller reports it
  std::string errors;
  llvm::raw_string_ostream os(errors);
  mlir::FailureOr<cuda::KernelPackage> package = cuda::kernelPackage(module.impl().cudaKernels(), os);
  if (mlir::failed(package)) {
    std::cerr << "scanc: error: " << path << ": " << errors << "\n";
    return kUserError;
  }

  gpu::EmulatorOptions options;
  options.cacheDir = cuda::KernelCache::defaultDirectory().parent_path() / "emulator";
  options.detectRaces = false;  // the model needs the traffic; the emulation tests look for races
  gpu::EmulatedBackend emulator(options);
  std::cout << "# " << path << ": GPU model report; every time and fraction below is predicted by the model "
            << "(docs/cuda.md), not measured\n";
  try {
    for (const RecurrenceDesc &rec : package->recurrences())
      if (rec.adjointOf.empty()) reportRecurrence(*device, *package, rec, full, emulator, *tools, predictions, forced);
  } catch (const ShapeError &e) {
    std::cerr << "scanc: error: --gpu-model " << path << " --shape " << shapeText << ": " << e.what() << "\n";
    return kUserError;
  } catch (const std::exception &e) {
    std::cerr << "scanc: internal error: --gpu-model " << path << " at " << full.describe() << ": " << e.what() << "\n";
    return kInternalError;
  }
  return kOk;
}

}  // namespace scanforge::tools
