#include "runtime/core/ops/ActivationKernels.h"

#include <algorithm>
#include <cstring>

// One clone per instruction set on x86-64 GCC (an ifunc picks the host's at load time); elsewhere
// the baseline build of the same vector code.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SF_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SF_CLONES
#endif
#define SF_INLINE inline __attribute__((always_inline))

namespace scanforge::kernels {
namespace {

constexpr int kWidth = 16;
typedef float Floats __attribute__((vector_size(kWidth * sizeof(float))));
typedef int32_t Ints __attribute__((vector_size(kWidth * sizeof(int32_t))));

SF_INLINE Floats splat(float v) { return Floats{} + v; }

SF_INLINE Floats magnitude(Floats x) { return reinterpret_cast<Floats>(reinterpret_cast<Ints>(x) & 0x7fffffff); }

// e^x = 2^k e^r with k = round(x / ln 2), |r| <= ln(2) / 2, e^r a degree-6 polynomial (relative
// error 2e-9 before rounding), 2^k added to the exponent bits. x is clamped to [-86, 88], where
// both 2^k and the result are normal; NaN passes the clamps.
SF_INLINE Floats exponential(Floats x) {
  x = x < -86.0f ? splat(-86.0f) : x;
  x = x > 88.0f ? splat(88.0f) : x;
  constexpr float kShifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer in the low bits
  Floats shifted = x * 1.44269504f + kShifter;
  Floats k = shifted - kShifter;
  Floats r = x - k * 0.693145751953125f - k * 1.42860677e-06f;  // ln 2 in two parts: k * high is exact
  Floats p = r * 0.0013829421f + 0.008374771f;
  p = p * r + 0.04166836f;
  p = p * r + 0.16666421f;
  p = p * r + 0.4999999f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  Ints exponent = (reinterpret_cast<Ints>(shifted) - reinterpret_cast<Ints>(splat(kShifter))) << 23;
  return reinterpret_cast<Floats>(reinterpret_cast<Ints>(p) + exponent);
}

// e^(-x^2 / 2), accurate where rounding x^2 / 2 would not be (its ulp grows with x^2): x^2 = h^2 +
// (x - h)(x + h), h being x less its 12 low significand bits, so h^2 is exact and the rest below
// 2^-10 x^2; e^(-rest / 2) by its quartic. Clamped to e^-86 beyond |x| = 13 (callers zero it).
SF_INLINE Floats halfGaussian(Floats x) {
  Floats h = reinterpret_cast<Floats>(reinterpret_cast<Ints>(x) & ~0xfff);
  Floats r = 0.5f * (x - h) * (x + h);
  Floats small = 1.0f - r * (1.0f - r * (0.5f - r * (1.0f / 6 - r * (1.0f / 24))));
  return exponential(-0.5f * (h * h)) * small;
}

// Phi(x) = erfc(-x / sqrt 2) / 2, fitted against mpmath (least squares on Chebyshev nodes), with
// t = |x| / sqrt 2:
//   t <= 1:     erfc(t) of degree 10 in 2t - 1 (relative error 6e-10; erfc itself, not 1 - erf,
//               which would cancel towards t = 1 below zero);
//   1 < t < 6:  erfc(t) = e^(-t^2) e^(-q(t)), q of degree 10 in (t - 3.5) / 2.5 (absolute error
//               3e-8, erfc's relative), e^(-t^2) = halfGaussian(x) from x itself (t's rounding
//               would cost 2 t^2 ulp);
//   t >= 6:     erfc(t) = 0 (erfc(6) = 2e-17).
// Below zero Phi is erfc / 2 directly, so the negative tail keeps its relative accuracy (1 - erf
// would cancel). The pdf's exponential, shared with the backward, is `gaussian`.
SF_INLINE Floats normalCdf(Floats x, Floats gaussian) {
  Floats t = magnitude(x) * 0.70710678f;
  Floats w = 2.0f * t - 1.0f;
  Floats near = w * 1.2926314e-06f + 3.632471e-06f;
  near = near * w + -3.884055e-05f;
  near = near * w + -4.166671e-05f;
  near = near * w + 0.0007816023f;
  near = near * w + -0.0002290786f;
  near = near * w + -0.011442385f;
  near = near * w + 0.018308008f;
  near = near * w + 0.109847814f;
  near = near * w + -0.4393913f;
  near = near * w + 0.47950011f;
  Floats v = (t - 3.5f) * 0.4f;
  v = v < -1.0f ? splat(-1.0f) : v;  // keeps the unused lanes' polynomial in its range
  v = v > 1.0f ? splat(1.0f) : v;
  Floats q = v * -5.7536603e-05f + 0.00031894594f;
  q = q * v + -0.00094388495f;
  q = q * v + 0.0023793855f;
  q = q * v + -0.005923994f;
  q = q * v + 0.014378113f;
  q = q * v + -0.034135915f;
  q = q * v + 0.08165253f;
  q = q * v + -0.20779273f;
  q = q * v + 0.6652489f;
  q = q * v + 1.8624374f;
  Floats far = gaussian * exponential(-q);
  far = t < 6.0f ? far : splat(0.0f);
  Floats half = 0.5f * (t <= 1.0f ? near : far);
  return x < 0.0f ? half : 1.0f - half;
}

SF_INLINE Floats load(const float *p) {
  Floats v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

SF_INLINE void store(float *p, Floats v) { std::memcpy(p, &v, sizeof v); }

// The last partial vector of n elements starting at i, zero-padded.
SF_INLINE Floats loadRest(const float *p, int64_t i, int64_t n) {
  float padded[kWidth] = {};
  std::copy(p + i, p + n, padded);
  return load(padded);
}

SF_INLINE void storeRest(float *p, int64_t i, int64_t n, Floats v) {
  float result[kWidth];
  store(result, v);
  std::copy(result, result + (n - i), p + i);
}

SF_INLINE Floats gelu(Floats x) { return x * normalCdf(x, halfGaussian(x)); }

// Phi(x) + x phi(x); x phi(x) is 0 where e^(-x^2 / 2) is below 1e-37 (|x| > 13, inf included).
SF_INLINE Floats geluSlope(Floats x) {
  Floats gaussian = halfGaussian(x);
  Floats term = x * (0.39894228f * gaussian);
  term = x * x > 172.0f ? splat(0.0f) : term;
  return normalCdf(x, gaussian) + term;
}

}  // namespace

// No lambdas below: a lambda is a function of its own, compiled for the baseline, not the clone.
SF_CLONES void geluForward(const float *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + kWidth <= n; i += kWidth) store(y + i, gelu(load(x + i)));
  if (i < n) storeRest(y, i, n, gelu(loadRest(x, i, n)));
}

SF_CLONES void geluBackward(const float *g, const float *x, float *dx, int64_t n) {
  int64_t i = 0;
  for (; i + kWidth <= n; i += kWidth) store(dx + i, load(g + i) * geluSlope(load(x + i)));
  if (i < n) storeRest(dx, i, n, loadRest(g, i, n) * geluSlope(loadRest(x, i, n)));
}

}  // namespace scanforge::kernels
