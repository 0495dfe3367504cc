#include "runtime/cuda/RecurrenceRunner.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <set>

#include "runtime/cuda/CudaError.h"

namespace scanforge::cuda {

namespace {

size_t elementBytes(const BufferDesc &b) { return b.dtype == "bf16" ? 2 : 4; }  // f32, i32: 4

std::set<std::string> dimsOf(const RecurrenceDesc &rec) {
  std::set<std::string> dims(rec.channelDims.begin(), rec.channelDims.end());
  dims.insert(rec.registerDims.begin(), rec.registerDims.end());
  return dims;
}

// Bytes read and written per step of one batch element: the [B, T, ...] buffers of `rec`.
void addStepBytes(const RecurrenceDesc &rec, const Variables &vars, double &read, double &written) {
  for (const BufferDesc &b : rec.buffers) {
    if (b.shape.size() < 2 || b.shape[0] != "$B" || b.shape[1] != "$T") continue;
    double bytes = static_cast<double>(elementBytes(b));
    for (size_t i = 2; i < b.shape.size(); ++i) bytes *= static_cast<double>(evaluate(b.shape[i], vars));
    if (b.role == BufferRole::Output) written += bytes;
    if (b.role == BufferRole::Input || b.role == BufferRole::ForwardOutput) read += bytes;
    // An output summed over channels by warps: each warp's row of partial sums [rows, B, T, dims]
    // is written, and read back by the kernel that adds the rows.
    if (const BufferDesc *rows = b.role == BufferRole::Output ? rec.buffer(warpPartialsOf(b.name)) : nullptr) {
      double partials = 4.0 * static_cast<double>(evaluate(rows->shape.front(), vars)) * bytes / static_cast<double>(elementBytes(b));
      written += partials;
      read += partials;
    }
  }
}

}  // namespace

std::vector<PlannedLaunch> plannedLaunches(const RecurrenceDesc &rec, const Plan &plan, const Variables &vars) {
  std::vector<PlannedLaunch> out;
  for (const LaunchDesc &l : plan.strategy == Strategy::Sequential ? rec.sequential : rec.chunked) {
    LaunchConfig config;
    for (int i = 0; i < 3; ++i) config.grid[i] = static_cast<unsigned>(evaluate(l.grid[i], vars));
    if (config.grid[0] == 0 || config.grid[1] == 0 || config.grid[2] == 0) continue;
    config.block = static_cast<unsigned>(l.block);
    config.sharedBytes = static_cast<size_t>(evaluate(l.sharedBytes, vars));
    out.push_back({&l, config});
  }
  return out;
}

std::string Shape::describe() const {
  std::string out = "B=" + std::to_string(batch) + " T=" + std::to_string(steps);
  for (auto &[name, size] : dims) out += " " + name + "=" + std::to_string(size);
  return out;
}

RecurrenceRunner::RecurrenceRunner(const KernelPackage &package, const std::string &forward, DeviceBackend &device)
    : device_(device), fwd_(package.recurrence(forward)) {
  if (!fwd_.adjointOf.empty())
    throw CudaError("'" + forward + "' is a backward recurrence; run its forward '" + fwd_.adjointOf + "'");
  if (!fwd_.backward.empty()) bwd_ = &package.recurrence(fwd_.backward);
}

Variables RecurrenceRunner::variables(const Shape &shape, const Plan &plan) const {
  auto checkSize = [&](const std::string &what, int64_t size) {
    if (size < 1 || size > INT_MAX)
      throw CudaError(fwd_.name + ": " + what + " = " + std::to_string(size) + " is outside [1, " + std::to_string(INT_MAX) +
                      "] (" + shape.describe() + ")");
  };
  checkSize("B", shape.batch);
  checkSize("T", shape.steps);
  Variables vars = {{"$B", shape.batch}, {"$T", shape.steps}, {"$L", plan.chunk}, {"$NC", plan.chunks}, {kLanesVariable, plan.lanes},
                     {kStashVariable, plan.stash ? 1 : 0}, {kAtomicSumsVariable, plan.atomicSums ? 1 : 0}};
  std::set<std::string> needed = dimsOf(fwd_);
  for (const std::string &d : needed) {
    auto it = shape.dims.find(d);
    if (it == shape.dims.end()) throw CudaError(fwd_.name + ": the shape lacks dimension '" + d + "' (" + shape.describe() + ")");
    checkSize(d, it->second);
    vars[d] = it->second;
  }
  for (auto &[d, size] : shape.dims)
    if (!needed.count(d))
      throw CudaError(fwd_.name + " has no dimension '" + d + "' (" + shape.describe() + ")");
  return vars;
}

Plan RecurrenceRunner::plan(const Shape &shape, std::optional<Strategy> strategy, std::optional<int64_t> chunk,
                            std::optional<int64_t> lanes, std::optional<bool> stash, Passes passes) const {
  // A call plans again at every step of a training loop: the plans made are kept by their arguments.
  auto text = [](auto v) { return v ? std::to_string(static_cast<int64_t>(*v)) : std::string("-"); };
  std::string key = shape.describe() + " " + text(strategy) + " " + text(chunk) + " " + text(lanes) + " " + text(stash) +
                    (passes == Passes::Forward ? " forward" : " pair") + (atomicSums_ ? " atomic" : "");
  if (auto known = plans_.find(key); known != plans_.end()) return known->second;
  const RecurrenceDesc *bwd = passes == Passes::Forward ? nullptr : bwd_;
  Variables sizes = variables(shape, Plan{});  // names a missing or unknown dimension
  // Lane counts: powers of two up to 32 that divide the lane dimension; the planner's, only those
  // whose states (the forward's, and `with`'s where given) fit in registers, or the most lanes if
  // none does.
  std::vector<int64_t> all = {1};
  if (!fwd_.laneDim.empty()) {
    int64_t size = sizes.at(fwd_.laneDim);
    all.clear();
    for (int64_t l = 1; l <= 32 && size % l == 0; l *= 2) all.push_back(l);
  }
  auto fitting = [&](const RecurrenceDesc *with) {
    std::vector<int64_t> fit;
    for (int64_t l : all) {
      Plan p;
      p.lanes = l;
      Variables vars = variables(shape, p);
      if (std::max(evaluate(fwd_.stateRegisters, vars), with ? evaluate(with->stateRegisters, vars) : 0) <= kMaxStateRegisters)
        fit.push_back(l);
    }
    return fit.empty() ? std::vector<int64_t>{all.back()} : fit;
  };
  std::vector<int64_t> candidates = all;
  if (lanes) {
    if (fwd_.laneDim.empty() && *lanes != 1)
      throw CudaError(fwd_.name + " has no lane dimension, so it runs with 1 lane per channel, not " + std::to_string(*lanes));
    if (std::find(all.begin(), all.end(), *lanes) == all.end())
      throw CudaError(fwd_.name + ": " + std::to_string(*lanes) + " lanes per channel: not a power of two up to 32 that divides " +
                      fwd_.laneDim + " = " + std::to_string(sizes.at(fwd_.laneDim)) + " (" + shape.describe() + ")");
    candidates = {*lanes};
  } else if (!fwd_.laneDim.empty()) {
    candidates = fitting(bwd);
  }
  // The fastest of `lanes` by the model, the first on a tie; nullopt where the planner refuses
  // every one (the last refusal in `refused`).
  std::optional<PlanRefused> refused;
  auto fastest = [&](const std::vector<int64_t> &lanes, std::optional<Strategy> strategy, std::optional<int64_t> chunk,
                     std::optional<bool> stash, const RecurrenceDesc *with) {
    std::optional<Plan> best;
    double bestSeconds = 0;
    for (int64_t l : lanes) {
      PlanRequest request = planRequest(shape, l, strategy, chunk, stash, with);
      Plan p;
      try {
        p = cuda::plan(request);
      } catch (const PlanRefused &e) {
        refused.emplace(fwd_.name + ": " + e.what());
        continue;
      } catch (const CudaError &e) {
        throw CudaError(fwd_.name + ": " + e.what());
      }
      p.lanes = l;
      p.atomicSums = atomicSums_;
      double seconds = predictPlan(request, p).seconds;
      if (!best || seconds < bestSeconds) best = p, bestSeconds = seconds;
    }
    return best;
  };
  std::optional<Plan> best = fastest(candidates, strategy, chunk, stash, bwd);
  if (!best) throw *refused;
  if (bwd && !lanes && !fwd_.laneDim.empty()) {
    // The pair's forward with the lanes fastest for its own kernels at the pair's strategy, chunk
    // length and stash (its checkpoints are the same whatever its lanes); the pair's on a tie.
    std::vector<int64_t> forward = fitting(nullptr);
    std::stable_partition(forward.begin(), forward.end(), [&](int64_t l) { return l == best->lanes; });
    std::optional<Plan> alone = fastest(forward, best->strategy, best->chunk, best->stash, nullptr);
    if (alone && alone->lanes != best->lanes) best->forwardLanes = alone->lanes;
  }
  return plans_.emplace(key, *best).first->second;
}

PlanRequest RecurrenceRunner::planRequest(const Shape &shape, int64_t lanes, std::optional<Strategy> strategy,
                                          std::optional<int64_t> chunk, std::optional<bool> stash,
                                          const RecurrenceDesc *bwd) const {
  Plan withLanes;
  withLanes.lanes = lanes;
  withLanes.atomicSums = atomicSums_;
  Variables vars = variables(shape, withLanes);
  PlanRequest request;
  request.batch = shape.batch;
  request.steps = shape.steps;
  request.channels = evaluate(fwd_.channels, vars) * lanes;  // threads
  request.stepInstructions = static_cast<double>(evaluate(fwd_.stepInstructions, vars) +
                                                 (bwd ? evaluate(bwd->stepInstructions, vars) : 0));
  // Shared memory per chunk step: each launch asks for (bytes per step) * $L (KernelPrinter).
  // A kernel with a stash asks for more with $STASH = 1.
  auto sharedPerStep = [&](const std::vector<LaunchDesc> RecurrenceDesc::*strategy) {
    PlanRequest::SharedPerStep shared;
    for (const RecurrenceDesc *rec : {&fwd_, bwd}) {
      if (!rec) continue;
      for (const LaunchDesc &launch : rec->*strategy) {
        Variables perStep = vars;
        perStep["$L"] = 1;
        perStep[kStashVariable] = 0;
        shared.plain = std::max(shared.plain, evaluate(launch.sharedBytes, perStep));
        perStep[kStashVariable] = 1;
        shared.stashed = std::max(shared.stashed, evaluate(launch.sharedBytes, perStep));
        shared.stash = shared.stash || launch.sharedBytes.find(kStashVariable) != std::string::npos;
      }
    }
    return shared;
  };
  if (!fwd_.registerDims.empty()) request.sequentialBatch = request.chunkedBatch = 1;  // batches by lane count: not rounded
  request.sequentialShared = sharedPerStep(&RecurrenceDesc::sequential);
  request.chunkedShared = sharedPerStep(&RecurrenceDesc::chunked);
  request.sharedPerBlock = static_cast<int64_t>(device_.sharedBytesPerBlock());
  double read = 0, written = 0;
  addStepBytes(fwd_, vars, read, written);
  if (bwd) addStepBytes(*bwd, vars, read, written);
  if (bwd)  // [B, NC, channels, register elements] per parameter gradient, dealt to the lanes
    for (const BufferDesc &b : bwd->buffers)
      if (const BufferDesc *partials = b.role == BufferRole::Accum ? bwd->buffer(chunkPartialsOf(b.name)) : nullptr)
        request.partialSumBytes += 4.0 * static_cast<double>(evaluate(partials->shape.back(), vars)) / static_cast<double>(lanes);
  // [B, NC, register elements, channels] per state the backward recomputes: written, then read
  // (a forward alone writes none).
  for (const BufferDesc &b : fwd_.buffers)
    if (bwd && b.role == BufferRole::Checkpoint && b.forBackward) {
      double perChunk = 2.0 * static_cast<double>(elementBytes(b));
      for (size_t i = 2; i < b.shape.size(); ++i) perChunk *= static_cast<double>(evaluate(b.shape[i], vars));
      request.checkpointBytes += perChunk / static_cast<double>(request.channels);
    }
  request.readBytesPerStep = read / static_cast<double>(request.channels);
  request.writtenBytesPerStep = written / static_cast<double>(request.channels);
  request.multiprocessors = device_.multiprocessors();
  if (!fwd_.sequential.empty() && fwd_.sequential.front().block > 0) request.sequentialBlockThreads = fwd_.sequential.front().block;
  if (!fwd_.chunked.empty() && fwd_.chunked.front().block > 0) request.chunkedBlockThreads = fwd_.chunked.front().block;
  request.passes = bwd ? 2 : 1;
  request.chainGroup = fwd_.chainGroup;
  request.maxGridYZ = device_.maxGridYZ();
  request.strategy = strategy;
  request.chunk = chunk;
  request.stash = stash;
  return request;
}

size_t RecurrenceRunner::bytes(const BufferDesc &buffer, const Shape &shape, const Plan &plan) const {
  Variables vars = variables(shape, plan);
  size_t n = elementBytes(buffer);
  for (const std::string &extent : buffer.shape) n *= static_cast<size_t>(evaluate(extent, vars));
  return n;
}

void RecurrenceRunner::forward(const Shape &shape, const Plan &plan, const BufferMap &buffers, Stream stream) {
  run(fwd_, shape, plan.forwardPlan(), buffers, stream);
}

void RecurrenceRunner::backward(const Shape &shape, const Plan &plan, const BufferMap &buffers, Stream stream) {
  if (!bwd_) throw CudaError("'" + fwd_.name + "' has no backward recurrence in this package");
  run(*bwd_, shape, plan, buffers, stream);
}

LoadedModule &RecurrenceRunner::module(const RecurrenceDesc &rec, const Variables &vars) {
  ModuleSource source{rec.file, rec.source, {}, {}};
  for (auto &[macro, formula] : rec.defines) source.options.push_back("-D" + macro + "=" + std::to_string(evaluate(formula, vars)));
  std::string key = rec.file;
  for (const std::string &o : source.options) key += " " + o;
  auto it = modules_.find(key);
  if (it != modules_.end()) return *it->second;
  for (const std::vector<LaunchDesc> *launches : {&rec.sequential, &rec.chunked})
    for (const LaunchDesc &l : *launches) source.kernels[l.kernel] = l.params.size();
  return *modules_.emplace(key, device_.load(source)).first->second;
}

DevicePtr RecurrenceRunner::resolve(const RecurrenceDesc &rec, const BufferDesc &buffer, const BufferMap &given,
                                    const Variables &vars) {
  if (auto it = given.find(buffer.name); it != given.end() && it->second) return it->second;
  if (buffer.role != BufferRole::Workspace) {
    if (buffer.optional) return 0;
    std::string shape;
    for (const std::string &s : buffer.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(evaluate(s, vars));
    throw CudaError(rec.name + ": missing buffer '" + buffer.name + "' (" + roleName(buffer.role) + ", " + buffer.dtype + " [" +
                    shape + "])" + (buffer.role == BufferRole::Checkpoint ? "; pass the checkpoints the forward wrote" : ""));
  }
  size_t size = elementBytes(buffer);
  for (const std::string &extent : buffer.shape) size *= static_cast<size_t>(evaluate(extent, vars));
  DeviceBuffer &slot = scratch_[buffer.name];
  if (slot.bytes() < size) slot = DeviceBuffer(device_, size);
  return slot.get();
}

void RecurrenceRunner::run(const RecurrenceDesc &rec, const Shape &shape, const Plan &plan, const BufferMap &buffers,
                           Stream stream) {
  // One map may serve both directions; a name neither knows is a mistake.
  for (auto &[name, ptr] : buffers)
    if (!fwd_.buffer(name) && !(bwd_ && bwd_->buffer(name)))
      throw CudaError(fwd_.name + " has no buffer '" + name + "'");
  // A batch beyond the grid's y extent runs in slices, one after the other on the stream.
  const int64_t limit = device_.maxGridYZ();
  for (int64_t first = 0; first < shape.batch; first += limit) {
    Shape slice = shape;
    slice.batch = std::min(limit, shape.batch - first);
    runSlice(rec, slice, first, shape.batch, plan, buffers, stream);
  }
}

void RecurrenceRunner::runSlice(const RecurrenceDesc &rec, const Shape &shape, int64_t first, int64_t batch,
                                const Plan &plan, const BufferMap &buffers, Stream stream) {
  Variables vars = variables(shape, plan);
  const std::vector<PlannedLaunch> launches = plannedLaunches(rec, plan, vars);
  // The caller's buffers hold the whole batch: those indexed by batch element first ($B leading)
  // are offset to the slice; parameters and their gradients are shared by every slice (gradients
  // zeroed before the first only); workspaces serve one slice after the other from their start.
  // Only the launches the plan runs bind (and zero) buffers.
  std::map<std::string, DevicePtr> bound;
  for (const PlannedLaunch &planned : launches) {
    const LaunchDesc &l = *planned.desc;
    for (const ParamDesc &p : l.params)
      if (p.kind == ParamDesc::Kind::Buffer && !bound.count(p.value)) {
        const BufferDesc *desc = rec.buffer(p.value);
        if (!desc) throw CudaError(rec.name + ": the manifest's kernel " + l.kernel + " names an undeclared buffer '" + p.value + "'");
        DevicePtr ptr = resolve(rec, *desc, buffers, vars);
        bool given = buffers.count(p.value) && buffers.at(p.value);
        if (given && shape.batch < batch && desc->role != BufferRole::Workspace && !desc->shape.empty() &&
            desc->shape.front() == "$B") {
          size_t row = elementBytes(*desc);
          for (size_t i = 1; i < desc->shape.size(); ++i) row *= static_cast<size_t>(evaluate(desc->shape[i], vars));
          ptr += static_cast<DevicePtr>(first) * row;
        } else if (given && shape.batch < batch && desc->role != BufferRole::Workspace &&
                   std::any_of(desc->shape.begin(), desc->shape.end(),
                               [](const std::string &e) { return e.find("$B") != std::string::npos; })) {
          throw CudaError(rec.name + ": buffer '" + p.value + "' is not indexed by batch element first, so a batch of " +
                          std::to_string(batch) + " cannot run in slices of " + std::to_string(device_.maxGridYZ()) +
                          " (" + shape.describe() + ")");
        }
        bound[p.value] = ptr;
      }
  }
  for (const std::string &name : rec.zeroInit)
    if (bound.count(name) && (first == 0 || rec.buffer(name)->role != BufferRole::Accum))
      device_.zero(bound[name], bytes(*rec.buffer(name), shape, plan), stream);

  LoadedModule &mod = module(rec, vars);
  static const bool syncEach = std::getenv("SCANFORGE_CUDA_SYNC") != nullptr;
  for (const auto &[desc, config] : launches) {
    const LaunchDesc &l = *desc;
    std::string what = "launching " + l.kernel + " of " + rec.name + " (" + shape.describe() +
                       (shape.batch < batch ? ", batch elements from " + std::to_string(first) + " of " + std::to_string(batch)
                                            : std::string()) + "; " +
                       strategyName(plan.strategy) + ", L=" + std::to_string(plan.chunk) +
                       (rec.laneDim.empty() ? "" : ", " + std::to_string(plan.lanes) + " lanes") +
                       (plan.stash ? ", stash" : "") + "; grid " +
                       std::to_string(config.grid[0]) + "x" + std::to_string(config.grid[1]) + "x" +
                       std::to_string(config.grid[2]) + ", block " + std::to_string(config.block) + ", " +
                       std::to_string(config.sharedBytes) + " B shared) on " + device_.describe();
    // Argument values, then pointers to them (cuLaunchKernel's convention).
    std::vector<int64_t> values(l.params.size());
    std::vector<void *> args(l.params.size());
    for (size_t i = 0; i < l.params.size(); ++i) {
      const ParamDesc &p = l.params[i];
      if (p.kind == ParamDesc::Kind::Buffer) {
        DevicePtr ptr = bound.at(p.value);
        std::memcpy(&values[i], &ptr, sizeof ptr);
      } else {
        int64_t v = evaluate(p.value, vars);
        if (p.kind == ParamDesc::Kind::Int32) {
          if (v < INT_MIN || v > INT_MAX) throw CudaError(what + ": '" + p.value + "' = " + std::to_string(v) + " overflows int");
          int32_t narrow = static_cast<int32_t>(v);
          std::memcpy(&values[i], &narrow, sizeof narrow);
        } else {
          values[i] = v;
        }
      }
      args[i] = &values[i];
    }
    try {
      mod.launch(l.kernel, config, args.data(), stream);
      if (syncEach) device_.synchronize(stream);
    } catch (const CudaError &e) {
      throw CudaError(what + ": " + e.what());
    }
  }
}

}  // namespace scanforge::cuda
