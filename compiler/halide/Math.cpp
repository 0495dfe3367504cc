#include "compiler/halide/Math.h"

#include <bit>
#include <cmath>
#include <iterator>
#include <vector>

#include "compiler/mlir/Dialect/Scan/IR/Numerics.h"

namespace scanforge::cpu {

using Halide::Expr;

namespace {
// ln 2 split so that k * kLn2High is exact for |k| <= 2^8 (Cody and Waite).
constexpr float kLn2High = 0.693145751953125f, kLn2Low = 1.428606765330187045e-06f;
constexpr float kLog2E = 1.44269504088896341f;
// 1.5 * 2^23: adding it rounds |y| < 2^22 to an integer, which then sits in the low bits of the sum.
constexpr float kShift = 12582912.0f;
static_assert((std::bit_cast<int>(kShift) & 0x1ff) == 0, "k + 1.5 * 2^23 keeps k mod 2^9 in its low bits");

Expr horner(Expr x, const std::vector<float> &coefficients) {  // highest degree first
  Expr p;
  for (float c : coefficients) p = p.defined() ? p * x + c : Expr(c);
  return p;
}
// Classification on the bits: Halide compiles float comparisons assuming finite, non-NaN values.
Expr magnitudeBits(Expr x) { return Halide::reinterpret<int>(x) & 0x7fffffff; }
Expr isNan(Expr x) { return magnitudeBits(x) > 0x7f800000; }

// x = k ln 2 + r with k = round(x / ln 2) and |r| <= ln2 / 2; returns e^r and sets kBits to the
// bits of k + 1.5 * 2^23, whose low 9 bits are k mod 2^9 (scaleByTwoTo reads them without a conversion).
// The rounding adds and subtracts 1.5 * 2^23 (Halide lowers floor and round of 16-lane vectors to
// two 8-lane AVX instructions and the moves between them); strict, or the simplifier would cancel
// the two.
Expr expOfReduced(Expr x, Expr &kBits) {
  Expr shifted = Halide::strict_float(x * kLog2E + kShift);
  Expr k = Halide::strict_float(shifted - kShift);
  kBits = Halide::reinterpret<int>(shifted);
  // Strict: Halide would otherwise fold the two products into one and lose the split's precision
  // (4.5 ulp at |x| ~ 80).
  Expr r = Halide::strict_float((x - k * kLn2High) - k * kLn2Low);
  // e^r = 1 + r + r^2 Q(r), Q the minimax polynomial of degree 4 for the relative error on
  // [-ln2/2, ln2/2] (Lawson's algorithm on 20000 points): 3.1e-9 relative (0.05 ulp), one degree
  // below the Taylor series of the same accuracy.
  return horner(r, {1.38146142e-3f, 8.36871011e-3f, 4.16683874e-2f, 1.66665207e-1f, 4.99999935e-1f, 1.0f, 1.0f});
}
// p 2^k for p = e^r (r as expOfReduced leaves it) and k from any integer whose low 9 bits are k's
// (expOfReduced's bits, or k): k added to p's exponent field, which the shift and the unsigned
// wrap-around leave as k mod 2^9 there. Exact wherever the result is normal: p's biased exponent is
// 126 (p < 1) or 127, so k may run from -126 where p >= 1 (r >= 0) to 128 where p < 1 (r < 0) --
// the whole range of exp's clamped argument (Numerics.h), with no multiply and no second factor.
Expr scaleByTwoTo(Expr p, Expr kBits) {
  Expr bits = Halide::reinterpret<uint32_t>(kBits);
  return Halide::reinterpret<float>(Halide::reinterpret<uint32_t>(p) + (bits << 23));
}
}  // namespace

Expr exp(Expr x) {
  // k runs from -126 (at kExpArgMin, above -126 ln 2: r >= 0) to 128 (at kExpArgMax, below
  // 128 ln 2: r < 0).
  Expr kBits, p = expOfReduced(Halide::clamp(x, scan::kExpArgMin, scan::kExpArgMax), kBits);
  return Halide::select(isNan(x), x, scaleByTwoTo(p, kBits));
}

Expr expMinusMagnitude(Expr y) {
  // -|y| by setting the sign bit, so that a NaN is one too and its bits, as unsigned, are above
  // -inf's. (A NaN's selection stays a comparison of integers: with Halide::is_nan, LLVM's
  // no-NaN flags let it drop the select.)
  Expr bits = Halide::reinterpret<uint32_t>(y) | Halide::Expr(0x80000000u);
  Expr x = Halide::reinterpret<float>(bits);
  Expr kBits, p = expOfReduced(Halide::max(x, scan::kExpArgMin), kBits);
  return Halide::select(bits > Halide::Expr(0xff800000u), x, scaleByTwoTo(p, kBits));
}

Expr sigmoid(Expr x, bool negated) {
  // e = exp(-|x|) in (0, 1] never overflows; sigmoid(|x|) = 1 / (1 + e), sigmoid(-|x|) = e / (1 + e):
  // one quotient whose numerator is selected, rounded once (e * (1 / (1 + e)) rounds twice: 2.69
  // against 2.40 ulp at most). sigmoid(x) and sigmoid(-x) build the same e, computed once.
  Expr e = cpu::expMinusMagnitude(x);
  Expr positive = negated ? x <= 0.0f : x >= 0.0f;
  return Halide::select(positive, 1.0f, e) / (1.0f + e);
}

Expr softplusDifferenceScale(Expr a, Expr b) { return Halide::max(b, 0.0f) - Halide::max(a, 0.0f); }

Expr sigmoidOfSoftplusDifference(Expr a, Expr b, Expr ea, Expr eb, Expr ed) {
  // 1 + e^a = e^max(a, 0) (1 + exp(-|a|)), likewise for b: with d = max(b, 0) - max(a, 0), the
  // quotient is pa / (pa + pb e^d), pa = 1 + exp(-|a|) and pb = 1 + exp(-|b|) in [1, 2]; the larger
  // scale divides out, leaving exp(-|d|) <= 1 on the smaller side. A NaN in a or b reaches pa or pb.
  Expr pa = 1.0f + ea, pb = 1.0f + eb;
  Expr bLarger = softplusDifferenceScale(a, b) > 0.0f;
  Expr num = Halide::select(bLarger, pa * ed, pa);
  return num / (num + Halide::select(bLarger, pb, pb * ed));
}

Expr log(Expr x) {
  // x = m 2^e with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172.
  Expr subnormal = x < 1.17549435e-38f;
  Expr scaled = Halide::select(subnormal, x * 8388608.0f, x);  // 2^23
  Expr bits = Halide::reinterpret<int>(scaled);
  Expr e = (bits >> 23) - Halide::select(subnormal, 150, 127);
  Expr m = Halide::reinterpret<float>((bits & 0x7fffff) | 0x3f800000);
  Expr high = m > 1.41421356f;
  m = Halide::select(high, m * 0.5f, m);
  Expr ef = Halide::cast<float>(e + Halide::select(high, 1, 0));
  Expr s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
  // 2 atanh(s) / s = 2 (1 + s^2/3 + s^4/5 + ...): the first omitted term is below 2e-11.
  Expr logm = s * horner(s2, {2.0f / 13, 2.0f / 11, 2.0f / 9, 2.0f / 7, 2.0f / 5, 2.0f / 3, 2.0f});
  Expr result = ef * kLn2High + (ef * kLn2Low + logm);
  Expr xbits = Halide::reinterpret<int>(x);  // sign bit set: negative (or -0, -NaN)
  const float inf = INFINITY, nan = NAN;
  return Halide::select(magnitudeBits(x) == 0, -inf, xbits < 0 || isNan(x), nan, xbits == 0x7f800000, inf, result);
}

Expr log1p(Expr x) {
  // One division and the shared polynomial (Numerics.h).
  Expr s = x / (2.0f + x);
  return s * horner(s * s, {std::begin(scan::kLog1pAtanhSeries), std::end(scan::kLog1pAtanhSeries)});
}

}  // namespace scanforge::cpu
