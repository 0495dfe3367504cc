#include "tools/gpu/model/Occupancy.h"

#include <algorithm>
#include <stdexcept>

namespace scanforge::gpu {

Occupancy occupancy(const DeviceSpec &d, const KernelResources &k) {
  if (k.threadsPerBlock == 0 || k.threadsPerBlock > 1024)
    throw std::invalid_argument("a block of " + std::to_string(k.threadsPerBlock) + " threads (1 to 1024)");
  if (k.registersPerThread > d.maxRegistersPerThread)
    throw std::invalid_argument(std::to_string(k.registersPerThread) + " registers per thread (" + d.arch + " allows " +
                                std::to_string(d.maxRegistersPerThread) + ")");
  if (k.sharedBytesPerBlock > d.sharedPerBlock)
    throw std::invalid_argument(std::to_string(k.sharedBytesPerBlock) + " bytes of shared memory per block (" + d.arch +
                                " allows " + std::to_string(d.sharedPerBlock) + ")");
  unsigned warps = (k.threadsPerBlock + 31) / 32;
  Occupancy o;
  o.byThreads = d.threadsPerSm / (warps * 32);
  o.byBlocks = d.blocksPerSm;
  o.byRegisters = d.blocksPerSm;
  if (k.registersPerThread) {
    // Registers go to warps in whole units: 56 registers x 32 lanes = 1792 = 7 units of 256.
    unsigned perWarp = (k.registersPerThread * 32 + d.registerUnit - 1) / d.registerUnit * d.registerUnit;
    o.byRegisters = d.registersPerSm / perWarp / warps;
  }
  o.byShared = d.blocksBySharedMemory(k.sharedBytesPerBlock);
  o.blocksPerSm = std::min({o.byThreads, o.byBlocks, o.byRegisters, o.byShared});
  if (o.blocksPerSm == 0)
    throw std::invalid_argument("a block of " + std::to_string(k.threadsPerBlock) + " threads with " +
                                std::to_string(k.registersPerThread) + " registers each does not fit one SM's " +
                                std::to_string(d.registersPerSm) + " registers");
  o.limitedBy = o.blocksPerSm == o.byThreads     ? "threads"
                : o.blocksPerSm == o.byRegisters ? "registers"
                : o.blocksPerSm == o.byShared    ? "shared memory"
                                                 : "blocks";
  return o;
}

}  // namespace scanforge::gpu
