// A cuda::DeviceBackend that runs CUDA kernels on the CPU under the concurrent emulator
// (Launch.h): the runtime's launches, the same kernel sources, no GPU. Every launch is checked
// for races, out-of-bounds accesses, divergent collectives and deadlocks (a CudaError names the
// kernel, block, thread and line), and its memory traffic is recorded per instruction.
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cuda/DeviceBackend.h"
#include "runtime/cuda/DeviceSpec.h"
#include "tools/gpu/emulator/DeviceMemory.h"
#include "tools/gpu/emulator/KernelLibrary.h"
#include "tools/gpu/emulator/Launch.h"
#include "tools/gpu/emulator/Traffic.h"

namespace scanforge::gpu {

struct EmulatorOptions {
  uint64_t seed = 1;            // block order and interleaving
  unsigned residentBlocks = 0;  // blocks resident at once; 0: the kernel's occupancy of one H100 SM
  bool detectRaces = true;
  bool recordTraffic = true;
  int64_t maxGridYZ = 65535;  // a smaller grid limit lets tests slice small batches
  // Run only this block (x, y, z) of every launch, the others as if they did nothing: address tests
  // of grids too large to emulate whole.
  std::optional<std::array<unsigned, 3>> onlyBlock;
  std::filesystem::path cacheDir;  // compiled kernel libraries
  // The host compiler and extra flags: by default, the compiler this build used, with its
  // undefined-behaviour sanitizer if it had one.
  std::string compiler = defaultCompiler();
  std::string flags = defaultFlags();
  // Run in front of the compiler (the build's launcher, ccache where it has one): a fresh build
  // tree, such as CI's clean clone, then reuses kernel objects compiled before.
  std::string launcher = defaultLauncher();

  static std::string defaultCompiler();
  static std::string defaultFlags();
  static std::string defaultLauncher();
};

class EmulatedBackend : public cuda::DeviceBackend {
 public:
  explicit EmulatedBackend(EmulatorOptions options);
  ~EmulatedBackend() override;

  std::string describe() const override { return "CPU emulation (concurrent)"; }
  int multiprocessors() const override { return 132; }  // plans as for an H100
  size_t sharedBytesPerBlock() const override { return cuda::h100().sharedPerBlock; }  // with the opt-in, as CudaBackend
  int64_t maxGridYZ() const override { return options_.maxGridYZ; }
  cuda::DevicePtr allocate(size_t bytes) override { return memory_.allocate(bytes); }
  // Memory whose pages the host commits only where a launch touches them (not zeroed).
  cuda::DevicePtr allocateUntouched(size_t bytes) { return memory_.allocate(bytes, false); }
  void release(cuda::DevicePtr ptr) noexcept override { memory_.release(ptr); }
  void zero(cuda::DevicePtr ptr, size_t bytes, cuda::Stream stream) override;
  void upload(cuda::DevicePtr dst, const void *src, size_t bytes) override;
  void download(void *dst, cuda::DevicePtr src, size_t bytes) override;
  void synchronize(cuda::Stream) override {}
  std::unique_ptr<cuda::LoadedModule> load(const cuda::ModuleSource &module) override;

  EmulatorOptions &options() { return options_; }
  // Per kernel, what its launches since the last clearTraffic() moved, by source line.
  std::vector<KernelTraffic> traffic() const;
  void clearTraffic() { kernels_.clear(); }

 private:
  friend class EmulatedModule;
  struct KernelRecord {
    std::shared_ptr<const KernelLibrary> library;
    uint64_t launches = 0, blocks = 0, threads = 0;
    std::map<uintptr_t, PcTraffic> byPc;
  };

  EmulatorOptions options_;
  DeviceMemory memory_;
  FiberPool fibers_;
  uint64_t launches_ = 0;
  std::map<std::string, KernelRecord> kernels_;
};

}  // namespace scanforge::gpu
