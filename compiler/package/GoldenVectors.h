// Golden test vectors for a kernel package: random inputs (never zero) at a shape, rounded to
// their storage types, with the float64 reference interpreter's outputs, final states and
// gradients. Read back by runtime/cuda/Goldens.h (format in docs/cuda.md).
#pragma once

#include <nlohmann/json.hpp>

#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h"
#include "mlir/Pass/AnalysisManager.h"
#include "runtime/cuda/RecurrenceRunner.h"

namespace scanforge::package {

// Relative error bounds the goldens state: float32-level for f32 tensors, one bf16 rounding
// (2^-8, with headroom) for bf16 tensors.
constexpr double kGoldenF32Tolerance = 1e-5;
constexpr double kGoldenBf16Tolerance = 1e-2;

// Two small odd shapes: channel dimensions of 3 and then 33 (a warp and one more), register
// dimensions of 3 and 2, T = 37 and 70 (not multiples of a chunk), B = 2 and 1.
std::vector<cuda::Shape> goldenShapes(const std::vector<std::string> &channelDims,
                                      const std::vector<std::string> &registerDims);

// The golden of `forward` and its backward (may be null) at `shape`, with ports from the analyses
// `analyses` (a manager of their module) caches. Tensors are keyed by the package's buffer names.
// Without `withInitial`, the states start at zero and the final states carry no gradient (the
// kernels get null pointers).
nlohmann::json makeGolden(scan::RecurrenceOp forward, scan::RecurrenceOp backward, mlir::AnalysisManager analyses,
                          const cuda::Shape &shape, uint32_t seed, bool withInitial = true);

}  // namespace scanforge::package
