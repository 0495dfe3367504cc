// Resident blocks per SM from block size, registers and shared memory (the CUDA occupancy rules
// with a DeviceSpec's limits).
#pragma once

#include <cstddef>
#include <string>

#include "runtime/cuda/DeviceSpec.h"

namespace scanforge::gpu {

using cuda::DeviceSpec;
using cuda::deviceSpec;
using cuda::h100;

struct KernelResources {
  unsigned threadsPerBlock = 1;
  unsigned registersPerThread = 0;  // 0: unknown (no register limit)
  size_t sharedBytesPerBlock = 0;   // static + dynamic
};

struct Occupancy {
  unsigned blocksPerSm = 0;
  unsigned byThreads = 0, byBlocks = 0, byRegisters = 0, byShared = 0;
  const char *limitedBy = "";  // "threads", "blocks", "registers" or "shared memory"
  unsigned warpsPerSm(unsigned threadsPerBlock) const { return blocksPerSm * ((threadsPerBlock + 31) / 32); }
};

// Throws std::invalid_argument (naming the block size, registers or shared bytes) when the kernel
// cannot run at all: block of 0 or more than 1024 threads, too many registers or shared memory.
Occupancy occupancy(const DeviceSpec &device, const KernelResources &kernel);

}  // namespace scanforge::gpu
