// The C++ API: .scan -> checked AST -> scan IR (forward + generated backward) -> Halide CPU
// programs, JIT-compiled on first use and cached in memory by the hash of the compiled IR.
#include <chrono>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "compiler/api/Scanforge.h"
#include "compiler/halide/CpuExecutor.h"
#include "compiler/mlir/Driver.h"
#include "llvm/ADT/Hashing.h"

namespace scanforge {

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

ElemType storageOf(std::optional<mlir::Type> storage) {
  return storage && storage->isBF16() ? ElemType::BF16 : ElemType::F32;
}

std::vector<std::string> dimNames(mlir::ArrayAttr dims) {
  std::vector<std::string> out;
  for (mlir::Attribute d : dims) out.push_back(llvm::cast<mlir::StringAttr>(d).str());
  return out;
}

// The CPU programs of one compiled recurrence, shared by every Recurrence with the same IR.
struct Programs {
  std::unique_ptr<scan::Session> session;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  scan::RecurrenceOp forward, backward;
  std::unique_ptr<cpu::ProgramPool> forwardPool, backwardPool;
};

std::mutex cacheMutex;
std::map<std::pair<size_t, int>, std::shared_ptr<Programs>> programCache;

}  // namespace

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

struct Recurrence::Impl {
  Signature signature;
  std::shared_ptr<Programs> programs;
  CompileOptions options;
  std::vector<std::string> dimOrder;  // the recurrence's dimension table

  std::string where(const char *call) const { return signature.name + "." + call + ": "; }

  void expect(const char *call, const char *role, const Port &port, const TensorViews &views,
              const std::vector<int64_t> &shape, bool required) const {
    auto it = views.find(port.name);
    if (it == views.end()) {
      if (required) throw ShapeError(where(call) + "missing " + role + " '" + port.name + "' of shape " + shapeText(shape));
      return;
    }
    if (!it->second.data) throw ShapeError(where(call) + role + " '" + port.name + "' has no data");
    if (it->second.shape != shape)
      throw ShapeError(where(call) + role + " '" + port.name + "' has shape " + shapeText(it->second.shape) +
                       ", expected " + shapeText(shape));
    ElemType want = std::string(role).find("state") != std::string::npos || std::string(role).find("parameter") != std::string::npos
                        ? ElemType::F32 : port.type;
    if (it->second.type != want)
      throw ShapeError(where(call) + role + " '" + port.name + "' must be " + (want == ElemType::BF16 ? "bf16" : "f32"));
  }

  void rejectUnknown(const char *call, const char *role, const TensorViews &views, const std::vector<Port> &ports) const {
    for (auto &[name, view] : views) {
      bool known = false;
      for (const Port &p : ports) known |= p.name == name;
      if (!known) throw ShapeError(where(call) + "'" + name + "' is not " + role + " of " + signature.name);
    }
  }

  std::vector<int64_t> dimSizes(const Shapes &shapes) const {
    std::vector<int64_t> sizes;
    for (const std::string &d : dimOrder) sizes.push_back(shapes.dims.at(d));
    return sizes;
  }

  static cpu::HostViews host(const TensorViews &views, const std::string &suffix = "") {
    cpu::HostViews out;
    for (auto &[name, v] : views) out[name + suffix] = {v.data, v.shape};
    return out;
  }
};

const Signature &Recurrence::signature() const { return impl_->signature; }

