#include "compiler/mlir/Target/Cuda/Prelude.h"

#include <cstdio>

#include "compiler/mlir/Dialect/Scan/IR/Numerics.h"

namespace scanforge::cuda {

namespace {

std::string floatLiteral(float x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9gf", static_cast<double>(x));  // 9 digits: the float itself
  return text;
}

}  // namespace

std::string cudaPrelude() {
  return R"(// ---- scanforge prelude ----
typedef unsigned short sf_bf16;  // the bits of a __nv_bfloat16

__device__ __forceinline__ float sf_ld(const float *p, long long i) { return p[i]; }
__device__ __forceinline__ float sf_ld(const sf_bf16 *p, long long i) {
  return __uint_as_float(static_cast<unsigned>(p[i]) << 16);
}
// float -> bfloat16, rounding to nearest even; NaN stays a (quiet) NaN.
__device__ __forceinline__ sf_bf16 sf_bf16_bits(float x) {
  unsigned u = __float_as_uint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<sf_bf16>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<sf_bf16>(u >> 16);
}
__device__ __forceinline__ void sf_st(float *p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void sf_st(sf_bf16 *p, long long i, float v) { p[i] = sf_bf16_bits(v); }

// The language's exp: the argument clamped so that the result is normal and finite; NaN stays NaN.
__device__ __forceinline__ float sf_exp(float x) {
  return x != x ? x : expf(fminf(fmaxf(x, )" + floatLiteral(scan::kExpArgMin) + R"(), )" +
         floatLiteral(scan::kExpArgMax) + R"());
}
// Overflow-safe: exp is only ever taken of a non-positive number.
__device__ __forceinline__ float sf_sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
  const float e = expf(x);
  return e / (1.0f + e);
}
__device__ __forceinline__ float sf_softplus(float x) {
  return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));
}
__device__ __forceinline__ float sf_g(float x) { return x >= 0.0f ? x + 0.5f : sf_sigmoid(x); }
// NaN-propagating, like arith.maximumf / arith.minimumf.
__device__ __forceinline__ float sf_maximum(float x, float y) {
  return (x != x || y != y) ? __int_as_float(0x7fc00000) : fmaxf(x, y);
}
__device__ __forceinline__ float sf_minimum(float x, float y) {
  return (x != x || y != y) ? __int_as_float(0x7fc00000) : fminf(x, y);
}
__device__ __forceinline__ int sf_min(int a, int b) { return a < b ? a : b; }

// Adds every lane's v to *p (the same address in all 32 lanes, which all call this): a warp
// reduction in registers, then one atomic per warp instead of 32 on one address.
__device__ __forceinline__ void sf_atomic_add_warp(float *p, float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if ((threadIdx.x & 31u) == 0u) atomicAdd(p, v);
}
// ---- end of prelude ----
)";
}

}  // namespace scanforge::cuda
