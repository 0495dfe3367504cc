// The C++ runtime's initialisers (models/layers/Init.h: s4d_real, lru_nu, chrono, UGI, Gumbel, ...)
// as ops, so that scanforge.nn initialises exactly as the runtime's layers do (docs/training.md):
//
//   init_parameter_(value, what, spec, seed, related)   a recurrence parameter
//   init_gate_bias_(bias, what, spec, fan_in, seed)     the bias of a gate's projection
//   default_parameter_init(name) -> spec                the runtime's default for a parameter name
//
// spec is JSON {"kind": ..., "args": {...}}; `seed` seeds the runtime's Generator.
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "models/layers/Init.h"
#include "python/csrc/Errors.h"
#include "runtime/core/Error.h"

namespace scanforge::torchext {

namespace {

config::InitSpec specOf(const std::string &json) {
  try {
    nlohmann::json j = nlohmann::json::parse(json);
    return {j.at("kind").get<std::string>(), j.value("args", std::map<std::string, double>())};
  } catch (const nlohmann::json::exception &e) {
    C10_THROW_ERROR(ValueError, "scanforge: an initialiser is {\"kind\": ..., \"args\": {...}}, not " + json + " (" +
                                    e.what() + ")");
  }
}

scanforge::Tensor runtimeTensor(const at::Tensor &t, const std::string &what) {
  if (t.scalar_type() != at::kFloat || !t.device().is_cpu() || !t.is_contiguous())
    C10_THROW_ERROR(TypeError, "scanforge: " + what + " must be a contiguous float32 CPU tensor to initialise");
  scanforge::Tensor r = scanforge::Tensor::empty(Shape(t.sizes().begin(), t.sizes().end()), DType::F32);
  std::memcpy(r.data<float>(), t.data_ptr<float>(), t.numel() * sizeof(float));
  return r;
}

// Runs the initialiser on a runtime tensor and copies the values into `value`.
template <class F>
void initialise(const at::Tensor &value, const std::string &what, F body) {
  scanforge::Tensor r = runtimeTensor(value, what);
  translated<scanforge::RuntimeError, c10::ValueError>("scanforge: ", [&] { body(r); });
  std::memcpy(value.data_ptr<float>(), r.data<float>(), value.numel() * sizeof(float));
}

void initParameter(const at::Tensor &value, const std::string &what, const std::string &spec, int64_t seed,
                   const c10::optional<at::Tensor> &related) {
  initialise(value, what, [&](const scanforge::Tensor &r) {
    Generator gen(static_cast<uint64_t>(seed));
    std::optional<scanforge::Tensor> other;
    if (related && related->defined()) other = runtimeTensor(*related, what + " (related)");
    models::initParameter(r, specOf(spec), what, gen, other ? &*other : nullptr);
  });
}

void initGateBias(const at::Tensor &bias, const std::string &what, const std::string &spec, int64_t fanIn, int64_t seed) {
  initialise(bias, what, [&](const scanforge::Tensor &r) {
    Generator gen(static_cast<uint64_t>(seed));
    models::initGateBias(r, specOf(spec), fanIn, what, gen);
  });
}

std::string defaultParameterInit(const std::string &name) {
  config::InitSpec spec = models::defaultParameterInit(name);
  return nlohmann::json{{"kind", spec.kind}, {"args", spec.args}}.dump();
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(scanforge, m) {
  m.def("init_parameter_(Tensor(a!) value, str what, str spec, int seed, Tensor? related) -> ()", &initParameter);
  m.def("init_gate_bias_(Tensor(a!) bias, str what, str spec, int fan_in, int seed) -> ()", &initGateBias);
  m.def("default_parameter_init(str name) -> str", &defaultParameterInit);
}

}  // namespace scanforge::torchext
