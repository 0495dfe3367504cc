// The CUDA backend: a printer over the compiled `scan` dialect (see docs/cuda.md for why not
// EmitC). For every forward recurrence and its generated backward it prints one self-contained
// .cu source with both strategies' kernels, and describes their launches (runtime/cuda/PackageFormat.h).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/AnalysisManager.h"
#include "runtime/cuda/KernelPackage.h"
#include "runtime/cuda/PackageFormat.h"

namespace scanforge::cuda {

// The kernels of every recurrence in a compiled module (forward recurrences and their backwards),
// from the dialect's analyses, which `analyses` (a manager of `module`) caches. Fails with located
// errors on what the backend cannot compile.
mlir::FailureOr<std::vector<RecurrenceDesc>> emitCuda(mlir::ModuleOp module, mlir::AnalysisManager analyses);

// The package manifest of these recurrences. Fails, writing a one-line message naming them to
// `errors`, when two recurrences would share a kernel file.
mlir::FailureOr<nlohmann::json> packageManifest(const std::vector<RecurrenceDesc> &recurrences,
                                                llvm::raw_ostream &errors);

// The package of these recurrences in memory, as `scanc --emit-package` would write it and the
// runtime load it; fails as packageManifest does.
mlir::FailureOr<KernelPackage> kernelPackage(const std::vector<RecurrenceDesc> &recurrences, llvm::raw_ostream &errors);

}  // namespace scanforge::cuda
