// Inside the API: what a Recurrence holds (Compile.cpp builds it, Sequences.cpp adds decoding and
// packed sequences on top of forward() and backward()).
#pragma once

#include <array>
#include <atomic>
#include <mutex>

#include "compiler/api/CompiledModuleImpl.h"
#include "compiler/halide/CpuExecutor.h"
#include "compiler/halide/StepRunner.h"
#include "compiler/mlir/Dialect/Scan/Analysis/DecayBounds.h"

namespace scanforge {

namespace detail {

std::string shapeText(const std::vector<int64_t> &shape);

// Gives a warning to the handler of setWarningHandler, or prints it to stderr (Warnings.cpp).
void warn(const std::string &message);

// The CPU programs of one compiled recurrence, shared by every Recurrence with the same IR (they
// keep the module that holds it alive).
struct Programs {
  std::shared_ptr<const CompiledModule::Impl> module;
  scan::RecurrenceOp forward, backward;
  std::unique_ptr<cpu::SharedProgram> forwardProgram, backwardProgram;
  // Decoding (Recurrence::step) calls the forward program through a runner for the last shapes,
  // by port name (a call may share the compiled pipeline with a forward() on another thread).
  std::mutex stepMutex;
  std::unique_ptr<cpu::StepRunner> stepRunner;
  // The shape and type of each port of the last step (inputs, params, states, outputs; no data).
  std::array<std::map<std::string, TensorView>, 4> stepShapes;
};

}  // namespace detail

struct Recurrence::Impl {
  Signature signature;
  std::shared_ptr<detail::Programs> programs;
  CompileOptions options;
  std::vector<std::string> dimOrder;  // the recurrence's dimension table
  // The backward program's port standing for the adjoint of each forward port, by kind and name.
  std::map<std::pair<scan::PortKind, std::string>, std::string> adjointPorts;

  // What keeps each state's decay at most 1 in magnitude (scan::DecayBounds of the forward), and
  // whether a call's parameters broke it already: the warning is given once per compiled recurrence.
  std::vector<scan::DecayBound> decayBounds;
  mutable std::atomic<bool> warnedDecay{false};

  std::string where(const char *call) const { return signature.name + "." + call + ": "; }

  // Warns (setWarningHandler) the first time a call's parameters break a condition of decayBounds.
  void warnIfDecayExceedsOne(const char *call, const TensorViews &params) const;

  void expect(const char *call, const char *role, const Port &port, const TensorViews &views,
              const std::vector<int64_t> &shape, bool required) const {
    auto it = views.find(port.name);
    if (it == views.end()) {
      if (required) throw ShapeError(where(call) + "missing " + role + " '" + port.name + "' of shape " + detail::shapeText(shape));
      return;
    }
    if (!it->second.data) throw ShapeError(where(call) + role + " '" + port.name + "' has no data");
    if (it->second.shape != shape)
      throw ShapeError(where(call) + role + " '" + port.name + "' has shape " + detail::shapeText(it->second.shape) +
                       ", expected " + detail::shapeText(shape));
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

  // The results of a forward call: outputs shaped by `steps`, initial and final states by `states`
  // (whose batch is the number of state rows), and no tensor the recurrence lacks.
  void expectForwardResults(const char *call, const Shapes &steps, const Shapes &states, const TensorViews &outputs,
                            const TensorViews &initial, const TensorViews &finals) const {
    for (const Port &o : signature.outputs) expect(call, "output", o, outputs, steps.step(o), true);
    for (const Port &s : signature.states) {
      expect(call, "initial state", s, initial, states.state(s), false);
      expect(call, "final state", s, finals, states.state(s), false);
    }
    rejectUnknown(call, "an output", outputs, signature.outputs);
    rejectUnknown(call, "a state", initial, signature.states);
    rejectUnknown(call, "a state", finals, signature.states);
  }

  // The gradients of a backward call, shaped as expectForwardResults says.
  void expectBackwardGradients(const char *call, const Shapes &steps, const Shapes &states,
                               const TensorViews &inputGrads, const TensorViews &paramGrads,
                               const TensorViews &outputGrads, const TensorViews &finalGrads,
                               const TensorViews &initialGrads) const {
    for (const Port &p : signature.inputs) expect(call, "input gradient", p, inputGrads, steps.step(p), true);
    for (const Port &p : signature.params) expect(call, "parameter gradient", p, paramGrads, steps.param(p), true);
    for (const Port &o : signature.outputs) expect(call, "output gradient", o, outputGrads, steps.step(o), false);
    for (const Port &s : signature.states) {
      expect(call, "final-state gradient", s, finalGrads, states.state(s), false);
      expect(call, "initial-state gradient", s, initialGrads, states.state(s), false);
    }
    rejectUnknown(call, "an output", outputGrads, signature.outputs);
    rejectUnknown(call, "a state", finalGrads, signature.states);
    rejectUnknown(call, "a state", initialGrads, signature.states);
  }

  std::vector<int64_t> dimSizes(const Shapes &shapes) const {
    std::vector<int64_t> sizes;
    for (const std::string &d : dimOrder) sizes.push_back(shapes.dims.at(d));
    return sizes;
  }

  // A run over these sizes in chunks of `chunk` steps, its tensors still to be bound.
  cpu::ChunkedRun runOf(const Shapes &shapes, int64_t chunk, bool reverseChunks) const {
    cpu::ChunkedRun run;
    run.batch = shapes.batch;
    run.steps = shapes.steps;
    run.chunk = chunk;
    run.channelBlock = options.channelBlock;
    run.dimSizes = dimSizes(shapes);
    run.reverseChunks = reverseChunks;
    return run;
  }

  static cpu::HostViews host(const TensorViews &views) {
    cpu::HostViews out;
    for (auto &[name, v] : views) out[name] = {v.data, v.shape};
    return out;
  }
  // The views, keyed by the backward program's adjoint ports of the forward ports they name.
  cpu::HostViews adjoints(const TensorViews &views, scan::PortKind kind) const {
    cpu::HostViews out;
    for (auto &[name, v] : views) out[adjointPorts.at({kind, name})] = {v.data, v.shape};
    return out;
  }
};

}  // namespace scanforge
