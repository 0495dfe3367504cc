#include "compiler/mlir/Target/Cuda/Prelude.h"

#include <cstdio>

#include "compiler/mlir/Dialect/Scan/IR/Numerics.h"

namespace scanforge::cuda {

namespace {

std::string floatLiteral(float x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(x));  // 9 digits: the float itself
  std::string literal = text;
  if (literal.find_first_of(".e") == std::string::npos) literal += ".0";  // "2f" is not a literal
  return literal + "f";
}

// c0 x^n + c1 x^(n-1) + ... as nested fmaf calls, highest degree first.
template <size_t N>
std::string horner(const std::string &x, const float (&coefficients)[N]) {
  std::string p = floatLiteral(coefficients[0]);
  for (size_t i = 1; i < N; ++i) p = "fmaf(" + p + ", " + x + ", " + floatLiteral(coefficients[i]) + ")";
  return p;
}

}  // namespace

std::string cudaPrelude() {
  return R"(// ---- scanforge prelude ----
typedef unsigned short sf_bf16;  // the bits of a __nv_bfloat16

// bf16 bits -> float (exact), and a float widened from bf16 back to its bits (exact: its low 16
// bits are zero; what the stash keeps of a bf16 input).
__device__ __forceinline__ float sf_widen(sf_bf16 bits) { return __uint_as_float(static_cast<unsigned>(bits) << 16); }
__device__ __forceinline__ sf_bf16 sf_bf16_exact(float widened) { return static_cast<sf_bf16>(__float_as_uint(widened) >> 16); }
__device__ __forceinline__ float sf_ld(const float *p, long long i) { return p[i]; }
__device__ __forceinline__ float sf_ld(const sf_bf16 *p, long long i) { return sf_widen(p[i]); }
// float -> bfloat16, rounding to nearest even; NaN stays a (quiet) NaN. On sm_80 and later one
// conversion instruction (PTX cvt.rn.bf16.f32), before it integer code (and on the emulator).
__device__ __forceinline__ sf_bf16 sf_bf16_bits(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
#else
  unsigned u = __float_as_uint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<sf_bf16>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<sf_bf16>(u >> 16);
#endif
}
__device__ __forceinline__ void sf_st(float *p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void sf_st(sf_bf16 *p, long long i, float v) { p[i] = sf_bf16_bits(v); }

// 1/x by MUFU.RCP (PTX rcp.approx.ftz.f32: within 1 ulp), for denominators the caller knows to be
// in [1, 4]: no IEEE division with its slow-path call and branches. 2^x by MUFU.EX2 (PTX
// ex2.approx.ftz.f32, what exp2f compiles to: within 2 ulp; a result below 2^-126 flushes to 0).
// The exponential is NVVM's intrinsic, which NVVM merges where the same operand comes twice (two
// asm statements it never merges: minGRU's backward recompute walk ran 6 MUFU per step, 5 with
// it); the reciprocal stays inline PTX, since its intrinsic forms (__fdividef,
// __nvvm_div_approx_ftz_f) add a range check per division that costs more than the merges save
// (docs/cuda.md, Gate math). The emulator defines both on the host with those errors
// (tools/gpu/emulator/kernel/CudaEmulation.h).
#ifdef __CUDA_ARCH__
__device__ __forceinline__ float sf_rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float sf_exp2_approx(float x) { return __nvvm_ex2_approx_ftz_f(x); }
#endif
// e^x as 2^(x log2(e)) for the gates: two instructions where expf takes eight (its range
// reduction keeps it within 2 ulp). Rounding x log2(e) to a float adds a relative error of up to
// |x| 2^-24 to the result; a gate's e^-|x| passes it on as at most e^-|x| |x| 2^-24 <= 0.37 2^-24
// in absolute terms, except where the gate is e^-|x| itself (x < 0, a gate far below 1). Not for
// the language's exp: a decay's error compounds over the steps of a state
// (the selective SSM's A.grad under the emulator, MUFU.EX2 modelled 2 ulp off: 1.0e-5 relative with
// it, 1.5e-6 with expf, which the emulator takes from the host).
__device__ __forceinline__ float sf_exp_fast(float x) { return sf_exp2_approx(x * 1.44269504f); }
// The language's exp: the argument clamped so that the result is normal and finite; NaN stays NaN.
// expf runs whatever x is and the NaN is selected afterwards: with expf inside the condition,
// ptxas branched around it (a BSSY, a branch and a BSYNC per exponential).
__device__ __forceinline__ float sf_exp(float x) {
  const float e = expf(fminf(fmaxf(x, )" + floatLiteral(scan::kExpArgMin) + R"(), )" +
         floatLiteral(scan::kExpArgMax) + R"());
  return x != x ? x : e;
}
// Overflow-safe and branch-free: e = exp(-|x|) is in [0, 1], so 1 + e is in [1, 2]; the
// approximate reciprocal is capped at 1, so that a gate never exceeds 1.
__device__ __forceinline__ float sf_sigmoid(float x) {
  const float e = sf_exp_fast(-fabsf(x)), q = fminf(sf_rcp_approx(1.0f + e), 1.0f);
  return x >= 0.0f ? q : e * q;  // NaN: e is NaN
}
// log(1 + e) for e in [0, 1]: 2 atanh(s), s = e / (2 + e), by the polynomial the CPU backend uses.
__device__ __forceinline__ float sf_log1p_unit(float e) {
  const float s = e * sf_rcp_approx(2.0f + e), s2 = s * s;
  return s * ()" + horner("s2", scan::kLog1pAtanhSeries) + R"();
}
__device__ __forceinline__ float sf_softplus(float x) {
  return fmaxf(x, 0.0f) + sf_log1p_unit(sf_exp_fast(-fabsf(x)));  // NaN: the exp is NaN
}
// sigmoid(softplus(a) - softplus(b)) (minLSTM's gates, scan::softplusDifference) as one quotient,
// (1 + e^a) / ((1 + e^a) + (1 + e^b)) = pa / (pa + pb e^d) with pa = 1 + exp(-|a|) and pb = 1 +
// exp(-|b|) in [1, 2], d = max(b, 0) - max(a, 0): the larger scale divides out, exp(-|d|) <= 1 goes
// to the smaller side, and the denominator lies in [1, 4]. No logarithm, no cancellation; the CPU
// backend computes the same (compiler/halide/Math.cpp). NaN: pa or pb, so num or den, is NaN.
__device__ __forceinline__ float sf_sigmoid_softplus_difference(float a, float b) {
  const float pa = 1.0f + sf_exp_fast(-fabsf(a)), pb = 1.0f + sf_exp_fast(-fabsf(b));
  // e = exp(-|d|) written symmetrically in a and b (min - max), so that the complement's call
  // (b, a) is the same expression and the compiler computes the exponential once for both gates.
  const float ma = fmaxf(a, 0.0f), mb = fmaxf(b, 0.0f), e = sf_exp_fast(fminf(ma, mb) - fmaxf(ma, mb));
  // Each side scaled by 1 if its max is the larger, else by e (both at a tie, where e = 1, or NaN
  // for two infinities, as softplus(inf) - softplus(inf) is): the
  // complement's call computes the same two terms, exchanged, so its denominator is the same sum
  // and one reciprocal serves both gates. The sum is not contracted into an FMA (NVVM fused each
  // call's product into it differently, and the two denominators differed: 7 MUFU per minLSTM
  // step instead of 6).
  const float sa = pa * (ma > mb ? 1.0f : e), sb = pb * (mb > ma ? 1.0f : e);
  const float num = sa, den = __fadd_rn(sa, sb);
  // num / den from the approximate reciprocal and one correction (two FMAs, no division).
  const float r = sf_rcp_approx(den), q0 = num * r, q = fmaf(fmaf(-den, q0, num), r, q0);
  return q > 1.0f ? 1.0f : q;
}
// The sigmoid is computed for every x and then selected: written as `x >= 0 ? x + 0.5 : sigmoid(x)`,
// NVRTC branched around it (a BSSY/BSYNC region per step in minGRU's loops).
__device__ __forceinline__ float sf_g(float x) {
  const float s = sf_sigmoid(x);
  return x >= 0.0f ? x + 0.5f : s;
}
// NaN-propagating, like arith.maximumf / arith.minimumf.
__device__ __forceinline__ float sf_maximum(float x, float y) {
  return (x != x || y != y) ? __int_as_float(0x7fc00000) : fmaxf(x, y);
}
__device__ __forceinline__ float sf_minimum(float x, float y) {
  return (x != x || y != y) ? __int_as_float(0x7fc00000) : fminf(x, y);
}
__device__ __forceinline__ int sf_min(int a, int b) { return a < b ? a : b; }

// Sums R values over the lanes of a warp that hold the same elements and writes each element's
// sum once: lane l's v[r] belongs to first[r * step], `first` the lane's element of register 0,
// where the lanes l, l + LANES, ... (other channels) hold the same elements (LANES = 1: every lane
// holds the same elements). A transpose-reduce: at each halving of the lanes that share an
// element, a lane keeps half of its values and adds its partner's copy of that half, so the warp
// needs about R + log2(32 / (LANES R)) shuffles instead of R log2(32 / LANES), and one store
// instruction writes every element, each by one lane. The order of the additions is fixed, so
// the sums' bits do not depend on timing; ATOMIC adds them to `first`'s elements instead (other
// warps add theirs too, in any order). `store`: whether the warp writes (a warp past the last
// channel has no row); every lane must call, whatever it holds. The stores bypass L1 (__stcg):
// another kernel reads the rows. (With plain stores ptxas predicated the selective SSM's chunked
// backward differently, 96 -> 105 registers, 5 -> 4 blocks per SM.)
template <int R, int LANES, bool ATOMIC>
__device__ __forceinline__ void sf_warp_sum_lanes(float *first, long long step, const float (&v)[R], bool store) {
  float w[R];
#pragma unroll
  for (int r = 0; r < R; ++r) w[r] = v[r];
  int base = 0, count = R;  // w[i] holds the sum for register base + i
  unsigned copies = 0u;     // lane bits whose lanes end with the same sums
#pragma unroll
  for (int offset = 16; offset >= LANES; offset >>= 1) {
    const bool upper = (threadIdx.x & (unsigned)offset) != 0u;
    if (count % 2 == 0) {
      count /= 2;
#pragma unroll
      for (int i = 0; i < count; ++i) {
        const float send = upper ? w[i] : w[i + count];
        const float keep = upper ? w[i + count] : w[i];
        w[i] = keep + __shfl_xor_sync(0xffffffffu, send, offset);
      }
      base += upper ? count : 0;
    } else {
#pragma unroll
      for (int i = 0; i < count; ++i) w[i] += __shfl_xor_sync(0xffffffffu, w[i], offset);
      copies |= (unsigned)offset;
    }
  }
  if (store && (threadIdx.x & copies) == 0u) {
#pragma unroll
    for (int i = 0; i < count; ++i) {
      if (ATOMIC)
        atomicAdd(first + (long long)(base + i) * step, w[i]);
      else
        __stcg(first + (long long)(base + i) * step, w[i]);
    }
  }
}
// ---- end of prelude ----
)";
}

}  // namespace scanforge::cuda
