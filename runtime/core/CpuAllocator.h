// CPU memory for tensors. Blocks of 1 MiB and more are recycled instead of returned to the system:
// a training step allocates the same large sizes every step, and each fresh block from the kernel
// costs page faults and zeroing on first touch (15-20% of a minGRU-sized step when measured).
// Freed large blocks wait in a cache keyed by exact size, up to kMaxCachedBytes in total.
#pragma once

#include <cstddef>

namespace scanforge {

inline constexpr size_t kMaxCachedBytes = size_t{4} << 30;

std::byte *allocateCpu(size_t bytes);              // 64-byte aligned
void releaseCpu(std::byte *block, size_t bytes);   // `bytes` as allocated
size_t cachedCpuBytes();                           // bytes held for reuse
void emptyCpuCache();                              // gives every cached block back to the system

}  // namespace scanforge
