// The standard compilation pipeline from lowered DSL to forward + backward recurrences in affine,
// simplified form: canonicalize, cse, extract-affine, autodiff, extract-affine, simplify,
// canonicalize, cse. With `transitions`, each forward recurrence is replaced by its slice
// transition (--scan-transition, after the first extract-affine) before its backward is generated.
#pragma once

#include "mlir/Pass/PassManager.h"

namespace scanforge::scan {

void buildCompilePipeline(mlir::OpPassManager &pm, bool transitions = false);

// Registers the scan passes and the pipeline (as --scan-compile) for command-line drivers.
void registerScanPassesAndPipeline();

}  // namespace scanforge::scan
