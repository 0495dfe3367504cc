// Compiles CUDA kernels as host C++ for the concurrent emulator (tools/gpu/emulator): the CUDA
// keywords, types and built-ins, each defined by what the emulator does for the running thread.
//
// The library is compiled with -fsanitize=thread, but no TSan runtime is linked: the
// instrumentation's callbacks below hand every load and store, with its address, width and
// program counter, to the emulator (race detection, bounds checks, traffic). Functions that
// need the caller's program counter are noinline, so that __builtin_return_address(0) points into
// the kernel; loads and stores of helpers are always_inline, so that a load is attributed to the
// kernel line that wrote it.
#pragma once

#include <cmath>
#include <cstring>
#include <math.h>

#include "EmulationAbi.h"

#define SF_EMU_UNINSTRUMENTED __attribute__((no_sanitize_thread))
#define SF_EMU_CALL __attribute__((noinline, no_sanitize_thread))
#define SF_EMU_PC __builtin_return_address(0)

extern "C" {
__attribute__((visibility("default"))) SfEmuHooks *sf_emu_hooks = nullptr;
__attribute__((visibility("default"))) const SfEmuThread *sf_emu_thread = nullptr;

// ---- -fsanitize=thread callbacks ----
#define SF_EMU_ACCESS(name, size, kind) \
  SF_EMU_CALL void name(void *p) { sf_emu_hooks->access(p, size, kind, SF_EMU_PC); }
#define SF_EMU_ACCESS_SIZES(prefix, kind) \
  SF_EMU_ACCESS(prefix##1, 1, kind)       \
  SF_EMU_ACCESS(prefix##2, 2, kind)       \
  SF_EMU_ACCESS(prefix##4, 4, kind)       \
  SF_EMU_ACCESS(prefix##8, 8, kind)       \
  SF_EMU_ACCESS(prefix##16, 16, kind)
SF_EMU_ACCESS_SIZES(__tsan_read, kSfEmuRead)
SF_EMU_ACCESS_SIZES(__tsan_write, kSfEmuWrite)
SF_EMU_ACCESS_SIZES(__tsan_unaligned_read, kSfEmuRead)
SF_EMU_ACCESS_SIZES(__tsan_unaligned_write, kSfEmuWrite)
SF_EMU_ACCESS_SIZES(__tsan_volatile_read, kSfEmuVolatileRead)
SF_EMU_ACCESS_SIZES(__tsan_volatile_write, kSfEmuVolatileWrite)
#undef SF_EMU_ACCESS_SIZES
#undef SF_EMU_ACCESS
SF_EMU_CALL void __tsan_read_range(void *p, unsigned long size) {
  sf_emu_hooks->access(p, static_cast<unsigned>(size), kSfEmuRead, SF_EMU_PC);
}
SF_EMU_CALL void __tsan_write_range(void *p, unsigned long size) {
  sf_emu_hooks->access(p, static_cast<unsigned>(size), kSfEmuWrite, SF_EMU_PC);
}
SF_EMU_UNINSTRUMENTED void __tsan_func_entry(void *) {}
SF_EMU_UNINSTRUMENTED void __tsan_func_exit() {}
SF_EMU_UNINSTRUMENTED void __tsan_init() {}
}

// ---- keywords ----
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
// The emulator rewrites `[extern] __shared__ T name[...];` declarations on their own line (see
// KernelLibrary.cpp); any other use stops the build here.
#define __shared__ __shared___must_be_declared_on_its_own_line_for_the_emulator

#define threadIdx (sf_emu_thread->threadIdx)
#define blockIdx (sf_emu_thread->blockIdx)
#define blockDim (sf_emu_thread->blockDim)
#define gridDim (sf_emu_thread->gridDim)
constexpr int warpSize = 32;

SF_EMU_CALL void *sf_emu_dynamic_shared() { return sf_emu_hooks->dynamicShared(); }
SF_EMU_CALL void *sf_emu_static_shared(unsigned id, size_t bytes, size_t align) {
  return sf_emu_hooks->staticShared(id, bytes, align);
}

// ---- vector types ----
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }

// ---- bit casts and fast math ----
template <typename To, typename From>
inline To sf_emu_bit_cast(From x) {
  To y;
  std::memcpy(&y, &x, sizeof y);
  return y;
}
inline unsigned __float_as_uint(float x) { return sf_emu_bit_cast<unsigned>(x); }
inline float __uint_as_float(unsigned u) { return sf_emu_bit_cast<float>(u); }
inline int __float_as_int(float x) { return sf_emu_bit_cast<int>(x); }
inline float __int_as_float(int i) { return sf_emu_bit_cast<float>(i); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
// y moved by `ulps` ulp in a direction fixed by x's bits: an approximation's documented error,
// deterministic, as on the hardware, and not all falling one way. Infinities and zeros stay.
inline float sf_emu_off_by_ulps(float y, float x, int ulps) {
  if (!std::isfinite(y) || y == 0.0f) return y;
  const float toward = (__float_as_uint(x) * 0x9e3779b1u) >> 31 ? INFINITY : 0.0f;
  for (int i = 0; i < ulps; ++i) y = std::nextafter(y, toward);
  return y;
}
// The prelude's MUFU.RCP (inline PTX on a GPU), with the error PTX documents for rcp.approx.f32
// (1 ulp).
inline float sf_rcp_approx(float x) { return sf_emu_off_by_ulps(1.0f / x, x, 1); }
// The prelude's MUFU.EX2 (ex2.approx.ftz.f32), with the error CUDA documents for exp2f, which
// compiles to it (2 ulp); a result below the smallest normal float flushes to 0, as ftz does.
inline float sf_exp2_approx(float x) {
  const float y = sf_emu_off_by_ulps(std::exp2(x), x, 2);
  return y < 1.17549435e-38f ? 0.0f : y;
}

// ---- cache-hinted loads and stores: plain accesses here ----
#define SF_EMU_LOAD(name) \
  template <typename T>   \
  __forceinline__ T name(const T *p) { return *p; }
#define SF_EMU_STORE(name) \
  template <typename T>    \
  __forceinline__ void name(T *p, T v) { *p = v; }
SF_EMU_LOAD(__ldg)
SF_EMU_LOAD(__ldca)
SF_EMU_LOAD(__ldcg)
SF_EMU_LOAD(__ldcs)
SF_EMU_LOAD(__ldlu)
SF_EMU_LOAD(__ldcv)
SF_EMU_STORE(__stwb)
SF_EMU_STORE(__stcg)
SF_EMU_STORE(__stcs)
SF_EMU_STORE(__stwt)
#undef SF_EMU_LOAD
#undef SF_EMU_STORE

// ---- synchronisation ----
SF_EMU_CALL void __syncthreads() { sf_emu_hooks->syncthreads(SF_EMU_PC); }
SF_EMU_CALL void __threadfence() { sf_emu_hooks->threadfence(SF_EMU_PC); }
SF_EMU_CALL void __threadfence_block() { sf_emu_hooks->threadfence(SF_EMU_PC); }
SF_EMU_CALL void __syncwarp(unsigned mask = 0xffffffffu) {
  sf_emu_hooks->collective(kSfEmuSyncWarp, mask, 0, 0, 32, SF_EMU_PC);
}

template <typename T>
inline uint64_t sf_emu_bits(T v) {
  static_assert(sizeof(T) <= 8, "warp shuffles move at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  return bits;
}
template <typename T>
inline T sf_emu_from_bits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
#define SF_EMU_SHUFFLE(name, op)                                                                    \
  template <typename T>                                                                             \
  SF_EMU_CALL T name(unsigned mask, T value, int argument, int width = 32) {                       \
    return sf_emu_from_bits<T>(                                                                     \
        sf_emu_hooks->collective(op, mask, sf_emu_bits(value), argument, static_cast<unsigned>(width), SF_EMU_PC)); \
  }
SF_EMU_SHUFFLE(__shfl_sync, kSfEmuShflIdx)
SF_EMU_SHUFFLE(__shfl_xor_sync, kSfEmuShflXor)
SF_EMU_SHUFFLE(__shfl_up_sync, kSfEmuShflUp)
SF_EMU_SHUFFLE(__shfl_down_sync, kSfEmuShflDown)
#undef SF_EMU_SHUFFLE
SF_EMU_CALL unsigned __ballot_sync(unsigned mask, int predicate) {
  return static_cast<unsigned>(sf_emu_hooks->collective(kSfEmuBallot, mask, predicate != 0, 0, 32, SF_EMU_PC));
}
SF_EMU_CALL int __any_sync(unsigned mask, int predicate) {
  return static_cast<int>(sf_emu_hooks->collective(kSfEmuAny, mask, predicate != 0, 0, 32, SF_EMU_PC));
}
SF_EMU_CALL int __all_sync(unsigned mask, int predicate) {
  return static_cast<int>(sf_emu_hooks->collective(kSfEmuAll, mask, predicate != 0, 0, 32, SF_EMU_PC));
}

// ---- atomics: announced to the emulator (which may switch threads there), then done in place;
// the emulator runs one thread at a time, so nothing interleaves with the read-modify-write ----
#define SF_EMU_ATOMIC(name, T, expr)                                \
  SF_EMU_CALL T name(T *p, T v) {                                   \
    sf_emu_hooks->access(p, sizeof(T), kSfEmuAtomic, SF_EMU_PC);    \
    T old = *p;                                                     \
    *p = (expr);                                                    \
    return old;                                                     \
  }
#define SF_EMU_ATOMIC_INTEGERS(name, expr)          \
  SF_EMU_ATOMIC(name, int, expr)                    \
  SF_EMU_ATOMIC(name, unsigned, expr)               \
  SF_EMU_ATOMIC(name, unsigned long long, expr)
SF_EMU_ATOMIC_INTEGERS(atomicAdd, old + v)
SF_EMU_ATOMIC_INTEGERS(atomicSub, old - v)
SF_EMU_ATOMIC_INTEGERS(atomicExch, v)
SF_EMU_ATOMIC_INTEGERS(atomicMax, old > v ? old : v)
SF_EMU_ATOMIC_INTEGERS(atomicMin, old < v ? old : v)
SF_EMU_ATOMIC_INTEGERS(atomicOr, old | v)
SF_EMU_ATOMIC_INTEGERS(atomicAnd, old & v)
SF_EMU_ATOMIC(atomicAdd, float, old + v)
SF_EMU_ATOMIC(atomicAdd, double, old + v)
SF_EMU_ATOMIC(atomicExch, float, v)
#undef SF_EMU_ATOMIC_INTEGERS
#undef SF_EMU_ATOMIC
#define SF_EMU_ATOMIC_CAS(T)                                        \
  SF_EMU_CALL T atomicCAS(T *p, T compare, T v) {                   \
    sf_emu_hooks->access(p, sizeof(T), kSfEmuAtomic, SF_EMU_PC);    \
    T old = *p;                                                     \
    if (old == compare) *p = v;                                     \
    return old;                                                     \
  }
SF_EMU_ATOMIC_CAS(int)
SF_EMU_ATOMIC_CAS(unsigned)
SF_EMU_ATOMIC_CAS(unsigned long long)
#undef SF_EMU_ATOMIC_CAS

// A kernel argument from cuLaunchKernel's array of pointers to values, whatever its type (read
// from host memory, so not instrumented).
struct SfEmuArg {
  void *value;
  template <typename T>
  SF_EMU_UNINSTRUMENTED operator T() const {
    T v;
    std::memcpy(&v, value, sizeof v);
    return v;
  }
};
