// The standard compilation pipeline from lowered DSL to forward + backward recurrences in affine,
// simplified form: canonicalize, cse, extract-affine, autodiff, extract-affine, simplify,
// canonicalize, cse.
#pragma once

#include "mlir/Pass/PassManager.h"

namespace scanforge::scan {

void buildCompilePipeline(mlir::OpPassManager &pm);

// Registers the scan passes and the pipeline (as --scan-compile) for command-line drivers.
void registerScanPassesAndPipeline();

}  // namespace scanforge::scan
