// The recurrences the Python package has loaded, each under a string key that the ops take (a
// string keeps the ops functional: no opaque object crosses the dispatcher, so torch.compile can
// trace them). A .scan file is compiled once per content, and its signature comes from the
// compiler's Ports analysis (Recurrence::signature); a kernel package's comes from its manifest.
#pragma once

#include <ATen/ATen.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "compiler/api/Scanforge.h"  // Signature and Port: plain structs, no compiler code
#include "runtime/cuda/KernelPackage.h"
#if SCANFORGE_TORCH_COMPILER
#include "compiler/api/CompiledModule.h"
#endif

namespace scanforge::torchext {

struct Loaded {
  std::string key;
  Signature signature;
#if SCANFORGE_TORCH_COMPILER
  std::optional<CompiledModule> module;  // a .scan file: its CPU backend and float64 reference
  std::optional<Recurrence> cpu;
  // Its parameters were checked at a call on the device (checkParameters: the first one only).
  mutable std::atomic<bool> deviceParametersChecked{false};
#endif
  // The CUDA kernels: the kernel package's, or the compiled module's, emitted on first use.
  const cuda::KernelPackage &kernels() const;

  mutable std::shared_ptr<const cuda::KernelPackage> package;  // set once, by load or kernels()

 private:
  mutable std::once_flag kernelsOnce_;
};

// Compiles `path` (or reuses the module compiled from the same content) and returns the key of
// its recurrence `recurrence` ("": the file's only one); with `transitions`, its slice transition
// (CompileOptions::transitions, for context parallelism). ValueError with the diagnostics; in a
// build without the compiler, ValueError pointing to load_package.
std::string loadScan(const std::string &path, const std::string &recurrence, bool transitions);
// The API's warnings (Scanforge.h, setWarningHandler) given on this thread since the last call, in
// order (the Python package turns each into a UserWarning); none in a build without the compiler.
std::vector<std::string> takeWarnings();
// The first call of a recurrence on the device checks what the CPU programs check of its
// parameters (a state's decay above 1, docs/dsl.md), on host copies of the parameters checked
// (takeWarnings gives the warning). Only the first: a copy to the host waits for the device, which
// at every call would stall each training step. Nothing for a kernel package or in a build
// without the compiler.
void checkParameters(const Loaded &rec, at::TensorList params);
// Reads the kernel package in `dir` and returns the key of its forward recurrence `recurrence`
// ("": the package's only forward one).
std::string loadPackage(const std::string &dir, const std::string &recurrence);
// Registers a loaded recurrence under its key (an entry already there wins) and returns the key.
std::string add(std::unique_ptr<Loaded> loaded);
// The loaded recurrence; ValueError for a key never returned by loadScan or loadPackage.
const Loaded &lookup(const std::string &key);
// The signature as JSON: {"name", "reverse", "inputs"/"params"/"states"/"outputs": [{"name", "dims", "dtype"}]}.
std::string signatureJson(const std::string &key);

}  // namespace scanforge::torchext
