// Tape-based reverse-mode automatic differentiation.
//
// A Variable is a tensor value with an optional history. Every op applied to Variables that require
// gradients records one node on the tape: the op's name, its inputs, the shapes of its outputs and a
// backward closure. backward(loss) replays the nodes the loss depends on in reverse recording order
// (a valid reverse topological order, since a node's inputs are always recorded before it), hands
// each closure the gradients of its outputs and adds what the closure returns into its inputs: into
// `.grad` for leaves (parameters, with accumulation across backward calls until zeroGrad()), into
// the producing node's pending output gradients otherwise.
//
// The tape is owned by the values computed from it: a node lives as long as some Variable that
// depends on it, so a training step's tape is freed with its loss; there is nothing to clear.
// backward() frees each node's closure (and the tensors it saved) as it goes; differentiating the
// same graph twice needs retainGraph = true on the first call.
//
// ---- Custom ops: how other code (the compiled scan kernels) plugs in ------------------------------
//
// An op is a name plus a forward function. The forward receives the inputs' values as contiguous
// row-major tensors (so `in[i].data<float>()` is a raw float buffer with shape `in[i].shape()`, e.g.
// [B, T, dims...]), computes its outputs as new tensors, and returns them together with a backward
// closure. The closure receives one contiguous gradient per output (zeros for an output the loss does
// not use; read-only, since they may be shared) and returns one gradient per input, each of its
// input's shape and dtype; it may return an undefined Tensor for an input that gets no gradient,
// and need not compute gradients of inputs with `in.needsGrad[i] == false`. Capture what the
// backward needs by value (Tensors share memory, so this is cheap; hold large opaque state through
// a std::shared_ptr, since std::function must be copyable). When `in.recording()` is false
// (NoGradGuard, or no input requires gradients) no backward will run: the forward may skip saving
// state and return an empty closure.
//
//   // Wrapping a compiled recurrence once, at model construction:
//   CustomOp mingru("mingru", [rec](const OpInputs &in) {
//     Tensor h = Tensor::empty(in[0].shape(), DType::F32);          // [B, T, d]
//     auto saved = std::make_shared<SavedStates>();
//     rec.forward(views("k", in[0], "u", in[1]), {}, {}, views("h", h), {}, saved.get());
//     return OpOutputs{{h}, [rec, in, saved](const std::vector<Tensor> &dh) -> std::vector<Tensor> {
//       Tensor dk = Tensor::empty(in[0].shape(), DType::F32), du = Tensor::empty(in[1].shape(), DType::F32);
//       rec.backward(..., *saved, views("h", dh[0]), {}, views("k", dk, "u", du), {}, {});
//       return {dk, du};
//     }};
//   });
//   // (views(): the caller's helper that wraps Tensors as the compiler API's TensorViews.)
//   // Using it in a layer, like any other op:
//   Variable h = mingru({k, u})[0];
//
// The runtime checks what the closures return (count, shape, dtype) and names the op in its error.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/Tensor.h"

namespace scanforge {

class Variable;

namespace detail {
struct Node;
struct VariableImpl;
void runBackward(const Variable &root, const Tensor &seed, bool retainGraph);
}  // namespace detail

// What an op's forward function receives.
struct OpInputs {
  std::vector<Tensor> tensors;  // the inputs' values, contiguous
  std::vector<bool> needsGrad;  // needsGrad[i]: the backward must return input i's gradient

  const Tensor &operator[](size_t i) const { return tensors[i]; }
  size_t size() const { return tensors.size(); }
  bool recording() const;  // some input needs a gradient: the backward closure will be used
};

using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor> &outputGrads)>;

// What an op's forward function returns.
struct OpOutputs {
  std::vector<Tensor> outputs;
  BackwardFn backward;  // required when recording, ignored otherwise
};

using ForwardFn = std::function<OpOutputs(const OpInputs &in)>;

class Variable {
 public:
  Variable() = default;  // undefined
  // A leaf: a value with no history (a parameter when requiresGrad, data otherwise).
  explicit Variable(Tensor value, bool requiresGrad = false);

  bool defined() const { return impl_ != nullptr; }
  const Tensor &value() const;
  // The accumulated gradient of a leaf; undefined until a backward pass reaches it.
  const Tensor &grad() const;
  bool requiresGrad() const;
  bool isLeaf() const;       // true unless an op recorded on the tape produced this value
  std::string opName() const;  // the op that produced it, or "leaf"

  // A Variable is a handle (copies share the value, gradient and history); its constness does not
  // cover that shared state.
  void setRequiresGrad(bool requiresGrad) const;  // leaves only
  void setGrad(Tensor grad) const;  // leaves only; the variable owns `grad` afterwards (backward adds into it)
  void zeroGrad() const;            // drops the gradient; the next backward allocates a fresh one
  Variable detach() const;    // the same value (shared memory) with no history

  const Shape &shape() const { return value().shape(); }
  DType dtype() const { return value().dtype(); }
  double item() const { return value().item(); }

 private:
  friend std::vector<Variable> applyOp(std::string_view, const std::vector<Variable> &, const ForwardFn &);
  friend void detail::runBackward(const Variable &, const Tensor &, bool);
  std::shared_ptr<detail::VariableImpl> impl_;
};

// Runs `forward` on the inputs' values and, when gradients are needed, records it on the tape.
// Every built-in op is written with it.
std::vector<Variable> applyOp(std::string_view name, const std::vector<Variable> &inputs, const ForwardFn &forward);

// A named op defined once and applied many times (the registration point for the scan kernels).
class CustomOp {
 public:
  CustomOp(std::string name, ForwardFn forward);
  std::vector<Variable> operator()(const std::vector<Variable> &inputs) const {
    return applyOp(name_, inputs, forward_);
  }
  const std::string &name() const { return name_; }

 private:
  std::string name_;
  ForwardFn forward_;
};

// Differentiates a scalar loss (seed gradient 1) into the leaves it depends on.
void backward(const Variable &loss, bool retainGraph = false);
// Differentiates any output, given dL/d(output) (same shape and dtype as the output).
void backward(const Variable &output, const Tensor &outputGrad, bool retainGraph = false);

// While one is alive, ops on this thread record nothing and produce values without history.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard &) = delete;
  NoGradGuard &operator=(const NoGradGuard &) = delete;

 private:
  bool previous_;
};

bool gradEnabled();

}  // namespace scanforge
