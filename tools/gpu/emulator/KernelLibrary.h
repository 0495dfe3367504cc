// One CUDA module built for the concurrent emulator: the kernel source compiled as host C++ with
// kernel/CudaEmulation.h in front, instrumented (-fsanitize=thread callbacks, no TSan runtime),
// into a shared library cached by content hash; loaded with one entry point per kernel.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cuda/DeviceBackend.h"
#include "tools/gpu/emulator/kernel/EmulationAbi.h"

namespace scanforge::gpu {

struct BuildOptions {
  std::filesystem::path cacheDir;
  std::string compiler;
  std::string flags;  // extra flags for compiling and linking, e.g. "-fsanitize=undefined"
  std::string launcher;  // in front of the compile command (ccache), not part of the cache key
};

class KernelLibrary {
 public:
  using Entry = void (*)(void **args);

  static std::unique_ptr<KernelLibrary> build(const cuda::ModuleSource &module, const BuildOptions &options);
  ~KernelLibrary();

  const std::string &name() const { return name_; }
  Entry entry(const std::string &kernel) const;
  void setHooks(SfEmuHooks *hooks) const { *hooksSlot_ = hooks; }
  void setThread(const SfEmuThread *thread) const { *threadSlot_ = thread; }
  // Static data of the library (constant tables, the slots above): accessible to kernels.
  bool holds(const void *address) const;
  // A program counter as an offset into the library, and "file.cu:LINE" for such offsets.
  uint32_t offsetOf(const void *pc) const;
  std::string site(uint32_t offset) const;
  std::map<uint32_t, std::string> sites(const std::vector<uint32_t> &offsets) const;

 private:
  KernelLibrary() = default;

  std::string name_;
  std::filesystem::path path_;
  void *handle_ = nullptr;
  uintptr_t base_ = 0;
  std::vector<std::pair<uintptr_t, uintptr_t>> segments_;
  std::map<std::string, Entry> entries_;
  SfEmuHooks **hooksSlot_ = nullptr;
  const SfEmuThread **threadSlot_ = nullptr;
  mutable std::map<uint32_t, std::string> siteCache_;
};

// `[extern] __shared__ T name[N];` declarations rewritten for the emulator, line for line.
std::string rewriteSharedDeclarations(const std::string &source, const std::string &file);

}  // namespace scanforge::gpu
