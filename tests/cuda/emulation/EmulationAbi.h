// What the host passes to one emulated CUDA thread (shared by EmulatedBackend and the kernel
// libraries it builds).
#pragma once

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};

struct SfEmuThread {
  dim3 gridDim, blockDim, blockIdx, threadIdx;
  void *warp;  // the host's state of this thread's warp
  float (*shuffleXor)(void *warp, unsigned lane, float value, int laneMask);
};

// The entry point of one kernel in an emulated library: runs one thread with cuLaunchKernel-style
// arguments.
using SfEmuEntry = void (*)(void **args, const SfEmuThread *thread);
