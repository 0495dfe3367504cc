// The emulated GPU's global memory: host allocations aligned like cudaMalloc's, separated by
// guard bytes so that an access past the end of one never lands in the next, each with a race
// detector shadow made on first use within a launch.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "runtime/cuda/DeviceBackend.h"
#include "tools/gpu/emulator/RaceDetector.h"

namespace scanforge::gpu {

struct Allocation {
  uintptr_t begin = 0, end = 0;
  std::unique_ptr<std::byte[]> storage;
  std::unique_ptr<Shadow> shadow;
  Shadow &shadowed() {
    if (!shadow) shadow = std::make_unique<Shadow>(end - begin);
    return *shadow;
  }
};

class DeviceMemory {
 public:
  static constexpr size_t kAlignment = 256, kGuard = 1024;

  // Zero-filled like a fresh page; `zeroed` false leaves it untouched, so that the host commits only
  // the pages a launch touches (address tests of buffers larger than the host's memory).
  cuda::DevicePtr allocate(size_t bytes, bool zeroed = true);
  void release(cuda::DevicePtr ptr) noexcept;
  // The allocation holding [address, address + bytes), or null.
  Allocation *find(uintptr_t address);
  // "120 bytes past the end of a 4096-byte allocation at 0x..." for an address held by none.
  std::string describeStray(uintptr_t address, size_t bytes) const;
  // Throws CudaError unless [ptr, ptr + bytes) lies in one allocation.
  void checkRange(cuda::DevicePtr ptr, size_t bytes, const char *what) const;
  // Launches on a stream are ordered: what a finished launch did cannot race with the next.
  void forgetAccesses();

 private:
  std::map<uintptr_t, Allocation> allocations_;  // by begin
  Allocation *last_ = nullptr;
};

}  // namespace scanforge::gpu
