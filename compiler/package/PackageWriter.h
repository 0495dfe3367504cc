// Writes a CUDA kernel package — every recurrence's generated sources, the manifest
// (runtime/cuda/PackageFormat.h) and golden test vectors from the float64 reference — for a GPU
// machine that has the runtime but no compiler (docs/cuda.md).
#pragma once

#include <string>
#include <vector>

#include <stdexcept>

#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h"
#include "mlir/Pass/AnalysisManager.h"
#include "runtime/cuda/PackageFormat.h"

namespace scanforge::package {

// The package cannot be made as asked: two recurrences would share a kernel file, or a file
// cannot be written. what() says which.
struct PackageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The kernels of one compiled module, with the module and the manager of its analyses.
struct ModuleKernels {
  mlir::ModuleOp module;
  mlir::AnalysisManager analyses;
  const std::vector<cuda::RecurrenceDesc> *kernels;
};

// Writes the package of these modules to `dir` and returns a one-line summary. Throws
// PackageError; std::logic_error when the reference interpreter fails (a bug).
std::string writePackage(const std::string &dir, const std::vector<ModuleKernels> &modules);

}  // namespace scanforge::package
