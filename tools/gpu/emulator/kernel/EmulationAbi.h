// The interface between a kernel library built by the emulator (CudaEmulation.h in front of the
// kernel source) and the emulator that runs it: what the running CUDA thread looks like, and the
// emulator's entry points the library calls. Plain C types: both sides are built separately.
#pragma once

#include <cstddef>
#include <cstdint>

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// The CUDA thread the library runs right now (the emulator switches it with every fiber).
struct SfEmuThread {
  dim3 gridDim, blockDim, blockIdx, threadIdx;
};

// How a memory access reached the emulator.
enum SfEmuAccessKind : unsigned {
  kSfEmuRead = 0,
  kSfEmuWrite = 1,
  kSfEmuVolatileRead = 2,
  kSfEmuVolatileWrite = 3,
  kSfEmuAtomic = 4,  // a read-modify-write by an atomic*() function
};

// Warp-wide operations: each lane of `mask` contributes a 64-bit value; the emulator computes
// every lane's result when all of them have arrived.
enum SfEmuCollective : unsigned {
  kSfEmuSyncWarp,
  kSfEmuShflIdx,
  kSfEmuShflXor,
  kSfEmuShflUp,
  kSfEmuShflDown,
  kSfEmuBallot,
  kSfEmuAny,
  kSfEmuAll,
};

struct SfEmuHooks {
  // Every load and store of the kernel (the library is compiled with -fsanitize=thread, whose
  // callbacks land here); `pc` is the return address into the kernel.
  void (*access)(const void *address, unsigned size, unsigned kind, const void *pc);
  void (*syncthreads)(const void *pc);
  uint64_t (*collective)(unsigned op, unsigned mask, uint64_t value, int argument, unsigned width, const void *pc);
  void (*threadfence)(const void *pc);
  void *(*dynamicShared)();
  void *(*staticShared)(unsigned id, size_t bytes, size_t align);
};
