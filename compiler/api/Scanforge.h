// scanforge's C++ API: compile a recurrence from a .scan file and run its forward and generated
// backward pass on the CPU (Halide, JIT-compiled on first use and cached).
//
//   scanforge::Recurrence rec = scanforge::compile("models/mingru.scan");
//   rec.forward(inputs, params, initial, outputs, finals, &saved);
//   rec.backward(inputs, params, saved, outputGrads, finalGrads, inputGrads, paramGrads, initialGrads);
//   rec.step(stepInputs, params, states, stepOutputs);        // decoding: one step, states in and out
//   rec.forwardPacked(cuSeqlens, inputs, params, initial, outputs, finals, &saved);  // packed sequences
//
// Tensors are dense row-major views owned by the caller (see TensorView); names are the port
// names of the .scan file. Per-step tensors (inputs, outputs) are [B, T, dims...], parameters
// [dims...], states [B, dims...], all with the dimension order declared in the file. Decoding and
// packed sequences: docs/sequences.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace scanforge {

enum class ElemType { F32, BF16 };

struct TensorView {
  void *data = nullptr;
  std::vector<int64_t> shape;
  ElemType type = ElemType::F32;
};
using TensorViews = std::map<std::string, TensorView>;

struct Port {
  std::string name;
  std::vector<std::string> dims;  // declared order (row-major, the last is contiguous)
  ElemType type = ElemType::F32;
};

struct Signature {
  std::string name;
  bool reverse = false;
  std::vector<Port> inputs, params, states, outputs;
};

// Concrete sizes for one call, taken from the inputs and parameters.
struct Shapes {
  int64_t batch = 0, steps = 0;
  std::map<std::string, int64_t> dims;
  std::vector<int64_t> step(const Port &port) const;   // [B, T, dims...]
  std::vector<int64_t> state(const Port &port) const;  // [B, dims...]
  std::vector<int64_t> param(const Port &port) const;  // [dims...]
};

struct CompileOptions {
  std::string recurrence;  // which recurrence of the file; empty: the file must hold exactly one
  bool verbose = false;    // report parse, compile, emission and JIT times on stderr
  int threads = 0;         // CPU worker threads; 0: one per core
  int64_t chunk = 0;       // time steps per chunk; 0: chosen from the state size (docs/cpu.md)
  int64_t channelBlock = 0;  // channels per CPU work unit when the batch is small; 0: by rule (docs/cpu.md)
  // Compile each recurrence's slice transition in its place: the same inputs, parameters and
  // states, each state updated by its coefficient alone (h = a * h), no outputs. Started from
  // ones, its final states are the product of a over the call's steps: what context parallelism
  // carries between devices (docs/context-parallel.md).
  bool transitions = false;
  // Store every input and output port as bf16, as if each were declared `: bf16` (states and
  // arithmetic stay f32): the same file compiled for bf16 activations (scanc --bf16-ports).
  bool bf16Ports = false;
};

