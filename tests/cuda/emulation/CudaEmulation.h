// Compiles generated CUDA kernels as ordinary host C++ (see EmulatedBackend.h): the CUDA keywords
// and built-ins the kernels use, defined for one emulated thread per host call.
//
// threadIdx/blockIdx/blockDim/gridDim are per host thread. Shared memory is one array that all
// lanes of a block use (each lane its own slice, as on a GPU). __shfl_xor_sync exchanges values
// with the other lanes of the warp, which the host runs concurrently, through the host's warp.
#pragma once

#include <atomic>
#include <cmath>
#include <cstring>
#include <math.h>

#include "EmulationAbi.h"

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__

inline thread_local dim3 gridDim, blockDim, blockIdx, threadIdx;
inline thread_local const SfEmuThread *sf_emu_current = nullptr;

// Dynamic shared memory: 48 KiB, the most a launch may ask for without opting in.
constexpr unsigned kSfEmuSharedBytes = 48 * 1024;
float sf_smem[kSfEmuSharedBytes / sizeof(float)];

inline unsigned __float_as_uint(float x) {
  unsigned u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
inline float __uint_as_float(unsigned u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
inline float __int_as_float(int i) {
  float x;
  std::memcpy(&x, &i, sizeof x);
  return x;
}
inline float atomicAdd(float *address, float value) { return std::atomic_ref<float>(*address).fetch_add(value); }
inline float __shfl_xor_sync(unsigned, float value, int laneMask) {
  return sf_emu_current->shuffleXor(sf_emu_current->warp, threadIdx.x & 31u, value, laneMask);
}

// A kernel argument from cuLaunchKernel's array of pointers to values, whatever its type.
struct SfEmuArg {
  void *value;
  template <typename T>
  operator T() const {
    T v;
    std::memcpy(&v, value, sizeof v);
    return v;
  }
};

inline void sf_emu_enter(const SfEmuThread *t) {
  gridDim = t->gridDim;
  blockDim = t->blockDim;
  blockIdx = t->blockIdx;
  threadIdx = t->threadIdx;
  sf_emu_current = t;
}
