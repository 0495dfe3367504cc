#include "python/csrc/Registry.h"

#include <c10/util/Exception.h>

#include <map>
#include <nlohmann/json.hpp>

#include "runtime/cuda/CudaError.h"
#if SCANFORGE_TORCH_COMPILER
#include "compiler/api/CompiledModuleImpl.h"
#include "compiler/mlir/Target/Cuda/CudaEmitter.h"
#endif

namespace scanforge::torchext {

namespace {

std::mutex registryMutex;
std::map<std::string, std::unique_ptr<Loaded>> registry;  // by key; never removed (ops hold keys)

nlohmann::json portsJson(const std::vector<Port> &ports) {
  nlohmann::json out = nlohmann::json::array();
  for (const Port &p : ports)
    out.push_back({{"name", p.name}, {"dims", p.dims}, {"dtype", p.type == ElemType::BF16 ? "bfloat16" : "float32"}});
  return out;
}

// A package recurrence's ports, from its buffers (docs/cuda.md: inputs [$B, $T, dims...], params
// [dims...], initial states "<state>.initial" [$B, dims...], outputs like inputs).
Signature packageSignature(const cuda::RecurrenceDesc &rec) {
  Signature sig;
  sig.name = rec.name;
  sig.reverse = rec.reverse;
  for (const cuda::BufferDesc &b : rec.buffers) {
    auto port = [&](size_t lead, std::string name) {
      return Port{std::move(name), std::vector<std::string>(b.shape.begin() + static_cast<long>(lead), b.shape.end()),
                  b.dtype == "bf16" ? ElemType::BF16 : ElemType::F32};
    };
    const std::string suffix = cuda::initialOf("");
    switch (b.role) {
      case cuda::BufferRole::Input: sig.inputs.push_back(port(2, b.name)); break;
      case cuda::BufferRole::Param: sig.params.push_back(port(0, b.name)); break;
      case cuda::BufferRole::Output: sig.outputs.push_back(port(2, b.name)); break;
      case cuda::BufferRole::InitialState:
        sig.states.push_back(port(1, b.name.substr(0, b.name.size() - suffix.size())));
        break;
      default: break;
    }
  }
  return sig;
}

}  // namespace

const cuda::KernelPackage &Loaded::kernels() const {
#if SCANFORGE_TORCH_COMPILER
  std::call_once(kernelsOnce_, [this] {
    if (package) return;
    std::string errors;
    llvm::raw_string_ostream os(errors);
    try {
      mlir::FailureOr<cuda::KernelPackage> kernels = cuda::kernelPackage(module->impl().cudaKernels(), os);
      if (mlir::succeeded(kernels)) {
        package = std::make_shared<const cuda::KernelPackage>(std::move(*kernels));
        return;
      }
    } catch (const CompileError &e) {
      errors = e.what();
    }
    C10_THROW_ERROR(ValueError, "scanforge " + signature.name + ": the CUDA backend cannot compile it: " + errors);
  });
#endif
  return *package;
}

std::string loadPackage(const std::string &dir, const std::string &recurrence) {
  try {
    auto package = std::make_shared<const cuda::KernelPackage>(cuda::KernelPackage::load(dir));
    std::vector<const cuda::RecurrenceDesc *> forwards;
    std::string names;
    for (const cuda::RecurrenceDesc &r : package->recurrences())
      if (r.adjointOf.empty() && (recurrence.empty() || r.name == recurrence)) forwards.push_back(&r);
    for (const cuda::RecurrenceDesc &r : package->recurrences())
      if (r.adjointOf.empty()) names += (names.empty() ? "" : ", ") + r.name;
    if (forwards.size() != 1)
      C10_THROW_ERROR(ValueError, "scanforge.load_package('" + dir + "'): " +
                                      (recurrence.empty() ? "name one recurrence" : "no recurrence '" + recurrence + "'") +
                                      "; its forward recurrences: " + names);
    auto loaded = std::make_unique<Loaded>();
    loaded->key = "package:" + dir + "#" + forwards[0]->name;
    loaded->signature = packageSignature(*forwards[0]);
    loaded->package = std::move(package);
    return add(std::move(loaded));
  } catch (const cuda::CudaError &e) {
    C10_THROW_ERROR(ValueError, "scanforge.load_package('" + dir + "'): " + e.what());
  }
}

std::string add(std::unique_ptr<Loaded> loaded) {
  std::lock_guard<std::mutex> lock(registryMutex);
  std::string key = loaded->key;
  registry.emplace(key, std::move(loaded));
  return key;
}

const Loaded &lookup(const std::string &key) {
  std::lock_guard<std::mutex> lock(registryMutex);
  auto it = registry.find(key);
  if (it == registry.end())
    C10_THROW_ERROR(ValueError, "scanforge: no loaded recurrence has the key '" + key + "' (keys come from scanforge.load)");
  return *it->second;
}

std::string signatureJson(const std::string &key) {
  const Signature &sig = lookup(key).signature;
  nlohmann::json j = {{"name", sig.name},
                      {"reverse", sig.reverse},
                      {"inputs", portsJson(sig.inputs)},
                      {"params", portsJson(sig.params)},
                      {"states", portsJson(sig.states)},
                      {"outputs", portsJson(sig.outputs)}};
  return j.dump();
}

}  // namespace scanforge::torchext
