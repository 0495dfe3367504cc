// The CPU side of the C++ API: a Recurrence runs one forward recurrence of a CompiledModule and
// its generated backward through Halide CPU programs, JIT-compiled on first use and cached in
// memory by the hash of the compiled IR.
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include <unistd.h>

#include "compiler/api/RecurrenceImpl.h"
#include "compiler/mlir/Dialect/Scan/Analysis/Ports.h"
#include "compiler/mlir/Dialect/Scan/IR/Adjoints.h"
#include "llvm/ADT/Hashing.h"

namespace scanforge {

namespace {

// A port of the IR as the API describes it.
Port apiPort(const scan::Ports &ports, const scan::Port &p) {
  std::vector<std::string> dims;
  for (int d : p.layout) dims.push_back(ports.table().name(d).str());
  return {p.name, dims, p.bf16 ? ElemType::BF16 : ElemType::F32};
}

std::mutex cacheMutex;
std::map<std::pair<size_t, int>, std::shared_ptr<detail::Programs>> programCache;

// The host's cache of a level (2: per core, 3: shared), read once: sysconf, else sysfs
// (containers), else `fallback`.
int64_t cacheBytes(int level, int64_t fallback) {
  long fromSysconf = sysconf(level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
  if (fromSysconf > 0) return static_cast<int64_t>(fromSysconf);
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(level) + "/size");
  int64_t size = 0;
  char unit = 0;
  if (!(in >> size) || size <= 0) return fallback;
  in >> unit;
  return unit == 'M' ? size << 20 : unit == 'K' ? size << 10 : size;
}

int64_t l2CacheBytes() {
  static const int64_t bytes = cacheBytes(2, int64_t{512} << 10);
  return bytes;
}

int64_t l3CacheBytes() {
  static const int64_t bytes = cacheBytes(3, int64_t{16} << 20);
  return bytes;
}

}  // namespace

std::string detail::shapeText(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::vector<int64_t> Shapes::step(const Port &port) const {
  std::vector<int64_t> out = {batch, steps};
  for (const std::string &d : port.dims) out.push_back(dims.at(d));
  return out;
}
std::vector<int64_t> Shapes::state(const Port &port) const {
  std::vector<int64_t> out = {batch};
  for (const std::string &d : port.dims) out.push_back(dims.at(d));
  return out;
}
std::vector<int64_t> Shapes::param(const Port &port) const {
  std::vector<int64_t> out;
  for (const std::string &d : port.dims) out.push_back(dims.at(d));
  return out;
}

const Signature &Recurrence::signature() const { return impl_->signature; }

Shapes Recurrence::shapesOf(const TensorViews &inputs, const TensorViews &params) const {
  const Signature &sig = impl_->signature;
  Shapes shapes;
  std::map<std::string, std::string> source;  // dimension -> the tensor that fixed its size
  auto bind = [&](const Port &port, const TensorView &view, size_t lead, const char *role) {
    if (view.shape.size() != lead + port.dims.size())
      throw ShapeError(impl_->where("forward") + role + " '" + port.name + "' has shape " + detail::shapeText(view.shape) + ", but " +
                       port.name + " has " + std::to_string(lead + port.dims.size()) + " dimensions (" +
                       (lead ? "B, T" : "") + (lead && !port.dims.empty() ? ", " : "") + [&] {
                         std::string s;
                         for (size_t i = 0; i < port.dims.size(); ++i) s += (i ? ", " : "") + port.dims[i];
                         return s;
                       }() + ")");
    for (size_t i = 0; i < view.shape.size(); ++i)
      if (view.shape[i] <= 0) throw ShapeError(impl_->where("forward") + role + " '" + port.name + "' has an empty dimension");
    if (lead) {
      for (auto [slot, size, what] : {std::tuple{&shapes.batch, view.shape[0], "B"}, std::tuple{&shapes.steps, view.shape[1], "T"}}) {
        if (*slot && *slot != size)
          throw ShapeError(impl_->where("forward") + "input '" + port.name + "' has " + what + " = " + std::to_string(size) +
                           ", but input '" + source[what] + "' has " + what + " = " + std::to_string(*slot));
        *slot = size;
        source.emplace(what, port.name);
      }
    }
    for (size_t i = 0; i < port.dims.size(); ++i) {
      const std::string &d = port.dims[i];
      int64_t size = view.shape[lead + i];
      auto it = shapes.dims.find(d);
      if (it != shapes.dims.end() && it->second != size)
        throw ShapeError(impl_->where("forward") + role + " '" + port.name + "' has " + d + " = " + std::to_string(size) +
                         ", but '" + source[d] + "' has " + d + " = " + std::to_string(it->second));
      shapes.dims[d] = size;
      source.emplace(d, port.name);
    }
  };
  for (const Port &in : sig.inputs) {
    auto it = inputs.find(in.name);
    if (it == inputs.end()) throw ShapeError(impl_->where("forward") + "missing input '" + in.name + "'");
    bind(in, it->second, 2, "input");
  }
  for (const Port &p : sig.params) {
    auto it = params.find(p.name);
    if (it == params.end()) throw ShapeError(impl_->where("forward") + "missing parameter '" + p.name + "'");
    bind(p, it->second, 0, "parameter");
  }
  impl_->rejectUnknown("forward", "an input", inputs, sig.inputs);
  impl_->rejectUnknown("forward", "a parameter", params, sig.params);
  return shapes;
}

int64_t Recurrence::chunkFor(const Shapes &shapes) const {
  if (impl_->options.chunk > 0) return std::min(impl_->options.chunk, shapes.steps);
  // The backward keeps a forward and an adjoint copy of every state for the whole chunk (and the
  // gates its recompute produces, left out: fitting them too measured no faster); keep that
  // within about half of the host's L2 cache, but make chunks at least 64 steps long while
  // every worker's copies fit in half of L3: a chunk also costs a checkpoint and a program call,
  // which dominate short chunks of large states (docs/cpu.md, "Chunk length").
  int64_t stateElements = 0;
  for (const Port &s : impl_->signature.states) {
    int64_t n = 1;
    for (const std::string &d : s.dims) n *= shapes.dims.at(d);
    stateElements += n;
  }
  int64_t stepBytes = std::max<int64_t>(1, 2 * stateElements * 4);
  int64_t workers = impl_->programs->forwardProgram->workers();
  int64_t shortest = std::clamp<int64_t>(l3CacheBytes() / 2 / (workers * stepBytes), 8, 64);
  int64_t chunk = std::clamp<int64_t>(l2CacheBytes() / 2 / stepBytes, shortest, 1024);
  return std::min(chunk, shapes.steps);
}

Recurrence::ChannelBlocks Recurrence::channelBlocksFor(const Shapes &shapes) const {
  cpu::ChunkedRun run = impl_->runOf(shapes, chunkFor(shapes), impl_->signature.reverse);
  cpu::SharedProgram &shared = *impl_->programs->forwardProgram;
  cpu::ChannelSplit split = cpu::splitChannels(shared.get(), run, shared.workers());
  if (split.dim < 0) return {};
  return {impl_->dimOrder[split.dim], split.width, split.blocks};
}

void Recurrence::forward(const TensorViews &inputs, const TensorViews &params, const TensorViews &initial,
                         const TensorViews &outputs, const TensorViews &finals, SavedStates *saved,
                         Traffic *traffic) const {
  const Signature &sig = impl_->signature;
  Shapes shapes = shapesOf(inputs, params);
  for (const Port &p : sig.inputs) impl_->expect("forward", "input", p, inputs, shapes.step(p), true);
  impl_->expectForwardResults("forward", shapes, shapes, outputs, initial, finals);
  impl_->warnIfDecayExceedsOne("forward", params);
  runForward(shapes, inputs, params, initial, outputs, finals, saved, traffic);
}

void Recurrence::runForward(const Shapes &shapes, const TensorViews &inputs, const TensorViews &params,
                            const TensorViews &initial, const TensorViews &outputs, const TensorViews &finals,
                            SavedStates *saved, Traffic *traffic) const {
  cpu::ChunkedRun run = impl_->runOf(shapes, chunkFor(shapes), impl_->signature.reverse);
  run.stepInputs = Impl::host(inputs);
  run.params = Impl::host(params);
  run.start = Impl::host(initial);
  run.stepOutputs = Impl::host(outputs);
  run.finals = Impl::host(finals);
  std::map<std::string, std::vector<float>> checkpoints;
  if (saved) run.checkpointsOut = &checkpoints;
  cpu::Traffic moved;
  run.traffic = &moved;
  cpu::runChunked(*impl_->programs->forwardProgram, run);
  if (traffic) *traffic = {moved.read, moved.written};
  if (saved) {
    saved->shapes_ = shapes;
    saved->chunk_ = run.chunk;
    saved->checkpoints_ = std::move(checkpoints);
  }
}

void Recurrence::backward(const TensorViews &inputs, const TensorViews &params, const SavedStates &saved,
                          const TensorViews &outputGrads, const TensorViews &finalGrads, const TensorViews &inputGrads,
                          const TensorViews &paramGrads, const TensorViews &initialGrads, Traffic *traffic) const {
  const Signature &sig = impl_->signature;
  Shapes shapes = shapesOf(inputs, params);
  if (saved.empty() && !sig.states.empty())
    throw ShapeError(impl_->where("backward") + "no saved states: call forward() with a SavedStates first");
  if (!saved.cuSeqlens_.empty())
    throw ShapeError(impl_->where("backward") + "the saved states come from forwardPacked(): call backwardPacked()");
  if (saved.shapes_.batch != shapes.batch || saved.shapes_.steps != shapes.steps || saved.shapes_.dims != shapes.dims)
    throw ShapeError(impl_->where("backward") + "the saved states come from a forward call with other shapes");
  for (const Port &p : sig.inputs) impl_->expect("backward", "input", p, inputs, shapes.step(p), true);
  impl_->expectBackwardGradients("backward", shapes, shapes, inputGrads, paramGrads, outputGrads, finalGrads,
                                 initialGrads);

  // Missing output gradients are zeros.
  std::vector<std::vector<uint16_t>> zeros;
  TensorViews grads = outputGrads;
  for (const Port &o : sig.outputs)
    if (!grads.count(o.name)) {
      size_t n = 1;
      for (int64_t s : shapes.step(o)) n *= static_cast<size_t>(s);
      zeros.emplace_back(n * (o.type == ElemType::BF16 ? 1 : 2), 0);
      grads[o.name] = {zeros.back().data(), shapes.step(o), o.type};
    }

  cpu::ChunkedRun run = impl_->runOf(shapes, saved.chunk_, !sig.reverse);
  run.stepInputs = Impl::host(inputs);
  for (auto &[name, view] : impl_->adjoints(grads, scan::PortKind::Input)) run.stepInputs[name] = view;
  run.params = Impl::host(params);
  run.start = impl_->adjoints(finalGrads, scan::PortKind::State);
  run.checkpointsIn = &saved.checkpoints_;
  run.stepOutputs = impl_->adjoints(inputGrads, scan::PortKind::Output);
  run.accums = impl_->adjoints(paramGrads, scan::PortKind::Accum);
  run.finals = impl_->adjoints(initialGrads, scan::PortKind::State);
  cpu::Traffic moved;
  run.traffic = &moved;
  cpu::runChunked(*impl_->programs->backwardProgram, run);
  if (traffic) *traffic = {moved.read, moved.written};
}

std::string Recurrence::halideStatement(bool backward) const {
  cpu::SharedProgram &shared = backward ? *impl_->programs->backwardProgram : *impl_->programs->forwardProgram;
  return shared.get().loweredStatement();
}

std::string Recurrence::cpuAssembly(bool backward) const {
  cpu::SharedProgram &shared = backward ? *impl_->programs->backwardProgram : *impl_->programs->forwardProgram;
  return shared.get().assembly();
}

std::string Recurrence::scanIR() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  impl_->programs->module->module.get()->print(os);
  return os.str();
}

Recurrence CompiledModule::recurrence(const std::string &name) const {
  const CompileOptions &options = impl_->options;
  scan::RecurrenceOp forward = impl_->forward(name);
  scan::RecurrenceOp backward = scan::backwardOf(forward);
  if (!backward) impl_->fail("internal error: '" + forward.getSymName().str() + "' has no generated backward");
  auto impl = std::make_shared<Recurrence::Impl>();
  impl->options = options;
  const scan::Ports &ports = impl_->analyses().getChildAnalysis<scan::Ports>(forward);
  Signature &sig = impl->signature;
  sig.name = forward.getSymName().str();
  sig.reverse = forward.getReverse();
  for (size_t d = 0; d < ports.table().size(); ++d) impl->dimOrder.push_back(ports.table().name(static_cast<int>(d)).str());
  for (const scan::Port &p : ports.inputs()) sig.inputs.push_back(apiPort(ports, p));
  for (const scan::Port &p : ports.params()) sig.params.push_back(apiPort(ports, p));
  for (const scan::Port &p : ports.states()) sig.states.push_back(apiPort(ports, p));
  for (const scan::Port &p : ports.outputs()) sig.outputs.push_back(apiPort(ports, p));
  if (sig.inputs.empty())
    throw CompileError(impl_->path + ": recurrence '" + sig.name + "' has no inputs, so its batch and length are unknown");
  impl->decayBounds = impl_->analyses().getChildAnalysis<scan::DecayBounds>(forward).states();
  const scan::Ports &adjoints = impl_->analyses().getChildAnalysis<scan::Ports>(backward);
  for (scan::PortKind kind : {scan::PortKind::Input, scan::PortKind::State, scan::PortKind::Output, scan::PortKind::Accum})
    for (const scan::Port &p : adjoints.of(kind))
      if (p.adjointOf) impl->adjointPorts[{kind, *p.adjointOf}] = p.name;

  int threads = options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  std::string irText;
  llvm::raw_string_ostream irStream(irText);
  forward->print(irStream);
  backward->print(irStream);
  size_t hash = llvm::hash_value(irStream.str());
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    auto &cached = programCache[{hash, threads}];
    if (!cached) {
      auto programs = std::make_shared<detail::Programs>();
      programs->module = impl_;
      programs->forward = forward;
      programs->backward = backward;
      // The facts come from the module's analysis manager, here on the calling thread; the
      // programs (built on first use, on any thread) only read them.
      cpu::ProgramFacts facts = cpu::programFacts(impl_->analyses(), forward, backward);
      programs->forwardProgram = std::make_unique<cpu::SharedProgram>(
          [forward, facts] { return cpu::buildForwardProgram(forward, facts); }, threads, sig.name + " forward",
          options.verbose);
      programs->backwardProgram = std::make_unique<cpu::SharedProgram>(
          [forward, backward, facts] { return cpu::buildBackwardProgram(forward, backward, facts); }, threads,
          sig.name + " backward", options.verbose);
      cached = programs;
    }
    impl->programs = cached;
  }
  Recurrence rec;
  rec.impl_ = impl;
  return rec;
}

Recurrence compile(const std::string &path, const CompileOptions &options) {
  return compileModule(path, options).recurrence(options.recurrence);
}

Recurrence compileSource(const std::string &name, const std::string &source, const CompileOptions &options) {
  return compileModuleSource(name, source, options).recurrence(options.recurrence);
}

}  // namespace scanforge
