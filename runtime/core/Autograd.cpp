#include "runtime/core/Autograd.h"

#include <algorithm>
#include <atomic>
#include <unordered_map>
#include <unordered_set>

#include "runtime/core/Dispatch.h"
#include "runtime/core/Error.h"

namespace scanforge {

namespace detail {

struct OutputInfo {
  Shape shape;
  DType dtype;
};

// One op recorded on the tape.
struct Node {
  std::string op;
  uint64_t position = 0;         // recording order: backward runs nodes in decreasing position
  std::vector<Variable> inputs;  // kept alive so that the graph below stays reachable
  std::vector<bool> needsGrad;
  std::vector<OutputInfo> outputs;
  BackwardFn backward;           // empty once a backward pass has released it
};

struct VariableImpl {
  Tensor value;
  Tensor grad;
  bool requiresGrad = false;
  std::shared_ptr<Node> node;  // null for leaves
  size_t outputIndex = 0;      // which output of `node` this is
};

}  // namespace detail

namespace {

thread_local bool gradMode = true;
std::atomic<uint64_t> nextTapePosition{0};

const char *kBackward = "backward";

// acc += g, element-wise; acc is owned by the caller.
void addInPlace(const Tensor &acc, const Tensor &g) {
  dispatchFloat(kBackward, acc, [&]<class T>() {
    T *a = acc.data<T>();
    const T *b = g.data<T>();
    for (int64_t i = 0, n = acc.numel(); i < n; ++i) a[i] += b[i];
  });
}

// Adds a gradient contribution into a slot that may still be shared with the closure that made it.
void accumulate(Tensor &slot, const Tensor &g) {
  if (!slot.defined()) {
    slot = g;
  } else {
    Tensor sum = slot.clone();
    addInPlace(sum, g);
    slot = sum;
  }
}

void checkGradient(const std::string &op, const char *what, size_t index, const Tensor &grad, const Shape &shape,
                   DType dtype) {
  if (grad.shape() != shape || grad.dtype() != dtype)
    throw RuntimeError(op, std::string(what) + " " + std::to_string(index) + " is " + grad.describe() +
                               " but must match its value, " + std::string(nameOf(dtype)) + " " + shapeString(shape));
}

const detail::VariableImpl &checked(const std::shared_ptr<detail::VariableImpl> &impl, const char *what) {
  if (!impl) throw RuntimeError(std::string("Variable::") + what, "the variable is undefined");
  return *impl;
}

}  // namespace

bool gradEnabled() { return gradMode; }
NoGradGuard::NoGradGuard() : previous_(gradMode) { gradMode = false; }
NoGradGuard::~NoGradGuard() { gradMode = previous_; }

bool OpInputs::recording() const { return std::find(needsGrad.begin(), needsGrad.end(), true) != needsGrad.end(); }

Variable::Variable(Tensor value, bool requiresGrad) : impl_(std::make_shared<detail::VariableImpl>()) {
  if (!value.defined()) throw RuntimeError("Variable", "cannot wrap an undefined tensor");
  impl_->value = std::move(value);
  setRequiresGrad(requiresGrad);
}

const Tensor &Variable::value() const { return checked(impl_, "value").value; }
const Tensor &Variable::grad() const { return checked(impl_, "grad").grad; }
bool Variable::requiresGrad() const { return checked(impl_, "requiresGrad").requiresGrad; }
bool Variable::isLeaf() const { return checked(impl_, "isLeaf").node == nullptr; }
std::string Variable::opName() const { return isLeaf() ? "leaf" : impl_->node->op; }

void Variable::setRequiresGrad(bool requiresGrad) const {
  if (!isLeaf())
    throw RuntimeError("Variable::setRequiresGrad", "the output of '" + impl_->node->op +
                                                        "' is not a leaf; use detach() to start a new leaf");
  DType dtype = impl_->value.dtype();
  if (requiresGrad && dtype != DType::F32 && dtype != DType::F64)
    throw RuntimeError("Variable::setRequiresGrad", "gradients need an f32 or f64 value, got " + impl_->value.describe());
  impl_->requiresGrad = requiresGrad;
}

void Variable::setGrad(Tensor grad) const {
  if (!isLeaf()) throw RuntimeError("Variable::setGrad", "only leaves hold gradients, not the output of '" + opName() + "'");
  if (grad.defined()) checkGradient("Variable::setGrad", "gradient", 0, grad, shape(), dtype());
  impl_->grad = grad.contiguous();
}

void Variable::zeroGrad() const {
  checked(impl_, "zeroGrad");
  impl_->grad = Tensor();
}

Variable Variable::detach() const { return Variable(value(), false); }

std::vector<Variable> applyOp(std::string_view name, const std::vector<Variable> &inputs, const ForwardFn &forward) {
  std::string op(name);
  OpInputs in;
  in.tensors.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) throw RuntimeError(op, "input " + std::to_string(i) + " is undefined");
    in.tensors.push_back(inputs[i].value().contiguous());
    in.needsGrad.push_back(gradMode && inputs[i].requiresGrad());
  }
  OpOutputs result = forward(in);
  if (result.outputs.empty()) throw RuntimeError(op, "the forward returned no outputs");
  for (size_t i = 0; i < result.outputs.size(); ++i)
    if (!result.outputs[i].defined()) throw RuntimeError(op, "the forward returned an undefined output " + std::to_string(i));

  bool recording = in.recording();
  std::shared_ptr<detail::Node> node;
  if (recording) {
    if (!result.backward) throw RuntimeError(op, "inputs require gradients but the forward returned no backward closure");
    node = std::make_shared<detail::Node>();
    node->op = op;
    node->position = nextTapePosition.fetch_add(1);
    node->inputs = inputs;
    node->needsGrad = std::move(in.needsGrad);
    for (const Tensor &out : result.outputs) node->outputs.push_back({out.shape(), out.dtype()});
    node->backward = std::move(result.backward);
  }
  std::vector<Variable> outputs;
  outputs.reserve(result.outputs.size());
  for (size_t i = 0; i < result.outputs.size(); ++i) {
    Variable v;
    v.impl_ = std::make_shared<detail::VariableImpl>();
    v.impl_->value = std::move(result.outputs[i]);
    v.impl_->requiresGrad = recording;
    v.impl_->node = node;
    v.impl_->outputIndex = i;
    outputs.push_back(std::move(v));
  }
  return outputs;
}

