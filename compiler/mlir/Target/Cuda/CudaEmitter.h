// The CUDA backend: a printer over the compiled `scan` dialect (see docs/cuda.md for why not
// EmitC). For every forward recurrence and its generated backward it prints one self-contained
// .cu source with both strategies' kernels, and describes their launches in a JSON manifest.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "compiler/mlir/Target/Cuda/KernelSpecs.h"
#include "mlir/IR/BuiltinOps.h"

namespace scanforge::cuda {

// The kernels of every recurrence in a compiled module (forward recurrences and their backwards).
// Fails with located errors on what the backend cannot compile.
mlir::FailureOr<std::vector<RecurrenceKernels>> emitCuda(mlir::ModuleOp module);

// The package manifest of these recurrences (format in docs/cuda.md). Fails, naming them, when two
// recurrences would share a kernel name.
mlir::FailureOr<nlohmann::json> packageManifest(const std::vector<RecurrenceKernels> &recurrences,
                                                llvm::raw_ostream &errors);

}  // namespace scanforge::cuda
