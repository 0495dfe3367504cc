// The size formulas of a kernel-package manifest: non-negative integers, variables ($B, $T, $L,
// $NC, $LANES and dimension names), + - * / (integer division), parentheses, cdiv(a, b) (division
// rounding up) and log2(a) (rounded up). Evaluated with overflow checks.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace scanforge::cuda {

using Variables = std::map<std::string, int64_t>;

// Throws CudaError naming the formula on a syntax error, an unknown variable, division by zero or
// overflow.
int64_t evaluate(const std::string &formula, const Variables &variables);

}  // namespace scanforge::cuda
