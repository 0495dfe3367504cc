// Runs hand-written CUDA source on the concurrent emulator: buffers in, one launch, buffers out.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/cuda/CudaError.h"
#include "tools/gpu/emulator/EmulatedBackend.h"

namespace scanforge::test {

inline gpu::EmulatorOptions emulatorOptions(uint64_t seed = 1, unsigned residentBlocks = 0) {
  gpu::EmulatorOptions o;
  o.seed = seed;
  o.residentBlocks = residentBlocks;
  o.cacheDir = SCANFORGE_EMULATION_CACHE;
  return o;
}

// One kernel of `source` taking device buffers (in order) and then int arguments.
struct KernelRun {
  gpu::EmulatedBackend device;
  std::unique_ptr<cuda::LoadedModule> module;
  std::string kernel;
  std::vector<cuda::DeviceBuffer> buffers;

  KernelRun(const std::string &source, const std::string &kernelName, size_t arity, gpu::EmulatorOptions options = emulatorOptions())
      : device(std::move(options)), kernel(kernelName) {
    module = device.load({"test.cu", source, {}, {{kernelName, arity}}});
  }
  template <typename T>
  size_t buffer(const std::vector<T> &values) {
    buffers.emplace_back(device, values.size() * sizeof(T));
    device.upload(buffers.back().get(), values.data(), values.size() * sizeof(T));
    return buffers.size() - 1;
  }
  template <typename T>
  std::vector<T> read(size_t index, size_t count) {
    std::vector<T> out(count);
    device.download(out.data(), buffers[index].get(), count * sizeof(T));
    return out;
  }
  // Launches with every buffer, then `ints`; returns the emulator's error ("" when it ran clean).
  std::string launch(unsigned grid, unsigned block, std::vector<int> ints = {}, size_t sharedBytes = 0) {
    std::vector<cuda::DevicePtr> ptrs;
    for (cuda::DeviceBuffer &b : buffers) ptrs.push_back(b.get());
    std::vector<void *> args;
    for (cuda::DevicePtr &p : ptrs) args.push_back(&p);
    for (int &i : ints) args.push_back(&i);
    cuda::LaunchConfig config;
    config.grid[0] = grid;
    config.block = block;
    config.sharedBytes = sharedBytes;
    try {
      module->launch(kernel, config, args.data(), 0);
    } catch (const cuda::CudaError &e) {
      return e.what();
    }
    return "";
  }
};

}  // namespace scanforge::test