// The .scan file has errors; what() holds the rendered diagnostics.
struct CompileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A call's tensors do not fit the recurrence; what() names the recurrence, the port and the shapes.
struct ShapeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The bytes a forward() or backward() call read and wrote in memory: its tensors (inputs,
// parameters, outputs, gradients, start and final states), the forward's checkpoints, and the
// per-block copies of outputs that blocks of channels sum into (docs/cpu.md, "Channel blocks").
// The buffers its programs keep for one chunk, which stay in cache, are not counted.
struct Traffic {
  int64_t bytesRead = 0, bytesWritten = 0;
};

// What the backward needs from its forward: the states at the start of every time chunk.
class SavedStates {
 public:
  bool empty() const { return checkpoints_.empty() && sequences_.empty(); }

 private:
  friend class Recurrence;
  Shapes shapes_;
  int64_t chunk_ = 0;
  std::map<std::string, std::vector<float>> checkpoints_;
  // forwardPacked(): its offsets and each non-empty sequence's own (empty for an empty sequence).
  std::vector<int64_t> cuSeqlens_;
  std::vector<SavedStates> sequences_;
};

class Recurrence {
 public:
  const Signature &signature() const;

  // Checks the inputs and parameters against the signature and returns the call's sizes.
  Shapes shapesOf(const TensorViews &inputs, const TensorViews &params) const;

  // Writes every output ([B, T, dims...]); `finals` (optional per state) receive the states after
  // the last step; `initial` (optional per state) gives the states before the first step (zero if
  // absent). With `saved`, keeps what backward() needs; with `traffic`, counts the bytes moved.
  void forward(const TensorViews &inputs, const TensorViews &params, const TensorViews &initial,
               const TensorViews &outputs, const TensorViews &finals, SavedStates *saved,
               Traffic *traffic = nullptr) const;

  // Gradients of a loss L given dL/d(outputs) (missing: zero) and dL/d(final states) (missing:
  // zero). Writes dL/d(inputs) for every input, dL/d(params) (summed over batch and time) for
  // every parameter, and dL/d(initial states) for those requested in `initialGrads`. With
  // `traffic`, counts the bytes moved.
  void backward(const TensorViews &inputs, const TensorViews &params, const SavedStates &saved,
                const TensorViews &outputGrads, const TensorViews &finalGrads, const TensorViews &inputGrads,
                const TensorViews &paramGrads, const TensorViews &initialGrads, Traffic *traffic = nullptr) const;

  // Decoding: one time step. Inputs and outputs are [B, dims...] (no time axis); `states` must hold
  // every state, [B, dims...]: read as the states before the step, overwritten with those after it.
  // The CPU program (a copy of its own, JIT-compiled on the first step) and its buffers are kept
  // for the last batch size and dimension sizes: a step with the same shapes compiles nothing and
  // allocates nothing here. Steps of one Recurrence (and its copies) run one at a time. ShapeError
  // for a reverse recurrence, which runs from the last step to the first.
  void step(const TensorViews &inputs, const TensorViews &params, const TensorViews &states,
            const TensorViews &outputs) const;

  // Packed sequences (FLA's cu_seqlens convention): N sequences of different lengths laid end to
  // end, per-step tensors [1, total, dims...], sequence i the steps [cuSeqlens[i], cuSeqlens[i+1]);
  // initial and final states (and their gradients) [N, dims...], one row per sequence. cuSeqlens
  // has N + 1 entries, starts at 0, never decreases and ends at total (ShapeError otherwise).
  // Each sequence runs alone, so the results are bit for bit those of N separate calls; parameter
  // gradients are the sum of the sequences' (added in double, in sequence order). An empty
  // sequence's final state is its initial state, and its initial-state gradient is its final-state
  // gradient.
  void forwardPacked(const std::vector<int64_t> &cuSeqlens, const TensorViews &inputs, const TensorViews &params,
                     const TensorViews &initial, const TensorViews &outputs, const TensorViews &finals,
                     SavedStates *saved) const;
  void backwardPacked(const std::vector<int64_t> &cuSeqlens, const TensorViews &inputs, const TensorViews &params,
                      const SavedStates &saved, const TensorViews &outputGrads, const TensorViews &finalGrads,
                      const TensorViews &inputGrads, const TensorViews &paramGrads,
                      const TensorViews &initialGrads) const;

  // The check forward() makes of its parameters (a state's decay above 1: a warning, given once
  // per recurrence), for a caller that runs the recurrence elsewhere (the CUDA kernels):
  // checkedParameters() names the parameters it reads (none once it warned), checkParameters()
  // reads host copies of them, by port name, and warns like forward() would.
  std::vector<std::string> checkedParameters() const;
  void checkParameters(const TensorViews &params) const;
  // The conditions that check is made of: each keeps a state's decay at most 1 in magnitude for
  // every input, whatever the other parameters (docs/dsl.md, "Decays above 1"). A caller that
  // draws parameters (scan-bench) draws them within these.
  struct ParameterCondition {
    enum Kind { NonPositive, NonNegative, MagnitudeAtMostOne };
    std::string param, state;  // the parameter, and the state whose decay it bounds
    Kind kind;
    std::string text;  // "A <= 0", "|lambda| <= 1"
  };
  std::vector<ParameterCondition> parameterConditions() const;

  // The time-chunk length a call with these sizes uses.
  int64_t chunkFor(const Shapes &shapes) const;

  // How a forward with these sizes cuts each batch element's channels into work units for the
  // threads (docs/cpu.md, "Channel blocks"): `blocks` blocks of `width` channels of dimension
  // `dim` (the last one may be narrower); one block of all of them when they are not cut, and no
  // dim when no dimension can be cut.
  struct ChannelBlocks {
    std::string dim;
    int64_t width = 0, blocks = 1;
  };
  ChannelBlocks channelBlocksFor(const Shapes &shapes) const;

  // Halide's lowered statement of the forward or backward CPU program.
  std::string halideStatement(bool backward) const;
  // The forward or backward CPU program's machine code for this host, as assembly text.
  std::string cpuAssembly(bool backward) const;
  // The compiled `scan` module (forward and backward) as MLIR text.
  std::string scanIR() const;

  struct Impl;

 private:
  friend class CompiledModule;
  // forward() after its checks: the CPU program over views of `shapes` (forwardPacked runs it per
  // sequence, having checked the packed call once).
  void runForward(const Shapes &shapes, const TensorViews &inputs, const TensorViews &params, const TensorViews &initial,
                  const TensorViews &outputs, const TensorViews &finals, SavedStates *saved, Traffic *traffic) const;
  std::shared_ptr<Impl> impl_;
};

// Warnings: a call that runs, but whose result is likely not what was meant (a state's decay above
// 1 in magnitude, docs/dsl.md "Decays above 1"). By default each is printed to stderr as
// "scanforge: warning: ..."; setWarningHandler replaces that for the whole process (an empty
// handler restores it). The handler runs on the thread that made the call.
using WarningHandler = std::function<void(const std::string &message)>;
void setWarningHandler(WarningHandler handler);

// One recurrence of a .scan file (CompileOptions::recurrence, or the file's only one); the same as
// compileModule(path, options).recurrence(options.recurrence) (CompiledModule.h).
Recurrence compile(const std::string &path, const CompileOptions &options = {});
Recurrence compileSource(const std::string &name, const std::string &source, const CompileOptions &options = {});

}  // namespace scanforge
