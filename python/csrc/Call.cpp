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
  std::map<std::string, std::pair<int64_t, std::string>> sizes;  // dimension -> size, and who fixed it

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

  // Binds the sizes of a tensor of `lead` leading dimensions (B, T) and the port's dimensions.
  void bind(const char *role, const Port &port, const at::Tensor &t, const std::vector<std::string> &lead) {
    std::vector<std::string> dims = lead;
    dims.insert(dims.end(), port.dims.begin(), port.dims.end());
    std::string what = std::string(role) + " '" + port.name + "' " + shapeText(t.sizes());
    if (t.dim() != static_cast<int64_t>(dims.size())) {
      std::string names;
      for (const std::string &d : dims) names += (names.empty() ? "" : ", ") + d;
      C10_THROW_ERROR(ValueError, where() + what + " has " + std::to_string(t.dim()) + " dimensions, expected " +
                                      std::to_string(dims.size()) + " [" + names + "]");
    }
    for (size_t i = 0; i < dims.size(); ++i) {
      int64_t size = t.size(static_cast<int64_t>(i));
      if (size <= 0) C10_THROW_ERROR(ValueError, where() + what + " has " + dims[i] + " = " + std::to_string(size));
      auto [it, fresh] = sizes.emplace(dims[i], std::pair{size, what});
      if (!fresh && it->second.first != size)
        C10_THROW_ERROR(ValueError, where() + what + " has " + dims[i] + " = " + std::to_string(size) + ", but " +
                                        it->second.second + " has " + dims[i] + " = " + std::to_string(it->second.first));
    }
  }

  void shape(const char *role, const Port &port, const at::Tensor &t, const std::vector<int64_t> &want) const {
    if (t.sizes() != at::IntArrayRef(want))
      C10_THROW_ERROR(ValueError, where() + role + " '" + port.name + "' has shape " + shapeText(t.sizes()) +
                                      ", expected " + shapeText(want));
  }
};

}  // namespace

std::vector<int64_t> Call::step(const Port &port) const {
  std::vector<int64_t> out = {shape.batch, shape.steps};
  for (const std::string &d : port.dims) out.push_back(shape.dims.at(d));
  return out;
}
int64_t Call::rows() const { return packed() ? static_cast<int64_t>(cuSeqlens.size()) - 1 : shape.batch; }

std::vector<int64_t> Call::state(const Port &port) const {
  std::vector<int64_t> out = {rows()};
  for (const std::string &d : port.dims) out.push_back(shape.dims.at(d));
  return out;
}
std::vector<int64_t> Call::param(const Port &port) const {
  std::vector<int64_t> out;
  for (const std::string &d : port.dims) out.push_back(shape.dims.at(d));
  return out;
}

namespace {

// The offsets of a packed call on inputs of shape B x T, checked.
std::vector<int64_t> offsetsOf(const Checker &check, const at::Tensor &cu, int64_t batch, int64_t steps) {
  std::string what = check.where() + "cu_seqlens " + shapeText(cu.sizes());
  if (cu.scalar_type() != at::kInt && cu.scalar_type() != at::kLong)
    C10_THROW_ERROR(TypeError, what + " is " + dtypeName(cu.scalar_type()) + "; offsets are int32 or int64");
  if (cu.dim() != 1 || cu.size(0) < 2)
    C10_THROW_ERROR(ValueError, what + " must be one-dimensional with N + 1 >= 2 offsets for N sequences");
  if (batch != 1)
    C10_THROW_ERROR(ValueError, check.where() + "packed sequences take B = 1 (inputs [1, total, dims...]), got B = " +
                                    std::to_string(batch));
  at::Tensor host = cu.to(at::kCPU, at::kLong).contiguous();
  std::vector<int64_t> offsets(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel());
  if (offsets.front() != 0) C10_THROW_ERROR(ValueError, what + " starts at " + std::to_string(offsets.front()) + ", not 0");
  for (size_t i = 1; i < offsets.size(); ++i)
    if (offsets[i] < offsets[i - 1])
      C10_THROW_ERROR(ValueError, what + " decreases at entry " + std::to_string(i) + " (" + std::to_string(offsets[i - 1]) +
                                      " then " + std::to_string(offsets[i]) + ")");
  if (offsets.back() != steps)
    C10_THROW_ERROR(ValueError, what + " ends at " + std::to_string(offsets.back()) + ", but the inputs have total = T = " +
                                    std::to_string(steps) + " steps");
  return offsets;
}

}  // namespace

Call bindCall(const std::string &key, at::TensorList inputs, at::TensorList params, const Names &initialNames,
              at::TensorList initial, const c10::optional<at::Tensor> &cuSeqlens) {
  Call call;
  call.rec = &lookup(key);
  const Signature &sig = call.signature();
  Checker check(sig);
  check.count("input", sig.inputs, inputs);
  check.count("parameter", sig.params, params);
  for (size_t i = 0; i < inputs.size(); ++i) {
    check.tensor("input", sig.inputs[i].name, inputs[i]);
    check.bind("input", sig.inputs[i], inputs[i], {"B", "T"});
  }
  for (size_t i = 0; i < params.size(); ++i) {
    check.tensor("parameter", sig.params[i].name, params[i]);
    check.bind("parameter", sig.params[i], params[i], {});
  }
  call.dtype = check.first->scalar_type();
  for (auto &[dim, size] : check.sizes) {
    if (dim == "B") call.shape.batch = size.first;
    else if (dim == "T") call.shape.steps = size.first;
    else call.shape.dims[dim] = size.first;
  }
  if (cuSeqlens && cuSeqlens->defined()) call.cuSeqlens = offsetsOf(check, *cuSeqlens, call.shape.batch, call.shape.steps);
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
    check.shape("initial state", *state, initial[i], call.state(*state));
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
    check.shape("output gradient", sig.outputs[i], outputGrads[i], call.step(sig.outputs[i]));
  }
  for (size_t i = 0; i < finalGrads.size(); ++i) {
    check.tensor("final-state gradient", sig.states[i].name, finalGrads[i]);
    check.shape("final-state gradient", sig.states[i], finalGrads[i], call.state(sig.states[i]));
  }
}

}  // namespace scanforge::torchext
