// Numeric facts of the language that every backend implements alike (docs/dsl.md, "What the
// numbers mean").
#pragma once

namespace scanforge::scan {

// `exp` clamps its argument to this range (float32 bounds whose exp is normal and finite), so it
// never overflows to inf nor underflows to 0; a NaN argument stays NaN.
constexpr float kExpArgMin = -87.3365478515625f;
constexpr float kExpArgMax = 88.72283172607421875f;

}  // namespace scanforge::scan