Shapes Recurrence::shapesOf(const TensorViews &inputs, const TensorViews &params) const {
  const Signature &sig = impl_->signature;
  Shapes shapes;
  std::map<std::string, std::string> source;  // dimension -> the tensor that fixed its size
  auto bind = [&](const Port &port, const TensorView &view, size_t lead, const char *role) {
    if (view.shape.size() != lead + port.dims.size())
      throw ShapeError(impl_->where("forward") + role + " '" + port.name + "' has shape " + shapeText(view.shape) + ", but " +
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
  // The backward keeps a forward and an adjoint copy of every state for the whole chunk; keep
  // that within about half of a 512 KiB L2 cache.
  int64_t stateElements = 0;
  for (const Port &s : impl_->signature.states) {
    int64_t n = 1;
    for (const std::string &d : s.dims) n *= shapes.dims.at(d);
    stateElements += n;
  }
  int64_t chunk = std::clamp<int64_t>((256 * 1024) / std::max<int64_t>(1, 2 * stateElements * 4), 8, 1024);
  return std::min(chunk, shapes.steps);
}

void Recurrence::forward(const TensorViews &inputs, const TensorViews &params, const TensorViews &initial,
                         const TensorViews &outputs, const TensorViews &finals, SavedStates *saved) const {
  const Signature &sig = impl_->signature;
  Shapes shapes = shapesOf(inputs, params);
  for (const Port &p : sig.inputs) impl_->expect("forward", "input", p, inputs, shapes.step(p), true);
  for (const Port &o : sig.outputs) impl_->expect("forward", "output", o, outputs, shapes.step(o), true);
  for (const Port &s : sig.states) {
    impl_->expect("forward", "initial state", s, initial, shapes.state(s), false);
    impl_->expect("forward", "final state", s, finals, shapes.state(s), false);
  }
  impl_->rejectUnknown("forward", "an output", outputs, sig.outputs);
  impl_->rejectUnknown("forward", "a state", initial, sig.states);
  impl_->rejectUnknown("forward", "a state", finals, sig.states);

  cpu::ChunkedRun run;
  run.batch = shapes.batch;
  run.steps = shapes.steps;
  run.chunk = chunkFor(shapes);
  run.channelBlock = impl_->options.channelBlock;
  run.dimSizes = impl_->dimSizes(shapes);
  run.reverseChunks = sig.reverse;
  run.stepInputs = Impl::host(inputs);
  run.params = Impl::host(params);
  run.start = Impl::host(initial);
  run.stepOutputs = Impl::host(outputs);
  run.finals = Impl::host(finals);
  std::map<std::string, std::vector<float>> checkpoints;
  if (saved) run.checkpointsOut = &checkpoints;
  cpu::runChunked(*impl_->programs->forwardPool, run);
  if (saved) {
    saved->shapes_ = shapes;
    saved->chunk_ = run.chunk;
    saved->checkpoints_ = std::move(checkpoints);
  }
}

void Recurrence::backward(const TensorViews &inputs, const TensorViews &params, const SavedStates &saved,
                          const TensorViews &outputGrads, const TensorViews &finalGrads, const TensorViews &inputGrads,
                          const TensorViews &paramGrads, const TensorViews &initialGrads) const {
  const Signature &sig = impl_->signature;
  Shapes shapes = shapesOf(inputs, params);
  if (saved.empty() && !sig.states.empty())
    throw ShapeError(impl_->where("backward") + "no saved states: call forward() with a SavedStates first");
  if (saved.shapes_.batch != shapes.batch || saved.shapes_.steps != shapes.steps || saved.shapes_.dims != shapes.dims)
    throw ShapeError(impl_->where("backward") + "the saved states come from a forward call with other shapes");
  for (const Port &p : sig.inputs) impl_->expect("backward", "input", p, inputs, shapes.step(p), true);
  for (const Port &p : sig.inputs) impl_->expect("backward", "input gradient", p, inputGrads, shapes.step(p), true);
  for (const Port &p : sig.params) impl_->expect("backward", "parameter gradient", p, paramGrads, shapes.param(p), true);
  for (const Port &o : sig.outputs) impl_->expect("backward", "output gradient", o, outputGrads, shapes.step(o), false);
  for (const Port &s : sig.states) {
    impl_->expect("backward", "final-state gradient", s, finalGrads, shapes.state(s), false);
    impl_->expect("backward", "initial-state gradient", s, initialGrads, shapes.state(s), false);
  }
  impl_->rejectUnknown("backward", "an output", outputGrads, sig.outputs);
  impl_->rejectUnknown("backward", "a state", finalGrads, sig.states);
  impl_->rejectUnknown("backward", "a state", initialGrads, sig.states);

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

  cpu::ChunkedRun run;
  run.batch = shapes.batch;
  run.steps = shapes.steps;
  run.chunk = saved.chunk_;
  run.channelBlock = impl_->options.channelBlock;
  run.dimSizes = impl_->dimSizes(shapes);
  run.reverseChunks = !sig.reverse;
  run.stepInputs = Impl::host(inputs);
  for (auto &[name, view] : Impl::host(grads, ".grad")) run.stepInputs[name] = view;
  run.params = Impl::host(params);
  run.start = Impl::host(finalGrads, ".adj");
  run.checkpointsIn = &saved.checkpoints_;
  run.stepOutputs = Impl::host(inputGrads, ".grad");
  run.accums = Impl::host(paramGrads, ".grad");
  run.finals = Impl::host(initialGrads, ".adj");
  cpu::runChunked(*impl_->programs->backwardPool, run);
}

std::string Recurrence::halideStatement(bool backward) const {
  cpu::ProgramPool &pool = backward ? *impl_->programs->backwardPool : *impl_->programs->forwardPool;
  return pool.get(0).loweredStatement();
}

std::string Recurrence::scanIR() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  impl_->programs->module->print(os);
  return os.str();
}

Recurrence compile(const std::string &path, const CompileOptions &options) {
  std::string error;
  std::optional<dsl::SourceFile> file = dsl::SourceFile::load(path, error);
  if (!file) throw CompileError(error);
  return compileSource(path, file->text(), options);
}

Recurrence compileSource(const std::string &name, const std::string &source, const CompileOptions &options) {
  auto begin = std::chrono::steady_clock::now();
  std::string mlirErrors;
  llvm::raw_string_ostream mlirOut(mlirErrors);
  auto programs = std::make_shared<Programs>();
  programs->session = std::make_unique<scan::Session>(mlirOut);
  std::ostringstream dslErrors;
  programs->module = programs->session->loadText(name, source, dslErrors);
  if (!programs->module) throw CompileError(dslErrors.str() + mlirOut.str());
  if (mlir::failed(programs->session->compile(*programs->module)))
    throw CompileError("internal error: the compile pipeline failed on '" + name + "':\n" + mlirOut.str());

  std::vector<scan::RecurrenceOp> forwards;
  for (auto rec : programs->module->getOps<scan::RecurrenceOp>())
    if (!rec.getAdjointOf() && (options.recurrence.empty() || rec.getSymName() == options.recurrence)) forwards.push_back(rec);
  if (forwards.size() != 1) {
    std::string names;
    for (auto rec : programs->module->getOps<scan::RecurrenceOp>())
      if (!rec.getAdjointOf()) names += " " + rec.getSymName().str();
    throw CompileError(name + ": " + (forwards.empty() ? "no recurrence named '" + options.recurrence + "'"
                                                       : std::string("several recurrences; choose one with CompileOptions::recurrence")) +
                       " (it has:" + names + ")");
  }
  programs->forward = forwards.front();
  mlir::SymbolTable symbols(*programs->module);
  programs->backward = symbols.lookup<scan::RecurrenceOp>((programs->forward.getSymName() + ".backward").str());

  auto impl = std::make_shared<Recurrence::Impl>();
  impl->options = options;
  Signature &sig = impl->signature;
  sig.name = programs->forward.getSymName().str();
  sig.reverse = programs->forward.getReverse();
  for (mlir::Attribute d : programs->forward.getDims()) impl->dimOrder.push_back(llvm::cast<mlir::StringAttr>(d).str());
  for (mlir::Operation &op : programs->forward.getBodyBlock()) {
    if (auto in = llvm::dyn_cast<scan::InputOp>(op)) sig.inputs.push_back({in.getName().str(), dimNames(in.getDims()), storageOf(in.getStorage())});
    if (auto p = llvm::dyn_cast<scan::ParamOp>(op)) sig.params.push_back({p.getName().str(), dimNames(p.getDims()), ElemType::F32});
    if (auto up = llvm::dyn_cast<scan::UpdateOp>(op)) sig.states.push_back({up.getName().str(), dimNames(up.getDims()), ElemType::F32});
    if (auto out = llvm::dyn_cast<scan::OutputOp>(op)) sig.outputs.push_back({out.getName().str(), dimNames(out.getDims()), storageOf(out.getStorage())});
  }
  if (sig.inputs.empty()) throw CompileError(name + ": recurrence '" + sig.name + "' has no inputs, so its batch and length are unknown");

  int threads = options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  std::string irText;
  llvm::raw_string_ostream irStream(irText);
  programs->forward->print(irStream);
  programs->backward->print(irStream);
  size_t hash = llvm::hash_value(irStream.str());
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    auto &cached = programCache[{hash, threads}];
    if (!cached) {
      scan::RecurrenceOp fwd = programs->forward, bwd = programs->backward;
      programs->forwardPool = std::make_unique<cpu::ProgramPool>(
          [fwd] { return cpu::buildForwardProgram(fwd); }, threads, sig.name + " forward", options.verbose);
      programs->backwardPool = std::make_unique<cpu::ProgramPool>(
          [fwd, bwd] { return cpu::buildBackwardProgram(fwd, bwd); }, threads, sig.name + " backward", options.verbose);
      cached = programs;
    }
    impl->programs = cached;
  }
  if (options.verbose)
    std::cerr << "scanforge: compiled " << sig.name << " (forward + generated backward) in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() << " s; CPU programs are "
              << "JIT-compiled on first use\n";
  Recurrence rec;
  rec.impl_ = impl;
  return rec;
}

}  // namespace scanforge
