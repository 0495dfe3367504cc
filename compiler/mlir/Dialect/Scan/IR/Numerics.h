// Numeric facts of the language that every backend implements alike (docs/dsl.md, "What the
// numbers mean").
#pragma once

namespace scanforge::scan {

// `exp` clamps its argument to this range (float32 bounds whose exp is normal and finite), so it
// never overflows to inf nor underflows to 0; a NaN argument stays NaN. The bounds are the floats
// just inside [-126 ln 2, 128 ln 2]: the CPU backend adds k = round(x / ln 2) to the exponent of
// e^(x - k ln 2), which then stays normal (compiler/halide/Math.cpp).
constexpr float kExpArgMin = -87.33654022216796875f;
constexpr float kExpArgMax = 88.72283172607421875f;

// log(1 + x) for x in [0, 1] (softplus's log(1 + exp(-|a|))) as 2 atanh(s), s = x / (2 + x) in
// [0, 1/3]: s times a polynomial in s^2, whose coefficients (highest degree first) are these. No
// range reduction, exact as x -> 0 (2s -> x); the first omitted term, s^17 / 17, is below 3e-8 of
// the result at s = 1/3. The CPU backend and the CUDA prelude evaluate the same polynomial.
constexpr float kLog1pAtanhSeries[] = {2.0f / 15, 2.0f / 13, 2.0f / 11, 2.0f / 9,
                                       2.0f / 7,  2.0f / 5,  2.0f / 3,  2.0f};

}  // namespace scanforge::scan
