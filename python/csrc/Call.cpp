#include "python/csrc/Call.h"

#include <c10/util/Exception.h>

namespace scanforge::torchext {

namespace {

std::string shapeText(at::IntArrayRef shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string dtypeName(at::ScalarType t) { return c10::toString(t); }

struct Checker {
  explicit Checker(const Signature &sig) : sig(sig) {}

  const Signature &sig;
  const at::Tensor *first = nullptr;  // the tensor that fixed the call's device and dtype
  std::string firstName;

  std::string where() const { return "scanforge " + sig.name + ": "; }

  void count(const char *role, const std::vector<Port> &ports, at::TensorList given) const {
    if (given.size() != ports.size())
      C10_THROW_ERROR(ValueError, where() + "expected " + std::to_string(ports.size()) + " " + role + " tensors, got " +
                                      std::to_string(given.size()));
  }

  void tensor(const char *role, const std::string &name, const at::Tensor &t) {
    std::string what = std::string(role) + " '" + name + "'";
    if (!t.defined()) C10_THROW_ERROR(ValueError, where() + what + " is undefined");
    at::ScalarType type = t.scalar_type();
    if (type != at::kDouble && type != at::kFloat && type != at::kBFloat16)
      C10_THROW_ERROR(TypeError, where() + what + " " + shapeText(t.sizes()) + " is " + dtypeName(type) +
                                     "; scanforge takes float64, float32 or bfloat16");
    if (!first) {
      first = &t;
      firstName = what;
    } else if (t.device() != first->device()) {
      C10_THROW_ERROR(ValueError, where() + what + " " + shapeText(t.sizes()) + " is on " + t.device().str() + ", but " +
                                      firstName + " is on " + first->device().str());
    } else if (type != first->scalar_type()) {
      C10_THROW_ERROR(TypeError, where() + what + " " + shapeText(t.sizes()) + " is " + dtypeName(type) + ", but " +
                                     firstName + " is " + dtypeName(first->scalar_type()) + "; one call takes one dtype");
    }
    if (!t.is_contiguous())
      C10_THROW_ERROR(ValueError, where() + what + " " + shapeText(t.sizes()) + " (strides " + shapeText(t.strides()) +
                                      ") is not contiguous; pass .contiguous()");
  }

  void shape(const char *role, const Port &port, const at::Tensor &t, const std::vector<int64_t> &want) const {
    if (t.sizes() != at::IntArrayRef(want))
      C10_THROW_ERROR(ValueError, where() + role + " '" + port.name + "' has shape " + shapeText(t.sizes()) +
                                      ", expected " + shapeText(want));
  }
};

TensorView view(const at::Tensor &t) { return {t.data_ptr(), t.sizes().vec(), ElemType::F32}; }

}  // namespace

Call bindCall(const std::string &key, at::TensorList inputs, at::TensorList params,
              const std::vector<std::string> &initialNames, at::TensorList initial) {
  Call call;
  call.rec = &lookup(key);
  const Signature &sig = call.signature();
  Checker check(sig);
  check.count("input", sig.inputs, inputs);
  check.count("parameter", sig.params, params);
  TensorViews in, pr;
  for (size_t i = 0; i < inputs.size(); ++i) {
    check.tensor("input", sig.inputs[i].name, inputs[i]);
    in[sig.inputs[i].name] = view(inputs[i]);
  }
  for (size_t i = 0; i < params.size(); ++i) {
    check.tensor("parameter", sig.params[i].name, params[i]);
    pr[sig.params[i].name] = view(params[i]);
  }
  call.dtype = check.first->scalar_type();
  try {
    call.shapes = call.rec->cpu.shapesOf(in, pr);
  } catch (const ShapeError &e) {
    std::string given;
    for (size_t i = 0; i < inputs.size(); ++i) given += (i ? ", " : "") + sig.inputs[i].name + " " + shapeText(inputs[i].sizes());
    for (size_t i = 0; i < params.size(); ++i) given += ", " + sig.params[i].name + " " + shapeText(params[i].sizes());
    C10_THROW_ERROR(ValueError, std::string("scanforge ") + e.what() + " (given " + given + ")");
  }
  if (initialNames.size() != initial.size())
    C10_THROW_ERROR(ValueError, check.where() + std::to_string(initialNames.size()) + " initial-state names for " +
                                    std::to_string(initial.size()) + " tensors");
  for (size_t i = 0; i < initial.size(); ++i) {
    const Port *state = nullptr;
    for (const Port &s : sig.states) state = s.name == initialNames[i] ? &s : state;
    if (!state) {
      std::string known;
      for (const Port &s : sig.states) known += (known.empty() ? "" : ", ") + ("'" + s.name + "'");
      C10_THROW_ERROR(ValueError, check.where() + "'" + initialNames[i] + "' is not a state of " + sig.name +
                                      " (its states: " + (known.empty() ? "none" : known) + ")");
    }
    for (const Port *seen : call.initialPorts)
      if (seen == state) C10_THROW_ERROR(ValueError, check.where() + "two initial values for state '" + state->name + "'");
    check.tensor("initial state", state->name, initial[i]);
    check.shape("initial state", *state, initial[i], call.shapes.state(*state));
    call.initialPorts.push_back(state);
  }
  return call;
}

void checkGradients(const Call &call, at::TensorList outputGrads, at::TensorList finalGrads) {
  const Signature &sig = call.signature();
  Checker check(sig);
  check.count("output-gradient", sig.outputs, outputGrads);
  check.count("final-state-gradient", sig.states, finalGrads);
  for (size_t i = 0; i < outputGrads.size(); ++i) {
    check.tensor("output gradient", sig.outputs[i].name, outputGrads[i]);
    check.shape("output gradient", sig.outputs[i], outputGrads[i], call.shapes.step(sig.outputs[i]));
  }
  for (size_t i = 0; i < finalGrads.size(); ++i) {
    check.tensor("final-state gradient", sig.states[i].name, finalGrads[i]);
    check.shape("final-state gradient", sig.states[i], finalGrads[i], call.shapes.state(sig.states[i]));
  }
}

}  // namespace scanforge::torchext