CustomOp::CustomOp(std::string name, ForwardFn forward) : name_(std::move(name)), forward_(std::move(forward)) {
  if (name_.empty()) throw RuntimeError("CustomOp", "an op needs a name (errors and the tape report it)");
  if (!forward_) throw RuntimeError("CustomOp", "op '" + name_ + "' has no forward function");
}

namespace detail {

void runBackward(const Variable &root, const Tensor &seed, bool retainGraph) {
  if (!root.defined()) throw RuntimeError(kBackward, "the output is undefined");
  if (!root.requiresGrad())
    throw RuntimeError(kBackward, "the " + root.value().describe() +
                                      " output does not require gradients: no input of the ops that computed it "
                                      "requires them, or it was computed under NoGradGuard");
  checkGradient(kBackward, "seed gradient of output", 0, seed, root.shape(), root.dtype());
  NoGradGuard noGrad;  // closures compute with tensors; nothing they do is recorded
  VariableImpl &rootImpl = *root.impl_;
  if (!rootImpl.node) {
    if (!rootImpl.grad.defined()) rootImpl.grad = seed.clone();
    else addInPlace(rootImpl.grad, seed.contiguous());
    return;
  }

  // The nodes the root depends on, latest first. Owning pointers: releasing a node's inputs below
  // may drop the last other reference to a node that has yet to run.
  std::vector<std::shared_ptr<Node>> order;
  std::unordered_set<Node *> seen{rootImpl.node.get()};
  std::vector<std::shared_ptr<Node>> stack{rootImpl.node};
  while (!stack.empty()) {
    std::shared_ptr<Node> node = std::move(stack.back());
    stack.pop_back();
    if (!node->backward)
      throw RuntimeError(kBackward, "the graph through '" + node->op +
                                        "' was already differentiated and its saved tensors freed; pass "
                                        "retainGraph = true to the first backward to differentiate twice");
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      const std::shared_ptr<Node> &producer = node->inputs[i].impl_->node;
      if (node->needsGrad[i] && producer && seen.insert(producer.get()).second) stack.push_back(producer);
    }
    order.push_back(std::move(node));
  }
  std::sort(order.begin(), order.end(), [](const auto &a, const auto &b) { return a->position > b->position; });

  std::unordered_map<Node *, std::vector<Tensor>> pending;
  auto slotsOf = [&](Node *node) -> std::vector<Tensor> & {
    std::vector<Tensor> &slots = pending[node];
    slots.resize(node->outputs.size());
    return slots;
  };
  slotsOf(rootImpl.node.get())[rootImpl.outputIndex] = seed.contiguous();

  for (const std::shared_ptr<Node> &owner : order) {
    Node *node = owner.get();
    std::vector<Tensor> outputGrads = std::move(slotsOf(node));
    pending.erase(node);
    for (size_t i = 0; i < outputGrads.size(); ++i)
      if (!outputGrads[i].defined()) outputGrads[i] = Tensor::zeros(node->outputs[i].shape, node->outputs[i].dtype);
    std::vector<Tensor> inputGrads = node->backward(outputGrads);
    if (inputGrads.size() != node->inputs.size())
      throw RuntimeError(node->op, "the backward returned " + std::to_string(inputGrads.size()) + " gradients for " +
                                       std::to_string(node->inputs.size()) + " inputs");
    for (size_t i = 0; i < inputGrads.size(); ++i) {
      if (!node->needsGrad[i] || !inputGrads[i].defined()) continue;
      VariableImpl &input = *node->inputs[i].impl_;
      checkGradient(node->op, "backward: gradient of input", i, inputGrads[i], input.value.shape(), input.value.dtype());
      Tensor g = inputGrads[i].contiguous();
      if (input.node) {
        accumulate(slotsOf(input.node.get())[input.outputIndex], g);
      } else if (!input.grad.defined()) {
        input.grad = g.clone();  // g may be shared with other slots (e.g. both inputs of an add)
      } else {
        addInPlace(input.grad, g);
      }
    }
    if (!retainGraph) {
      node->backward = nullptr;
      node->inputs.clear();
    }
  }
}

}  // namespace detail

void backward(const Variable &loss, bool retainGraph) {
  if (loss.defined() && loss.value().numel() != 1)
    throw RuntimeError(kBackward, "backward(loss) needs a one-element loss, got " + loss.value().describe() +
                                      "; pass the output's gradient to differentiate a tensor");
  if (!loss.defined()) throw RuntimeError(kBackward, "the loss is undefined");
  detail::runBackward(loss, Tensor::full(loss.shape(), 1.0, loss.dtype()), retainGraph);
}

void backward(const Variable &output, const Tensor &outputGrad, bool retainGraph) {
  detail::runBackward(output, outputGrad, retainGraph);
}

}  // namespace scanforge
